"""`semsearch export` and the ingest of an export (issue 28): the same documents, metadata, settings and
search results; with --vectors the raw vectors are taken as they are (a vector per passage), never encoded."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import SAMPLE, command_here, refitted_copy

SEMSEARCH = [sys.executable, "-m", "semsearch"]
QUERIES = ["parse a date from a string", "read a csv file", "compress data with gzip", "random numbers"]


def run(*args: str) -> subprocess.CompletedProcess:
    result = subprocess.run([*SEMSEARCH, *map(str, args)], capture_output=True, text=True, timeout=1800)
    assert result.returncode == 0, result.stderr
    return result


def here(*args) -> subprocess.CompletedProcess:
    """The command in this process (the first tests run export and ingest as processes of their own)."""
    result = command_here(*args)
    assert result.returncode == 0, result.stderr
    return result


def contents(path: Path, queries: list[str], mode: str | None = None) -> dict:
    """What an index holds and answers: settings, documents with metadata, raw vectors, top-10 per query (in
    `mode`, by default the index's)."""
    from semsearch import Index

    with Index.open(path) as index:
        pks = index.store.all_pks()
        rows = index.store.get(pks)
        documents = {row["id"]: (row["title"], row["text"], row["metadata"]) for row in rows.values()}
        raw = index.raw.read(index.store.vector_pks())
        top = [[hit.id for hit in hits] for hits in index.search_many(queries, k=10, mode=mode)]
        return {"settings": index.settings, "documents": documents, "raw": raw, "top": top}


def assert_same(a: dict, b: dict, vectors: bool = True) -> None:
    assert a["settings"] == b["settings"]
    assert a["documents"] == b["documents"]
    if vectors:
        assert np.array_equal(a["raw"], b["raw"])
    assert a["top"] == b["top"]


def test_export_with_vectors_reingests_as_the_same_index_encoding_nothing(sample_encoded, tmp_path):
    exported = tmp_path / "export.jsonl"
    result = run("export", "--index", sample_encoded, "-o", exported, "--vectors")
    assert "exported 300 documents with their vectors" in result.stderr
    lines = exported.read_text().splitlines()
    header, records = json.loads(lines[0]), [json.loads(line) for line in lines[1:]]
    assert header["semsearch_export"] == 1 and header["vectors"] and header["documents"] == 300
    assert header["settings"]["chunk_tokens"] > 0 and "model_fingerprint" in header["settings"]
    chunked = [r for r in records if isinstance(r["vector"][0], list)]
    assert chunked and all(len(r["passages"]) == len(r["vector"]) for r in chunked)
    assert all(set(r) <= {"id", "title", "text", "metadata", "vector", "passages"} for r in records)
    # one document's text changed by hand, its vector kept: the import takes the vector, encoding nothing
    edited = next(r for r in records if not isinstance(r["vector"][0], list))  # one passage: no spans to keep
    edited["text"] = "an unrelated sentence about gardening"
    exported.write_text("\n".join([lines[0], *map(json.dumps, records)]) + "\n")
    run("ingest", exported, "--index", tmp_path / "imported")
    # the edited text moves every bm25 score a little (the corpus's lengths and word counts), enough to swap
    # near ties of the hybrid ranking: the answers compared are the vectors' (dense)
    source, imported = (contents(path, QUERIES, "dense") for path in (sample_encoded, tmp_path / "imported"))
    assert imported["documents"].pop(edited["id"])[1] == "an unrelated sentence about gardening"
    source["documents"].pop(edited["id"])
    assert_same(source, imported)


def test_export_streams_to_stdout_and_gz_and_an_existing_index_keeps_its_settings(sample_encoded, tmp_path):
    plain = run("export", "--index", sample_encoded, "-q").stdout.splitlines()
    assert len(plain) == 301 and "vector" not in json.loads(plain[1])
    run("export", "--index", sample_encoded, "-o", tmp_path / "export.jsonl.gz", "-q")
    with gzip.open(tmp_path / "export.jsonl.gz", "rt") as handle:
        assert handle.read().splitlines() == plain
    # the header is no document; bad lines of an export are named like any corpus's
    broken = tmp_path / "broken.jsonl"
    broken.write_text("\n".join([plain[0], plain[1], '{"id": "x"}']) + "\n")
    result = subprocess.run(
        [*SEMSEARCH, "ingest", broken, "--index", tmp_path / "new"], capture_output=True, text=True
    )
    assert result.returncode == 1 and "line 3" in result.stderr and "'text'" in result.stderr
    assert not (tmp_path / "new").exists()


@pytest.mark.slow
def test_scifact_round_trip_with_and_without_vectors(scifact_subset, scifact_encoded, tmp_path):
    """The SciFact subset (300 documents, those relevant to 40 test queries among them, with metadata: the
    session's index of them, whitened as by default): every query's top 10."""
    queries = list(scifact_subset[1].values())
    with refitted_copy(scifact_encoded, tmp_path / "source", "whiten", 128, 0.5):
        source = contents(tmp_path / "source", queries)
    here("export", "--index", tmp_path / "source", "-o", tmp_path / "vectors.jsonl", "--vectors", "-q")
    here("ingest", tmp_path / "vectors.jsonl", "--index", tmp_path / "with-vectors", "-q")
    assert_same(source, contents(tmp_path / "with-vectors", queries))
    here("export", "--index", tmp_path / "source", "-o", tmp_path / "plain.jsonl", "-q")
    here("ingest", tmp_path / "plain.jsonl", "--index", tmp_path / "encoded-again", "-q")
    again = contents(tmp_path / "encoded-again", queries)
    assert_same(source, again, vectors=False)
    assert np.abs(source["raw"] - again["raw"]).max() < 1e-4  # the same model on the same texts


def test_an_index_without_a_model_exports_its_vectors_and_comes_back_the_same(tmp_path):
    from semsearch import Document, Index

    rng = np.random.default_rng(0)
    with Index.create(tmp_path / "source", model="none", dim=16, transform="none") as index:
        index.add(
            [
                Document(
                    id=str(i), text=f"doc {i}", metadata={"n": i}, vector=rng.normal(size=16).astype("f4")
                )
                for i in range(50)
            ]
        )
    here(
        "export", "--index", tmp_path / "source", "-o", tmp_path / "export.jsonl", "-q"
    )  # vectors: all it has
    here("ingest", tmp_path / "export.jsonl", "--index", tmp_path / "again", "-q")
    queries = rng.normal(size=(3, 16)).astype("f4")
    found = []
    for name in ("source", "again"):
        with Index.open(tmp_path / name) as index:
            assert index.settings.model == "none" and len(index) == 50
            found.append([[hit.id for hit in hits] for hits in index.search_vectors(queries, k=10)])
            found.append(index.raw.read(index.store.vector_pks()))
    assert found[0] == found[2] and np.array_equal(found[1], found[3])


def test_vectors_of_another_model_are_refused(sample_encoded, tmp_path):
    from dataclasses import replace

    from semsearch import Index
    from semsearch.errors import DataError
    from semsearch.ingest.exported import check_model, export_header

    run("export", "--index", sample_encoded, "-o", tmp_path / "export.jsonl", "--vectors", "-q")
    header = export_header(tmp_path / "export.jsonl")
    with Index.open(sample_encoded) as index:
        check_model(header, index.settings, "export.jsonl")  # the same model: taken
        other = replace(index.settings, model_name="another-model", model_fingerprint="0123456789abcdef")
    with pytest.raises(DataError, match="vectors were made by all-MiniLM-L6-v2.*another-model"):
        check_model(header, other, "export.jsonl")
    check_model({**header, "vectors": False}, other, "export.jsonl")  # texts alone: encoded by this model


def test_an_export_keeps_the_transform_its_source_fitted_before_upserts(sample_encoded, tmp_path):
    """A source whitened, then a fifth of it upserted (the upserts keep the transform: drift > 0), exported
    with its vectors: the import keeps that transform (the same arrays, read back from the header's
    safetensors) and answers every query as the source does, ids and scores; --refit always, other settings or
    an export without the transform (as written before issue 38) fit their own."""
    from dataclasses import replace

    from click.testing import CliRunner

    from semsearch import Index
    from semsearch.cli import main
    from semsearch.errors import DataError
    from semsearch.ingest.documents import Corpus, FieldNames
    from semsearch.ingest.exported import restored
    from semsearch.storage.packedarrays import read_arrays

    queries = QUERIES + [json.loads(line)["title"] for line in SAMPLE.read_text().splitlines()[::20]]
    with refitted_copy(sample_encoded, tmp_path / "source", "whiten", 16, 0.5, calibrate=False) as source:
        source.export(tmp_path / "before.jsonl", vectors=True)
        # upserts that encode nothing: 60 documents take other documents' texts, passages and vectors
        records = [json.loads(line) for line in (tmp_path / "before.jsonl").read_text().splitlines()[1:]]
        moved = [{**records[i + 150], "id": records[i]["id"]} for i in range(60)]
        upserts = tmp_path / "upserts.jsonl"
        upserts.write_text("".join(json.dumps(record) + "\n" for record in moved))
        assert source.ingest(upserts, fields=FieldNames(vector="vector")).replaced == 60
        assert source.state.drift > 0.05  # the transform is still the one fitted before the upserts
        source.export(tmp_path / "export.jsonl", vectors=True)
        expected = [[(h.id, h.score) for h in hits] for hits in source.search_many(queries, k=10, crop=0)]
        fitted = read_arrays(_generation(source.path) / "transform.safetensors")[0]

    runner = CliRunner()
    result = runner.invoke(
        main, ["ingest", str(tmp_path / "export.jsonl"), "--index", str(tmp_path / "kept")]
    )
    assert result.exit_code == 0, result.output
    assert "its transform: whiten P=0.5 to 16 dims as its source fitted it" in result.output
    with Index.open(tmp_path / "kept") as kept:
        assert kept.state.drift == pytest.approx(source.state.drift, abs=1e-9)
        for name, array in read_arrays(_generation(kept.path) / "transform.safetensors")[0].items():
            assert np.array_equal(array, fitted[name])
        for hits, wanted in zip(kept.search_many(queries, k=10, crop=0), expected):
            assert [h.id for h in hits] == [i for i, _ in wanted]
            assert [h.score for h in hits] == pytest.approx([s for _, s in wanted], abs=1e-5)
        corpus, settings = Corpus(tmp_path / "export.jsonl"), kept.settings
    assert restored(corpus, 0, settings, False, "never").parts == ("calibration", "transform")
    assert restored(corpus, 0, settings, True, "auto").parts == ("transform",)
    assert restored(corpus, 0, settings, False, "always").parts == ()  # --refit always: made again
    assert restored(corpus, 300, settings, False, "never") is None  # an index that has documents: its own
    other = replace(settings, dims_requested=32)  # fitted under other settings: the import fits its own
    assert restored(corpus, 0, other, False, "never").parts == ("calibration",)

    lines = (tmp_path / "export.jsonl").read_text().split("\n", 1)
    header = json.loads(lines[0])
    assert header["transform"]["kind"] == "whiten"
    assert list(header["transform"]["files"]) == ["transform.safetensors"]
    del header["transform"]  # as written before issue 38: read as before, the import fits its own
    (tmp_path / "old.jsonl").write_text(json.dumps(header) + "\n" + lines[1])
    assert restored(Corpus(tmp_path / "old.jsonl"), 0, settings, False, "never").parts == ("calibration",)
    header["transform"] = {"kind": "whiten", "files": {"transform.safetensors": "bm90IGEgZmlsZQ=="}}
    (tmp_path / "bad.jsonl").write_text(json.dumps(header) + "\n" + lines[1])
    with pytest.raises(
        DataError, match=r"bad.jsonl, line 1, field 'transform': its transform cannot be read"
    ):
        restored(Corpus(tmp_path / "bad.jsonl"), 0, settings, False, "never")


def _generation(path: Path) -> Path:
    return path / f"gen-{json.loads((path / 'manifest.json').read_text())['generation']:06d}"


def test_an_import_codes_its_vectors_with_the_flat_sq8_ranges_its_source_trained(tmp_path):
    """flat-sq8's ranges are trained at an index's first build and upserts after it are coded with them; an
    export carries them, so its import codes every vector as the source does and its scores from the codes are
    the source's; an export without them (written before) trains ranges on today's rows, and its do not."""
    from semsearch import Document, Index

    rng = np.random.default_rng(1)

    def documents(count: int, scale: float) -> list:
        vectors = (rng.normal(size=(count, 16)) * scale).astype("f4")
        return [Document(id=str(i), text=f"doc {i}", vector=vectors[i]) for i in range(count)]

    options = dict(model="none", dim=16, transform="whiten", dims=8, index_type="flat-sq8")
    queries = rng.normal(size=(20, 16)).astype("f4")
    with Index.create(tmp_path / "source", **options) as source:
        source.add(documents(400, 1.0))
        source.add(documents(100, 3.0))  # a fifth upserted, wider than the ranges trained before
        ranges = source.vectors.code_ranges()
        source.export(tmp_path / "export.jsonl", vectors=True)
        expected = [
            [(h.id, h.score) for h in hits] for hits in source.search_vectors(queries, k=10, rerank=0)
        ]
    lines = (tmp_path / "export.jsonl").read_text().split("\n", 1)
    header = json.loads(lines[0])
    assert header["vector_codes"] == ranges and len(ranges) == 16
    del header["vector_codes"]
    (tmp_path / "before.jsonl").write_text(json.dumps(header) + "\n" + lines[1])
    for name, same in (("export", True), ("before", False)):
        here("ingest", tmp_path / f"{name}.jsonl", "--index", tmp_path / name, "-q")
        with Index.open(tmp_path / name) as imported:
            assert (imported.vectors.code_ranges() == ranges) is same
            found = imported.search_vectors(queries, k=10, rerank=0)
            scores = [[(h.id, h.score) for h in hits] for hits in found]
            assert (scores == expected) is same


def test_an_import_makes_its_sources_hnsw_graph_again(tmp_path):
    """An hnsw graph depends on how its rows were split between adds (FAISS inserts an add's rows by level),
    not only on the rows: the index keeps its adds (a build's in BLOCK_ROWS of its live rows, whatever the raw
    segments' layout; each append's), an export carries them with the search parameters tuned for the graph,
    and its import adds its rows so: every node's neighbours the same and the same answers, after a rebuild
    (rows replaced) and appends. An export without them (written before) builds its own graph, which differs."""
    import faiss

    from semsearch import Document, Index

    rng = np.random.default_rng(2)
    vectors = rng.normal(size=(4000, 32)).astype("f4")

    def documents(ids, shift: float = 0.0) -> list:
        return [Document(id=str(i), text=f"doc {i}", vector=vectors[i] + shift) for i in ids]

    def neighbours(index) -> np.ndarray:
        held = index.vectors  # the wrapper kept while FAISS's arrays are read
        return faiss.vector_to_array(faiss.downcast_index(held.index.index).hnsw.neighbors)

    options = dict(model="none", dim=32, transform="whiten", dims=16, index_type="hnsw-sq8")
    queries = rng.normal(size=(40, 32)).astype("f4")
    with Index.create(tmp_path / "source", **options) as source:
        source.add(documents(range(3000)))
        source.add(documents(range(0, 600), 0.5))  # replaced: the graph built again over the live rows
        source.add(documents(range(3000, 3700)))  # appended: two more adds
        source.add(documents(range(3700, 3750)))
        assert source.state.graph_blocks == [[3000, 1], [700, 1], [50, 1]]
        source.export(tmp_path / "export.jsonl", vectors=True)
        expected = [
            [(h.id, h.score) for h in hits] for hits in source.search_vectors(queries, k=10, rerank=0)
        ]
        graph, params = neighbours(source), source.state.search_params
    lines = (tmp_path / "export.jsonl").read_text().split("\n", 1)
    header = json.loads(lines[0])
    assert header["graph"]["blocks"] == [[3000, 1], [700, 1], [50, 1]]
    del header["graph"]
    (tmp_path / "before.jsonl").write_text(json.dumps(header) + "\n" + lines[1])
    for name, same in (("export", True), ("before", False)):
        here("ingest", tmp_path / f"{name}.jsonl", "--index", tmp_path / name, "-q")
        with Index.open(tmp_path / name) as imported:
            assert np.array_equal(neighbours(imported), graph) is same
            if same:
                assert imported.state.search_params == params
                found = imported.search_vectors(queries, k=10, rerank=0)
                assert [[(h.id, h.score) for h in hits] for hits in found] == expected
            else:
                assert imported.state.graph_blocks == [[3750, 1]]  # its own adds: the live rows at once


@pytest.mark.parametrize("kind", ["ivf", "pq"])
def test_an_import_files_and_codes_its_rows_in_the_ivf_or_pq_cells_its_source_trained(kind, tmp_path):
    """ivf's cells (and pq's codebooks) are trained at an index's first build on its rows; upserts after it are
    filed (and coded) in them, and its search parameters stay those tuned then. An export carries both, so its
    import trains nothing: the same cells, codes and parameters, and every query the same neighbours and
    scores. An export without them (written before) trains on the rows of today: its cells differ, and so its
    parameters and the answers (here 24 and 25 of 40 queries' at ivf and pq)."""
    from dataclasses import replace

    from semsearch import Document, Index
    from semsearch.ingest.documents import Corpus
    from semsearch.ingest.exported import restored

    rng = np.random.default_rng(3)
    vectors = rng.normal(size=(2400, 32)).astype("f4")

    def documents(ids, shift: float = 0.0) -> list:
        return [Document(id=str(i), text=f"doc {i}", vector=vectors[i] + shift) for i in ids]

    options = dict(model="none", dim=32, transform="whiten", dims=16, index_type=kind)
    queries = rng.normal(size=(40, 32)).astype("f4")
    with Index.create(tmp_path / "source", **options) as source:
        source.add(documents(range(2000)))
        source.add(
            documents(range(0, 500), 1.5)
        )  # a quarter replaced, off the rows the cells were trained on
        source.add(documents(range(2000, 2400)))  # and appended
        trained, params = source.vectors.trained_lists(), source.state.search_params
        source.export(tmp_path / "export.jsonl", vectors=True)
        expected = [
            [(h.id, h.score) for h in hits] for hits in source.search_vectors(queries, k=10, rerank=0)
        ]
    assert sorted(trained) == (["centroids", "codebooks"] if kind == "pq" else ["centroids"])
    lines = (tmp_path / "export.jsonl").read_text().split("\n", 1)
    header = json.loads(lines[0])
    assert header["lists"]["centroids"]["shape"] == list(trained["centroids"].shape)
    assert header["lists"]["search_params"] == params
    del header["lists"]
    (tmp_path / "before.jsonl").write_text(json.dumps(header) + "\n" + lines[1])
    for name, same in (("export", True), ("before", False)):
        result = here("ingest", tmp_path / f"{name}.jsonl", "--index", tmp_path / name)
        assert ("and its lists: its IVF" in result.stderr) is same
        with Index.open(tmp_path / name) as imported:
            theirs = imported.vectors.trained_lists()
            assert all(np.array_equal(theirs[part], trained[part]) for part in trained) is same
            found = imported.search_vectors(queries, k=10, rerank=0)
            assert ([[(h.id, h.score) for h in hits] for hits in found] == expected) is same
            assert (imported.state.search_params == params) is same
            settings = imported.settings
    # another kind of index asked of the import: built as its own
    corpus = Corpus(tmp_path / "export.jsonl")
    assert restored(corpus, 0, settings, False, "never").parts == (
        "transform",
        "lists",
    )  # no model: no calibration
    assert restored(corpus, 0, replace(settings, index_type="flat"), False, "never").parts == ("transform",)
    header["lists"] = {"centroids": {"shape": [4, 3], "float32": "AAAAAA=="}, "search_params": params}
    (tmp_path / "bad.jsonl").write_text(
        json.dumps(header) + "\n" + lines[1]
    )  # not of its dims: trained again
    assert restored(Corpus(tmp_path / "bad.jsonl"), 0, settings, False, "never").parts == ("transform",)
