from pathlib import Path

import numpy as np
import pytest
import torch
import transformers

from semsearch.encoding import Encoder, read_model_defaults, resolve_model_path
from semsearch.encoding.cache import ENCODING_CACHE_ENV
from semsearch.errors import ModelError
from semsearch.settings import Pooling


@pytest.fixture(autouse=True)
def no_encoding_cache(monkeypatch):
    """These tests are of the model itself: every vector here is encoded (the suite's cache, conftest, is off)."""
    monkeypatch.delenv(ENCODING_CACHE_ENV, raising=False)


TEXTS = [
    "A man is playing a guitar.",
    "short",
    "The quick brown fox jumps over the lazy dog near the river bank.",
]


def reference(model_dir, texts, pooling):
    """Pooling written out directly from the definitions, one text at a time (no padding involved)."""
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(model_dir))
    model = transformers.AutoModel.from_pretrained(str(model_dir)).eval()
    out = []
    with torch.inference_mode():
        for text in texts:
            inputs = tokenizer(text, return_tensors="pt")
            result = model(**inputs, output_hidden_states=True)
            if pooling == "cls":
                out.append(result.last_hidden_state[0, 0])
            elif pooling == "mean":
                out.append(result.last_hidden_state[0].mean(0))
            else:
                out.append(((result.hidden_states[1] + result.hidden_states[-1]) / 2)[0].mean(0))
    return torch.stack(out).numpy()


def test_bundled_model_defaults_come_from_its_sentence_transformers_config():
    defaults = read_model_defaults(resolve_model_path(None))
    assert defaults.pooling is Pooling.MEAN
    assert defaults.max_length == 256
    assert defaults.normalize is True
    assert defaults.dim == 384


def test_bundled_model_mean_pooling_matches_the_definition():
    encoder = Encoder()
    got = encoder.encode(TEXTS)
    want = reference(encoder.path, TEXTS, "mean")
    want /= np.linalg.norm(want, axis=1, keepdims=True)
    np.testing.assert_allclose(got, want, atol=2e-5)


@pytest.mark.parametrize("backend", ["onnx", "torch"])
@pytest.mark.parametrize("pooling", ["mean", "cls", "first-last-avg"])
def test_poolings_on_a_raw_bert_under_padding(tiny_bert, pooling, backend):
    encoder = Encoder(tiny_bert, pooling=pooling, batch_size=3, backend=backend)  # one padded batch
    assert encoder.normalize is False and encoder.max_length == 128
    np.testing.assert_allclose(encoder.encode(TEXTS), reference(tiny_bert, TEXTS, pooling), atol=1e-5)


def test_onnx_graph_is_exported_once_per_settings_and_again_for_a_changed_model(tiny_bert, tmp_path):
    import os
    import shutil

    from semsearch.encoding import graph_path

    model = shutil.copytree(tiny_bert, tmp_path / "model")
    first = Encoder(model).load()
    graph = first.graph_path
    assert graph.is_file() and graph.parent.parent == Path(os.environ["SEMSEARCH_CACHE"])
    written = graph.stat().st_mtime_ns
    assert Encoder(model).load().graph_path == graph and graph.stat().st_mtime_ns == written  # reused
    assert Encoder(model, pooling="cls").load().graph_path != graph
    assert Encoder(model, backend="torch").load().graph_path is None
    weights = model / "model.safetensors"
    os.utime(weights, ns=(written, written + 10**9))  # the model changed in place
    assert graph_path(model, "mean", False, "none") != graph


def test_a_query_process_on_the_onnx_backend_never_imports_torch(tmp_path):
    """The CLI's query starts in about a second because ONNX Runtime and the tokenizers library are all it
    loads; torch (several seconds) only comes in for exporting, or for the torch backend."""
    import subprocess
    import sys

    from semsearch import Index

    with Index.create(tmp_path / "index", transform="none") as index:
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
    script = (
        "import sys; from semsearch import Index\n"
        f"index = Index.open({str(tmp_path / 'index')!r})\n"
        "print(index.search('a guitar player', k=1)[0].id, 'torch' in sys.modules)"
    )
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert run.stdout.split() == ["0", "False"]
    assert "onnxruntime" not in run.stderr  # its graph loads without a warning (e.g. an unused initializer)


def test_length_sorted_batches_come_back_in_input_order():
    encoder = Encoder(batch_size=2)
    texts = TEXTS * 3 + ["one more sentence about nothing in particular"]
    batched = encoder.encode(texts)
    single = np.stack([encoder.encode([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=2e-5)
    assert encoder.encode([]).shape == (0, 384)


def test_token_budget_batches_give_the_same_vectors(monkeypatch):
    """Without a batch size, batches fill a token budget: many short texts share one, long ones do not."""
    import semsearch.encoding.encoder as module

    monkeypatch.setattr(module, "TOKEN_BUDGET", 60)  # small, so these texts make several batches
    encoder = Encoder()
    texts = [f"sentence number {i} " + "word " * (i % 9) for i in range(40)]
    lengths = sorted(len(ids) for ids in encoder.tokenize(texts))
    batches = list(encoder.batches(np.arange(len(texts)), lengths))
    assert sum(len(b) for b in batches) == 40 and len(batches) > 3
    assert all(len(b) * lengths[b[-1]] <= 60 for b in batches)
    np.testing.assert_allclose(encoder.encode(texts), Encoder(batch_size=1).encode(texts), atol=2e-5)


def test_tight_batches_end_where_padding_would_cost_more_than_a_call():
    """A renewal's few texts (writes.recalibrate) go in tight batches: ten short texts are not padded to the
    length of three long ones, which the token budget alone would batch with them; the vectors are the same to
    fp32's jitter."""
    encoder = Encoder()
    lengths = [5] * 10 + [40] * 3
    assert [len(batch) for batch in encoder.batches(np.arange(13), lengths)] == [13]
    assert [len(batch) for batch in encoder.batches(np.arange(13), lengths, tight=True)] == [10, 3]
    texts = [f"short one {i}" for i in range(10)] + ["a much longer sentence " * 6 + str(i) for i in range(3)]
    np.testing.assert_allclose(encoder.encode(texts, tight=True), encoder.encode(texts), rtol=0, atol=1e-6)


def test_a_call_on_one_thread_gives_the_very_same_vectors():
    """A renewal of the calibration encodes on one thread (encoder.for_few_texts) and takes the other vectors
    from its cache, encoded on the encoder's threads: the two must be the same, bit for bit."""
    texts = [f"sentence number {i} " + "about the river bank " * (i % 7) for i in range(40)]
    for encoder in (Encoder(), Encoder(quantize="int8")):
        assert np.array_equal(encoder.encode(texts, threads=1), encoder.encode(texts))


def test_batches_run_side_by_side_give_the_very_same_vectors():
    """A renewal runs its batches side by side, each on one thread (encoder.for_few_texts): the vectors must be
    those of the batches one after the other, bit for bit, in input order, and the session made once."""
    from semsearch.encoding import sessions

    texts = [f"sentence number {i} " + "about the river bank " * (i % 9) for i in range(60)]
    encoder = Encoder(quantize="int8")
    alone = encoder.encode(texts, threads=1, tight=True)
    assert len(list(encoder.batches(np.arange(60), sorted(map(len, encoder.tokenize(texts))), True))) > 2
    made = [key for key in sessions._SESSIONS if key[1] == 1]
    assert np.array_equal(encoder.encode(texts, threads=1, tight=True, side_by_side=3), alone)
    assert [key for key in sessions._SESSIONS if key[1] == 1] == made


def test_tight_batches_are_small_enough_to_share_the_cores():
    """A renewal's texts go in tight batches of TIGHT_TOKENS padded tokens at most (a text longer than
    that alone), so side by side the threads end together; each text in exactly one batch, lengths ascending."""
    from semsearch.encoding.encoder import TIGHT_TOKENS

    texts = [f"sentence number {i} " + "about the river bank " * (i % 9) for i in range(60)] + [
        "a long paragraph of many words " * 12
    ] * 3
    encoder = Encoder(quantize="int8")
    lengths = [len(ids) for ids in encoder.tokenize(texts)]
    order = np.argsort(lengths, kind="stable")
    batches = list(encoder.batches(order, [lengths[i] for i in order], tight=True))
    assert sorted(np.concatenate(batches).tolist()) == list(range(len(texts)))
    for rows in batches:
        padded_tokens = len(rows) * max(lengths[i] for i in rows)
        assert padded_tokens <= TIGHT_TOKENS or len(rows) == 1
    untight = list(encoder.batches(order, [lengths[i] for i in order]))
    assert len(batches) > len(untight)


def test_pooling_changes_the_vectors():
    mean = Encoder(pooling="mean").encode(TEXTS)
    cls = Encoder(pooling="cls").encode(TEXTS)
    assert not np.allclose(mean, cls, atol=1e-2)


@pytest.mark.parametrize("make", ["missing", "empty", "no-weights"])
def test_not_a_model_directory(tmp_path, make):
    path = tmp_path / "model"
    if make != "missing":
        path.mkdir()
    if make == "no-weights":
        (path / "config.json").write_text('{"hidden_size": 8}')
    with pytest.raises(ModelError, match="model") as error:
        Encoder(path)
    # the library names the setting; the CLI prints it as its flag
    assert error.value.setting == "model" and str(error.value).startswith(f"model {path}: ")
    assert error.value.naming("--model").startswith(f"--model {path}: ")


def test_a_pooling_name_is_checked_like_the_other_settings():
    from semsearch.errors import SettingsError

    with pytest.raises(SettingsError, match="pooling must be one of mean, cls, first-last-avg, not 'max'"):
        Encoder(None, pooling="max")


@pytest.mark.parametrize("backend, closest", [("onnx", 0.97), ("torch", 0.94)])
def test_int8_quantized_encoder_stays_close_to_fp32(tmp_path, backend, closest):
    """int8 quantization changes the vectors a little, not their meaning; an index records it and refuses
    documents encoded otherwise."""
    from semsearch import Index
    from semsearch.errors import IndexStateError, SettingsError

    full = Encoder(None, backend=backend).encode(TEXTS)
    quantized = Encoder(None, quantize="int8", backend=backend).encode(TEXTS)
    cosines = np.sum(full * quantized, axis=1)  # both normalised by the model's own config
    assert cosines.min() > closest and not np.allclose(full, quantized, atol=1e-4)
    with pytest.raises(SettingsError, match="quantize must be one of none, int8"):
        Encoder(None, quantize="int4")
    with pytest.raises(SettingsError, match="backend must be one of onnx, torch"):
        Encoder(None, backend="tensorrt")
    if backend == "torch":
        return
    with Index.create(tmp_path / "int8", quantize="int8", transform="none") as index:
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
        assert index.info()["quantize"] == "int8"
        assert index.search(TEXTS[2], k=1)[0].id == "2"
    with pytest.raises(IndexStateError, match=r"quantize int8 \(asked none\)"):
        Index.open_or_create(tmp_path / "int8", quantize="none")
    with pytest.raises(IndexStateError, match=r"backend onnx \(asked torch\)"):
        Index.open_or_create(tmp_path / "int8", backend="torch")


def test_an_int8_vector_depends_on_its_text_alone_not_on_its_batch(tmp_path):
    """Issue 11: with ONNX Runtime's dynamic quantization (one activation scale per batch) a text's vector moved
    by up to 0.04 with the texts batched with it, so ingests differed by batch size and a query equal to a
    document's text scored 0.98. Per-row int8 gives the same vector alone, beside a long text and in a batch of
    64 (to fp32's own jitter, 1.5e-7); a new index records the method, one from before keeps dynamic."""
    import json

    from semsearch import Index

    long_text = "word " * 300
    fillers = [f"filler sentence number {i} " + "about nothing " * (i % 9) for i in range(61)]
    encoder = Encoder(quantize="int8")  # the default int8: per row
    alone = np.stack([encoder.encode([text])[0] for text in TEXTS])
    beside_long = np.stack([encoder.encode([text, long_text])[0] for text in TEXTS])
    in_64 = Encoder(quantize="int8", batch_size=64).encode(TEXTS + fillers)[: len(TEXTS)]
    np.testing.assert_allclose(beside_long, alone, rtol=0, atol=1e-6)
    np.testing.assert_allclose(in_64, alone, rtol=0, atol=1e-6)
    with Index.create(tmp_path / "index", transform="none") as index:  # the defaults: onnx, int8
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
        assert (index.info()["quantize"], index.settings.int8_method) == ("int8", "per-row")
        assert index.search(TEXTS[2], k=1)[0].score == pytest.approx(1.0, abs=1e-5)
    manifest = tmp_path / "index" / "manifest.json"
    data = json.loads(manifest.read_text())
    assert data["int8_method"] == "per-row"
    del data["int8_method"]  # as the previous release wrote it
    manifest.write_text(json.dumps(data))
    with Index.open(tmp_path / "index") as index:
        assert index.encoder.int8_method == "dynamic"


def test_the_backends_give_the_same_vectors_and_an_index_keeps_its_own(tmp_path):
    from semsearch import Index

    texts = TEXTS * 5 + ["word " * 300]  # several batches, and one text cut at max_length
    onnx = Encoder(None, backend="onnx").encode(texts)
    torch_vectors = Encoder(None, backend="torch").encode(texts)
    np.testing.assert_allclose(onnx, torch_vectors, atol=2e-5)
    with Index.create(tmp_path / "torch", transform="none", backend="torch") as index:
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
        assert index.info()["backend"] == "torch" and index.encoder.backend == "torch"
    with Index.open(tmp_path / "torch") as index:
        assert index.encoder.backend == "torch" and index.search(TEXTS[0], k=1)[0].id == "0"


def test_a_model_the_export_cannot_reproduce_falls_back_to_torch(tiny_bert, tmp_path, monkeypatch, caplog):
    """The exported graph is checked against torch; one that disagrees is refused: an explicit onnx backend
    fails naming the way out, the default falls back to torch with a warning and records it."""
    import shutil

    import semsearch.encoding.onnx_backend as onnx_backend
    from semsearch import Index
    from semsearch.encoding import ExportError

    model = shutil.copytree(tiny_bert, tmp_path / "model")  # a new path: no cached graph
    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path / "cache"))  # its own: other workers export beside
    monkeypatch.setattr(onnx_backend, "AGREEMENT", -1.0)  # no graph can agree this closely
    with pytest.raises(ExportError, match="does not encode as the model does.*use --backend torch"):
        Index.create(tmp_path / "explicit", model=model, backend="onnx")
    assert not (tmp_path / "explicit").exists()
    with Index.create(tmp_path / "default", model=model, transform="none") as index:
        assert index.info()["backend"] == "torch" and "encoding with torch instead" in caplog.text
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
        assert index.search(TEXTS[1], k=1)[0].id == "1"
    cache = onnx_backend.graph_path(model, "mean", False, "int8").parent
    assert all(path.suffix == ".onnx" for path in cache.iterdir())  # a failed export leaves nothing behind


def test_an_unwritable_cache_is_a_clear_error_or_the_torch_backend(tiny_bert, tmp_path, monkeypatch, caplog):
    from semsearch import Index
    from semsearch.encoding import ExportError

    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("SEMSEARCH_CACHE", str(blocker / "cache"))  # cannot be made, even by root
    with pytest.raises(ExportError, match="set SEMSEARCH_CACHE to a writable directory"):
        Encoder(tiny_bert).load()
    with Index.create(tmp_path / "index", model=tiny_bert, transform="none") as index:
        assert index.info()["backend"] == "torch" and "encoding with torch instead" in caplog.text


def test_an_int8_export_keeps_the_fp32_graph_for_the_fidelity_check(tiny_bert, tmp_path, monkeypatch):
    from semsearch.encoding import graph_path

    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path / "cache"))
    Encoder(tiny_bert, quantize="int8").load()
    assert graph_path(tiny_bert, "mean", False, "int8").is_file()
    assert graph_path(tiny_bert, "mean", False, "none").is_file()
    graphs = [
        p for p in (tmp_path / "cache" / "onnx").iterdir() if ".ort-" not in p.name
    ]  # not optimized copies
    assert sorted(p.suffix for p in graphs) == [".onnx", ".onnx"]


def test_a_new_session_starts_from_the_optimized_copy_and_encodes_the_same(tiny_bert, tmp_path, monkeypatch):
    """The first session of a graph saves its portable optimizations beside it; later sessions (new processes)
    start from that copy, and a damaged copy is passed over for the graph itself: the vectors never change."""
    import onnxruntime

    from semsearch.encoding import graph_path, sessions

    monkeypatch.setenv("SEMSEARCH_CACHE", str(tmp_path / "cache"))
    graph = graph_path(tiny_bert, "mean", False, "int8")
    first = Encoder(tiny_bert, quantize="int8").encode(TEXTS)
    optimized = sessions.optimized_path(graph, onnxruntime.__version__)
    assert optimized.is_file() and optimized.read_bytes() != graph.read_bytes()
    # its weights in a file beside it, which a session maps
    (weights,) = optimized.parent.glob(f"{optimized.name}.*.{sessions.WEIGHTS}")
    assert weights.stat().st_size > optimized.stat().st_size
    sessions.release(str(graph))  # as a new process: no session held
    np.testing.assert_array_equal(Encoder(tiny_bert, quantize="int8").encode(TEXTS), first)
    weights.write_bytes(b"cut short")  # the copy's weights damaged: passed over, and saved again
    sessions.release(str(graph))
    np.testing.assert_array_equal(Encoder(tiny_bert, quantize="int8").encode(TEXTS), first)
    assert not weights.exists() and len(list(optimized.parent.glob(f"*.{sessions.WEIGHTS}"))) == 1
    sessions.release(str(graph))
    optimized.write_bytes(b"not a graph")
    sessions.release(str(graph))
    np.testing.assert_array_equal(Encoder(tiny_bert, quantize="int8").encode(TEXTS), first)


def test_int8_quantization_drops_only_the_pre_processing_advice(tiny_bert, tmp_path):
    """ONNX Runtime's quantize_dynamic (the int8 of indexes made before per-row) advises pre-processing through
    the root logger itself: that one message is dropped during the call, other messages are not, and the
    process's logging is left as it was (no handler or filter added; run in a fresh process, as pytest gives
    the root logger handlers)."""
    import subprocess
    import sys

    from semsearch.encoding import graph_path

    Encoder(tiny_bert).load()
    fp32 = graph_path(tiny_bert, "mean", False, "none")
    script = (
        "import logging, sys\n"
        "from pathlib import Path\n"
        "from semsearch.encoding.backend import Int8Method\n"
        "from semsearch.encoding.onnx_backend import PREPROCESS_ADVICE, _dropping_root_message, _quantize\n"
        "_quantize(Path(sys.argv[1]), Path(sys.argv[2]), Int8Method.DYNAMIC)\n"
        "with _dropping_root_message(PREPROCESS_ADVICE):\n"
        "    logging.warning('another warning')\n"
        "print(logging.getLogger().handlers, logging.getLogger().filters)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script, str(fp32), str(tmp_path / "int8.onnx")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert (tmp_path / "int8.onnx").is_file()
    assert "pre-processing" not in run.stderr and "another warning" in run.stderr
    assert run.stdout.split() == ["[]", "[]"]


def test_importing_the_package_sets_no_environment_variables():
    import subprocess
    import sys

    script = (
        "import os; before = dict(os.environ); import semsearch.encoding; print(dict(os.environ) == before)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True"]


def test_an_index_from_before_the_onnx_backend_keeps_encoding_with_torch(tmp_path):
    """Manifests written before `backend` existed were encoded by torch: they still are, so their stored
    vectors and new queries come from the same encoder."""
    import json

    from semsearch import Index

    with Index.create(tmp_path / "old", transform="none", backend="torch", quantize="none") as index:
        index.add([{"id": str(i), "text": t} for i, t in enumerate(TEXTS)])
    manifest = tmp_path / "old" / "manifest.json"
    data = json.loads(manifest.read_text())
    del data["backend"], data["quantize_fidelity"]
    manifest.write_text(json.dumps(data))
    with Index.open(tmp_path / "old") as index:
        assert index.encoder.backend == "torch" and index.info()["backend"] == "torch"
        assert [h.id for h in index.search(TEXTS[2], k=3)][0] == "2"


def test_a_cached_vector_is_the_one_the_model_gives_and_other_settings_miss(tmp_path, monkeypatch):
    """The encoding cache (SEMSEARCH_ENCODING_CACHE) gives what the model gives each text (int8 per row and
    fp32 kept apart), in input order with hits and misses mixed; a damaged file is encoded again."""
    texts = TEXTS + [f"cached sentence number {i} " + "about caching " * (i % 7) for i in range(20)]
    int8, fp32 = Encoder(quantize="int8").encode(texts), Encoder(quantize="none").encode(texts)  # no cache
    monkeypatch.setenv(ENCODING_CACHE_ENV, str(tmp_path / "cache"))
    Encoder(quantize="int8").encode(texts[::3])  # a third kept, encoded in their own batch
    counted = []
    mixed = Encoder(quantize="int8").encode(texts, progress=counted.append)
    np.testing.assert_allclose(mixed, int8, rtol=0, atol=1e-5)
    assert sum(counted) == len(texts) and counted[0] == len(texts[::3])  # the hits, then the batches encoded
    np.testing.assert_allclose(Encoder(quantize="none").encode(texts), fp32, rtol=0, atol=1e-5)
    assert np.abs(int8 - fp32).max() > 1e-3  # the two settings' vectors differ, so neither read the other's
    files = sorted((tmp_path / "cache").rglob("*"))
    kept = [path for path in files if path.is_file()]
    assert len(kept) == 2 * len(texts)
    for path in kept:  # damaged: a byte changed, the size kept
        data = bytearray(path.read_bytes())
        data[0] ^= 0xFF
        path.write_bytes(bytes(data))
    np.testing.assert_allclose(Encoder(quantize="int8").encode(texts), int8, rtol=0, atol=1e-5)


def test_cutting_texts_reads_the_tokenizer_once_and_ids_match_transformers(tmp_path):
    """A renewal of the calibration only cuts passages: it reads one copy of tokenizer.json, not two; the
    truncating copy, read again when ids are asked, gives transformers' ids; a broken file is the model's
    error when the tokenizer is made (before anything is written)."""
    from semsearch.encoding.tokenizer import Tokenizer

    path = resolve_model_path(None)
    tokenizer = Tokenizer(path, 16)
    text = "Whitening makes the vectors isotropic, " * 8
    spans = tokenizer.spans([text])[0]
    assert tokenizer.special_tokens == 2 and len(spans) > 16
    assert "_fast" not in tokenizer.__dict__  # cutting never made the truncating copy
    reference = transformers.AutoTokenizer.from_pretrained(str(path))
    assert tokenizer([text]) == [reference(text, truncation=True, max_length=16)["input_ids"]]
    assert tokenizer.pad_id == reference.pad_token_id
    broken = tmp_path / "model"
    broken.mkdir()
    (broken / "tokenizer.json").write_text("{not json")
    with pytest.raises(ModelError, match="cannot load the tokenizer"):
        Tokenizer(broken, 16)
