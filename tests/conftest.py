"""Shared fixtures: the shared data sets (skipped with a clear message when absent) and small real indexes."""

from __future__ import annotations

import contextlib
import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"


@pytest.fixture(scope="session", autouse=True)
def onnx_cache(tmp_path_factory):
    """The encoder's exported ONNX graphs go to a directory of this test run (inherited by the CLI processes
    the tests start), never to the user's cache: every run exports and checks them itself."""
    import os

    path = run_directory(tmp_path_factory) / "onnx-cache"  # the workers' exports are atomic (onnx_backend.py)
    path.mkdir(exist_ok=True)
    os.environ["SEMSEARCH_CACHE"] = str(path)
    return path


@pytest.fixture(scope="session", autouse=True)
def encoding_cache(tmp_path_factory):
    """One encoding cache for the run (SEMSEARCH_ENCODING_CACHE, encoding/cache.py), empty when it starts:
    every text is encoded by the model the first time a test (or a CLI process it starts) meets it, and the
    suite's many small indexes of the same corpora read those vectors again instead of encoding them each
    time. A text's vector does not depend on its batch, so a hit is what encoding would give (test_encoder
    checks this with the cache off)."""
    import os

    path = run_directory(tmp_path_factory) / "encodings"
    path.mkdir(exist_ok=True)
    os.environ["SEMSEARCH_ENCODING_CACHE"] = str(path)
    return path


def run_directory(tmp_path_factory) -> Path:
    """This test run's temporary directory, shared by its pytest-xdist workers (each has its own below it)."""
    import os

    own = tmp_path_factory.getbasetemp()
    return own.parent if os.environ.get("PYTEST_XDIST_WORKER") else own


def built_once(tmp_path_factory, name: str, build) -> Path:
    """The directory `build(directory)` fills, built once for the whole run: the first worker to ask builds it
    while the others wait on a lock, then all read it (tests copy what they change)."""
    import fcntl
    import shutil

    root = run_directory(tmp_path_factory)
    directory = root / f"built-{name}"
    with (root / f"built-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (directory / ".built").exists():
            shutil.rmtree(directory, ignore_errors=True)
            directory.mkdir()
            build(directory)
            (directory / ".built").touch()
    return directory


def shared_data(*parts: str) -> Path:
    """A path under ../shared/data, or skip the test saying what is missing."""
    path = DATA.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"shared data not found: {path} (tests read it from ../shared/data beside the repo)")
    return path


def sts_dev_slice(target: Path, step: int) -> Path:
    """Every `step`-th pair of STS-B dev (its genres and years are in blocks: a slice keeps their mix), written
    at `target` in the file's own format; skips when the shared data is absent."""
    lines = shared_data("stsb", "sts-dev.csv").read_text().splitlines()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("\n".join(lines[::step]) + "\n")
    return target


def write_jsonl(path: Path, records) -> Path:
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records))
    return path


@pytest.fixture(scope="session")
def scifact_subset(tmp_path_factory):
    """300 SciFact documents: those relevant to the first 40 test queries, then filler in corpus order.
    Returns (corpus path, {query id: text}, {query id: {doc id: relevance}})."""
    root = shared_data("scifact")
    rows = [line.split("\t") for line in (root / "qrels" / "test.tsv").read_text().splitlines()[1:]]
    query_ids = list(dict.fromkeys(q for q, _, _ in rows))[:40]
    wanted = {d for q, d, _ in rows if q in query_ids}
    docs, filler = [], []
    with open(root / "corpus.jsonl") as handle:
        for line in handle:
            doc = json.loads(line)
            (docs if doc["_id"] in wanted else filler).append(doc)
    docs += filler[: 300 - len(docs)]
    corpus = write_jsonl(tmp_path_factory.mktemp("scifact") / "corpus.jsonl", docs)
    queries = {}
    for line in (root / "queries.jsonl").read_text().splitlines():
        query = json.loads(line)
        if query["_id"] in query_ids:
            queries[query["_id"]] = query["text"]
    qrels: dict[str, dict[str, int]] = {}
    for q, d, score in rows:
        if q in query_ids:
            qrels.setdefault(q, {})[d] = int(score)
    return corpus, queries, qrels


def beir_directory(subset, root: Path) -> Path:
    """A BEIR directory at `root` holding a (corpus, queries, qrels) subset; its qrels have no header row (the
    loader must take the first line as data)."""
    corpus, queries, qrels = subset
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_bytes(corpus.read_bytes())
    write_jsonl(root / "queries.jsonl", [{"_id": q, "text": t} for q, t in queries.items()])
    (root / "qrels" / "test.tsv").write_text(
        "".join(f"{q}\t{d}\t{r}\n" for q, docs in qrels.items() for d, r in docs.items())
    )
    return root


# The modules that read the SciFact chain (scifact_encoded, scifact_bench_work) are one xdist group, on one
# worker (--dist loadgroup, module fixtures built once each): its 32 tests are queued third, so the chain is built
# at the run's start and no worker waits on the other's build (session 9's run: test_keyword_engine's setup
# waited ~15 s, at load 6-9, for the encoding test_index's group was doing on the other worker).
SCIFACT_GROUP = pytest.mark.xdist_group("scifact")

SCIFACT_CHUNK_TOKENS = 256
# `bench` options that encode the SciFact subset as `scifact_encoded` holds it (the default quantization, int8)
BENCH_ENCODING = ("--chunk-tokens", str(SCIFACT_CHUNK_TOKENS), "--quantize", "int8")


@pytest.fixture(scope="session")
def scifact_bench_work(scifact_subset, scifact_encoded, tmp_path_factory) -> Path:
    """A bench work directory (`--work`) holding the SciFact subset encoded as `scifact_encoded` is (int8,
    BENCH_ENCODING's 256-token passages), made once by a bench run: the bench tests copy it, and their sweeps
    reuse the encoding as a second run would. Asked for after `scifact_encoded`, so its passages' vectors are
    in the run's encoding cache (the model's vectors of the same token ids) and are not computed twice."""

    def build(directory: Path) -> None:
        from click.testing import CliRunner

        from semsearch.cli import main

        root = beir_directory(scifact_subset, directory / "scifact-mini")
        arguments = ["bench", "--beir", str(root), "--transforms", "none", "--dims", "all", *BENCH_ENCODING]
        arguments += ["--out", str(directory / "out"), "--work", str(directory / "work")]
        result = CliRunner().invoke(main, arguments)
        assert result.exit_code == 0, result.output

    return built_once(tmp_path_factory, "scifact-bench", build) / "work"


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory):
    """A small random (not fine-tuned) BERT with the bundled vocabulary and no sentence-transformers config:
    stands in for a raw BERT, which no package ships."""
    import torch
    import transformers

    from semsearch.encoding import resolve_model_path

    bundled = resolve_model_path(None)
    directory = tmp_path_factory.mktemp("tiny-bert")
    tokenizer = transformers.AutoTokenizer.from_pretrained(str(bundled), local_files_only=True)
    config = transformers.BertConfig(
        vocab_size=tokenizer.vocab_size,
        hidden_size=32,
        num_hidden_layers=3,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=128,
    )
    torch.manual_seed(0)
    transformers.BertModel(config).save_pretrained(str(directory))
    tokenizer.save_pretrained(str(directory))
    return directory


# Eight Chinese sentences a new user tried first (issue 27): two-character words, no spaces.
EIGHT = [
    "我每天早上吃一个苹果",
    "北京是中国的首都",
    "人工智能正在改变世界",
    "机器学习是人工智能的一个分支",
    "上海的房价很高",
    "苹果公司发布了新款手机",
    "今天天气很好，我们去公园散步",
    "他喜欢在周末看电影",
]

SAMPLE = REPO / "examples" / "sample.jsonl"  # committed: 300 Python docstrings (examples/README.md)


def encoded_once(corpus: Path, target: Path, **options) -> Path:
    """An index of the corpus (transform none) with metadata `year` and `kind` set to filter on: tests copy
    it with `copy_index` and refit, which equals a fresh ingest with those settings."""
    from semsearch import Index

    docs = [json.loads(line) for line in corpus.read_text().splitlines()]
    for i, doc in enumerate(docs):
        doc.update(year=2000 + i % 20, kind="even" if i % 2 == 0 else "odd")
    with_metadata = write_jsonl(target.parent / "corpus-with-metadata.jsonl", docs)
    with Index.create(target, transform="none", **options) as index:
        assert index.ingest(with_metadata).added == len(docs)
    return target


@pytest.fixture(scope="session")
def sample_encoded(tmp_path_factory):
    """The committed sample corpus, encoded once for the session (the default suite's corpus)."""
    return built_once(tmp_path_factory, "sample", lambda root: encoded_once(SAMPLE, root / "index")) / "index"


@pytest.fixture(scope="session")
def scifact_encoded(scifact_subset, tmp_path_factory):
    """The SciFact subset, encoded once for the session (for tests of retrieval quality: marked slow)."""
    # 256-token passages, as the quality figures these tests hold were measured (the default is 64 since issue 26)
    return (
        built_once(
            tmp_path_factory,
            "scifact",
            lambda root: encoded_once(scifact_subset[0], root / "scifact", chunk_tokens=SCIFACT_CHUNK_TOKENS),
        )
        / "scifact"
    )


def copy_index(source: Path, target: Path) -> Path:
    import shutil

    shutil.copytree(source, target)
    return target


@contextlib.contextmanager
def refitted_copy(source: Path, target: Path, *refit_args, **refit_options):
    """A copy of an index, refitted as asked (equal to a fresh ingest with those settings), open."""
    from semsearch import Index

    with Index.open(copy_index(source, target)) as index:
        index.refit(*refit_args, **refit_options)
        yield index


def as_kept(vectors, precision: str | None = None, transform: str = "none"):
    """Given float32 vectors as a new index keeps them (at `precision`, by default the default for an index of
    `transform`: the tests' indexes of given vectors are untransformed, float16; a transformed one int4), computed from
    the scheme docs/reference.md states, not by the engine's code: int8 divides each row by its step (its
    largest magnitude / 127, a float32), rounds to the nearest code and multiplies back, int6 / int5 / int4 the
    same with 31 / 15 / 7 for 127 (their packing into bytes changes no value); float16 rounds each component to
    half precision. Exact search ranks these rows, the vectors as kept."""
    import numpy as np

    from semsearch.ingest.creation import default_raw_precision
    from semsearch.settings import TransformKind

    rows = np.asarray(vectors, dtype=np.float32)
    precision = precision or default_raw_precision(TransformKind.parse(transform, "transform"))
    if precision == "float16":
        return rows.astype(np.float16).astype(np.float32)
    largest_code = {"int8": 127, "int6": 31, "int5": 15, "int4": 7}
    if precision in largest_code:
        step = (np.abs(rows).max(axis=1, keepdims=True) / np.float32(largest_code[precision])).astype(
            np.float32
        )
        step[step == 0] = 1
        return np.rint(rows / step) * step
    return rows


# Several semsearch commands run in turn by ONE Python process through click's own runner (what `python -m
# semsearch` calls): for checks of what commands answer, not of a process starting (every command keeps a
# real-process test elsewhere). Each extra process costs ~1 CPU-s of imports and sessions. An exception a
# command lets out is reported as its process would print it, a traceback on stderr.
_COMMANDS_SCRIPT = """
import json, sys, traceback
from click.testing import CliRunner
from semsearch.cli import main
ran = []
for arguments in json.loads(sys.argv[1]):
    result = CliRunner().invoke(main, arguments, prog_name="semsearch")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        stderr += "".join(traceback.format_exception(result.exception))
    ran.append({"returncode": result.exit_code, "stdout": result.stdout, "stderr": stderr})
print(json.dumps(ran))
"""


def command_here(*arguments) -> subprocess.CompletedProcess:
    """A semsearch command run in this process by click's runner (as a CompletedProcess, a traceback on
    stderr as a process would print it): where what is tested is the command's work, not a process."""
    import traceback

    from click.testing import CliRunner

    from semsearch.cli import main

    result = CliRunner().invoke(main, [str(a) for a in arguments], prog_name="semsearch")
    stderr = result.stderr
    if result.exception is not None and not isinstance(result.exception, SystemExit):  # what a process prints
        stderr += "".join(traceback.format_exception(result.exception))
    return subprocess.CompletedProcess(arguments, result.exit_code, result.stdout, stderr)


def commands_in_one_process(
    commands, prefix=(), env: dict | None = None, timeout: float = 600
) -> list[subprocess.CompletedProcess]:
    """Each of `commands` (a list of semsearch arguments) run in turn in one new process (after `prefix`, e.g.
    a namespace to run in), as a CompletedProcess each, of that command alone."""
    import os
    import sys

    arguments = [[str(a) for a in command] for command in commands]
    process = subprocess.run(
        [*prefix, sys.executable, "-c", _COMMANDS_SCRIPT, json.dumps(arguments)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    assert process.returncode == 0, process.stderr[-2000:]
    return [
        subprocess.CompletedProcess(command, ran["returncode"], ran["stdout"], ran["stderr"])
        for command, ran in zip(arguments, json.loads(process.stdout.splitlines()[-1]))
    ]


@contextlib.contextmanager
def served(command: list[str], env: dict[str, str] | None = None, clean_exit: bool = False):
    """A server started by `command`, which prints `serving http://127.0.0.1:PORT/` first; yields that base
    URL (without the slash), and on exit stops it (`clean_exit`: and checks it exited 0)."""
    import re
    import threading

    process = subprocess.Popen(command, env=env, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)/", line)
        assert found, line + process.stderr.read()
        threading.Thread(target=process.stderr.read, daemon=True).start()  # never a full pipe
        yield found[1]
    finally:
        process.terminate()
        code = process.wait(30)
        assert code == 0 or not clean_exit, code


def serve_command(path: Path, *options: str, env: dict[str, str] | None = None):
    """`semsearch serve --index PATH --port 0 OPTIONS` in another process (`served`), stopping cleanly."""
    import sys

    command = [sys.executable, "-m", "semsearch", "serve", "--index", str(path), "--port", "0", *options]
    return served(command, env, clean_exit=True)
