"""Vectors made elsewhere: `ingest --vectors FILE.npy` (row i is the i-th document) or `--vector-field F`,
queries by `--vector`; the same index as one encoded here, and every malformed vector input a clear error."""

import json
import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SAMPLE, copy_index, encoded_once, write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.errors import SettingsError

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("vectors")

QUESTION = "stem cells differentiate into neurons"


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def ok(result):
    assert result.exit_code == 0, (result.output, result.exception)
    return result


def fails(result, message: str) -> None:
    assert result.exit_code == 1, (result.output, result.exception)
    assert isinstance(result.exception, SystemExit), result.exception
    assert "Traceback" not in result.output
    assert result.stderr.strip().splitlines()[-1] == f"Error: {message}", result.stderr


@pytest.fixture(scope="module")
def sample_whole(tmp_path_factory):
    """The sample encoded a vector per document (no chunking): what vectors made elsewhere are."""
    return encoded_once(
        SAMPLE, tmp_path_factory.mktemp("whole") / "index", chunk_tokens=0, raw_precision="float32"
    )


@pytest.fixture(scope="module")
def made_elsewhere(sample_whole, tmp_path_factory):
    """The SciFact subset's documents (as stored) and their real encoder vectors, as a user would bring them."""
    root = tmp_path_factory.mktemp("elsewhere")
    with Index.open(sample_whole) as index:
        docs = [
            {"id": row["id"], "title": row["title"], "text": row["text"], **row["metadata"]}
            for row in index.store.get(range(len(index))).values()
        ]
        vectors = index.raw.get(np.arange(len(index)))
        query = index.encoder.encode([QUESTION])[0]
    corpus = write_jsonl(root / "corpus.jsonl", docs)
    np.save(root / "vectors.npy", vectors)
    np.save(root / "query.npy", query)
    return corpus, root / "vectors.npy", root / "query.npy", vectors


def ranked(lines: str) -> list[tuple[str, float]]:
    return [(hit["id"], round(hit["score"], 4)) for hit in map(json.loads, lines.splitlines())]


def test_vectors_without_a_model_give_the_encoded_index_results(made_elsewhere, sample_whole, tmp_path):
    corpus, vectors, query, _ = made_elsewhere
    target = tmp_path / "elsewhere"
    ok(
        run(
            "ingest",
            corpus,
            "--vectors",
            vectors,
            "--index",
            target,
            "--transform",
            "whiten",
            "--dims",
            "64",
            "--raw-precision",
            "float32",  # as the reference keeps them
        )  # fmt: skip
    )
    reference = copy_index(sample_whole, tmp_path / "reference")
    with Index.open(reference) as index:
        index.refit("whiten", 64, 1.0)
    details = json.loads(ok(run("info", "--index", target, "--json")).output)
    assert (details["model"], details["encoder_dim"], details["dims"]) == ("none", 384, 64)
    got = ok(run("query", "--vector", query, "--index", target, "-k", "10", "--json")).output
    want = ok(run("query", QUESTION, "--index", reference, "-k", "10", "--json", "--mode", "dense")).output
    assert ranked(got) == ranked(want)
    fails(
        run("query", QUESTION, "--index", target),
        f"{target} holds vectors made elsewhere and has no model to encode text: give vectors "
        "(query --vector FILE; ingest --vectors FILE or --vector-field F)",
    )
    # the same vectors again: unchanged; an id with a new vector: replaced
    result = ok(run("ingest", corpus, "--vectors", vectors, "--index", target))
    assert "0 documents added (0 replaced, 300 unchanged)" in result.stderr


def test_a_vector_field_and_a_model_for_text_queries(made_elsewhere, tmp_path):
    corpus, _, _, vectors = made_elsewhere
    lines = corpus.read_text().splitlines()
    docs = [{**json.loads(line), "embedding": vector.tolist()} for line, vector in zip(lines, vectors)]
    path = write_jsonl(tmp_path / "with-vectors.jsonl", docs)
    target = tmp_path / "index"
    ok(
        run(
            "ingest",
            path,
            "--vector-field",
            "embedding",
            "--model",
            "bundled:all-MiniLM-L6-v2",
            "--index",
            target,
        )
    )
    hits = ranked(ok(run("query", QUESTION, "--index", target, "-k", "3", "--json")).output)
    assert len(hits) == 3
    stored = json.loads(ok(run("query", QUESTION, "--index", target, "-k", "1", "--json")).output)
    assert "embedding" not in stored["metadata"]  # the vector is not metadata


@pytest.fixture
def small(tmp_path):
    corpus = write_jsonl(tmp_path / "c.jsonl", [{"id": f"d{i}", "text": f"doc {i}"} for i in range(20)])
    vectors = np.random.default_rng(0).normal(size=(20, 16)).astype(np.float32)
    np.save(tmp_path / "v.npy", vectors)
    return corpus, tmp_path / "v.npy", vectors


def test_bad_vector_files(small, tmp_path):
    corpus, good, vectors = small
    index = tmp_path / "index"
    ok(run("ingest", corpus, "--vectors", good, "--index", index, "--transform", "none"))
    before = sorted((p.name, p.stat().st_mtime_ns) for p in index.rglob("*"))
    cases = {
        "short.npy": (
            vectors[:19],
            f"{{}}: 19 rows, but {corpus} has more documents (row i is the i-th document)",
        ),
        "long.npy": (
            np.vstack([vectors, vectors[:1]]),
            f"{{}}: 21 rows, but {corpus} has 20 documents (row i is the i-th document)",
        ),
        "narrow.npy": (vectors[:, :8], "{}: vectors of width 8, expected 16"),
        "flat.npy": (vectors[0], "{}: expected a 2-D array with one row per document, got shape (16,)"),
        "words.npy": (np.array([["a"] * 16] * 20), "{}: expected numbers, got dtype <U1"),
    }
    nan = vectors.copy()
    nan[5, 3] = np.nan
    cases["nan.npy"] = (nan, "{}: row 5 (document 'd5') has a value that is not finite at column 3")
    for name, (array, message) in cases.items():
        np.save(tmp_path / name, array)
        fails(
            run("ingest", corpus, "--vectors", tmp_path / name, "--index", index),
            message.format(tmp_path / name),
        )
    # An .npy that declares Python objects (its payload would be a pickle): written by hand, so nothing here
    # pickles either.
    with open(tmp_path / "objects.npy", "wb") as handle:
        np.lib.format.write_array_header_1_0(handle, {"descr": "|O", "fortran_order": False, "shape": (3,)})
        handle.write(b"\x80\x04N.")
    fails(  # never unpickled
        run("ingest", corpus, "--vectors", tmp_path / "objects.npy", "--index", index),
        f"{tmp_path / 'objects.npy'}: not a readable .npy array of numbers "
        "(Array can't be memory-mapped: Python objects in dtype.)",
    )
    fails(
        run("ingest", corpus, "--vectors", tmp_path / "absent.npy", "--index", index),
        f"{tmp_path / 'absent.npy'}: no such file",
    )
    # a new index whose vectors do not fit the model named
    fails(
        run(
            "ingest",
            corpus,
            "--vectors",
            good,
            "--index",
            tmp_path / "new",
            "--model",
            "bundled:all-MiniLM-L6-v2",
        ),
        "vectors of width 16, but the model's dimension is 384",
    )
    assert not (tmp_path / "new").exists()
    assert sorted((p.name, p.stat().st_mtime_ns) for p in index.rglob("*")) == before


def test_bad_vector_fields_name_the_line(small, tmp_path):
    _, _, vectors = small
    rows = [{"id": f"d{i}", "text": f"doc {i}", "v": vectors[i].tolist()} for i in range(20)]
    cases = {
        3: ({"v": vectors[3, :8].tolist()}, "line 4, field 'v': a vector of width 8, expected 16"),
        6: ({"v": "0.1 0.2"}, "line 7, field 'v': the vector must be a non-empty list of numbers"),
        7: ({"v": [1, "x"] + [0] * 14}, "line 8, field 'v': the vector must hold only numbers"),
        9: ({"v": None}, "line 10, field 'v': the vector must be a non-empty list of numbers"),
    }
    for row, (change, message) in cases.items():
        bad = [dict(r) for r in rows]
        bad[row].update(change)
        path = write_jsonl(tmp_path / f"bad{row}.jsonl", bad)
        fails(run("ingest", path, "--vector-field", "v", "--index", tmp_path / "new"), f"{path}, {message}")
    missing = [dict(r) for r in rows]
    del missing[2]["v"]
    path = write_jsonl(tmp_path / "missing.jsonl", missing)
    fails(
        run("ingest", path, "--vector-field", "v", "--index", tmp_path / "new"),
        f"{path}, line 3, field 'v': no vector",
    )
    assert not (tmp_path / "new").exists()


def test_query_vector_errors(small, tmp_path):
    corpus, good, vectors = small
    index = tmp_path / "index"
    ok(run("ingest", corpus, "--vectors", good, "--index", index))
    (tmp_path / "q.json").write_text(json.dumps(vectors[4].tolist()))
    assert (
        ranked(
            ok(run("query", "--vector", tmp_path / "q.json", "--index", index, "-k", "1", "--json")).output
        )[0][0]
        == "d4"
    )
    (tmp_path / "short.json").write_text("[1, 2]")
    fails(
        run("query", "--vector", tmp_path / "short.json", "--index", index),
        "query vectors of shape (1, 2); this index's vectors have 16 dimensions",
    )
    (tmp_path / "text.json").write_text('{"a": 1}')
    fails(
        run("query", "--vector", tmp_path / "text.json", "--index", index),
        f"{tmp_path / 'text.json'}: the vector must be a non-empty list of numbers",
    )
    result = run("query", "--index", index)
    assert result.exit_code == 2 and "give the query TEXT or a --vector FILE (one of them)" in result.stderr


def test_refit_refuses_dims_that_are_not_a_number_in_one_line(small, tmp_path):
    corpus, good, _ = small
    index = tmp_path / "index"
    ok(run("ingest", corpus, "--vectors", good, "--index", index, "--transform", "pca", "--dims", "8"))
    with Index.open(index) as opened:
        with pytest.raises(SettingsError, match="must be a number of dimensions or 'all', not 'twelve'"):
            opened.refit("pca", "twelve")  # type: ignore[arg-type]  # as an untyped caller may
        assert opened.info()["dims"] == 8


def test_refit_without_the_raw_vectors_says_so(small, tmp_path):
    corpus, good, vectors = small
    index = tmp_path / "index"
    ok(run("ingest", corpus, "--vectors", good, "--index", index))
    for segment in (index / "raw").glob("seg-*.npy"):
        segment.unlink()
    result = run("refit", "--index", index, "--transform", "flow")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert re.search(r"the raw vectors are missing; refit and rerank need them", result.stderr)
    np.save(tmp_path / "q.npy", vectors[2])
    assert (
        ranked(
            ok(run("query", "--vector", tmp_path / "q.npy", "--index", index, "-k", "1", "--json")).output
        )[0][0]
        == "d2"
    )


def test_python_api(small, tmp_path):
    corpus, good, vectors = small
    with Index.create(tmp_path / "index", model="none", dim=16, transform="pca", dims=4) as index:
        report = index.ingest(corpus, vectors=good)
        assert report.added == 20
        hits = index.search_vectors(vectors[[1, 2]], k=2)
        assert [h[0].id for h in hits] == ["d1", "d2"]
    assert Path(tmp_path / "index" / "manifest.json").is_file()


@pytest.mark.parametrize("order", ["C", "F"])
def test_a_vector_file_larger_than_a_read_block_keeps_every_row_in_place(tmp_path, order):
    """The .npy rows are read a block (4,096 rows) at a time, not through a memory map: rows on both sides
    of a block boundary land on their documents (a Fortran-order file is read through the map)."""
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((5000, 8)).astype(np.float32)
    path = tmp_path / "vectors.npy"
    np.save(path, np.asfortranarray(vectors) if order == "F" else vectors)
    corpus = write_jsonl(tmp_path / "corpus.jsonl", [{"id": f"d{i}", "text": f"t{i}"} for i in range(5000)])
    with Index.create(
        tmp_path / "index", model="none", dim=8, transform="none", raw_precision="float32"
    ) as index:
        index.ingest(corpus, vectors=path)
        rows = [0, 4095, 4096, 4999]
        np.testing.assert_array_equal(index.raw.get(np.array(rows)), vectors[rows])
        assert [hits[0].id for hits in index.search_vectors(vectors[rows], k=1)] == [f"d{i}" for i in rows]


@pytest.mark.parametrize("precision", ["float32", "float16", "int8", "int5", "int4"])
def test_raw_vectors_read_without_a_map_as_through_one(tmp_path, precision):
    """A write's reads (positioned reads, nearby rows merged, at most READ_SPAN rows a read) give the rows the
    kept map gives, across segments, in any order, repeated, and at the read span's edges; at every precision,
    the rows as given within its rounding (exactly for float32). 7 dims: the packed codes end mid-byte."""
    from semsearch.storage.rawvectors import READ_SPAN, RawVectors

    rng = np.random.default_rng(5)
    dim = 7
    vectors = rng.standard_normal((3000, dim)).astype(np.float32)
    # the largest error a row's component may have: none, float16's half unit in the last place, half a step of
    # the scaled codes (the row's largest magnitude over 127 at int8, 31 at int6, 15 at int5, 7 at int4)
    largest = np.abs(vectors).max(axis=1, keepdims=True)
    steps = {"int8": 127, "int6": 31, "int5": 15, "int4": 7}
    tolerance = (
        largest / steps[precision] / 2
        if precision in steps
        else {"float32": 0, "float16": np.abs(vectors) * 2.0**-11 + 2.0**-24}[precision]
    )
    with Index.create(
        tmp_path / "index", model="none", dim=dim, transform="none", raw_precision=precision
    ) as index:
        for part in (slice(0, 2500), slice(2500, 3000)):  # two ingests: two segments
            docs = [{"id": f"d{i}", "text": f"t{i}"} for i in range(3000)][part]
            np.save(tmp_path / "v.npy", vectors[part])
            index.ingest(write_jsonl(tmp_path / "c.jsonl", docs), vectors=tmp_path / "v.npy")
        unmapped = RawVectors(index.path, index.raw.segments, dim, mapped=False)
        assert len(index.raw.segments) == 2
        for pks in (
            rng.permutation(3000),
            rng.integers(0, 3000, 700),  # repeats, scattered
            np.array([READ_SPAN - 1, READ_SPAN, 2 * READ_SPAN - 1, 2499, 2500, 2999, 0]),
        ):
            assert np.all(
                np.abs(unmapped.get(pks) - vectors[pks])
                <= np.broadcast_to(tolerance, vectors.shape)[pks] * 1.0001
            )
            np.testing.assert_array_equal(index.raw.read(pks), index.raw.get(pks))
        assert not unmapped._maps  # nothing mapped
        if precision in ("int5", "int4"):  # the codes packed: whole bytes a row, the scales beside
            bits = int(precision[3:])
            segment = index.raw.segments[1]
            stored = np.load(index.raw.directory / segment.name, mmap_mode="r")
            assert stored.shape == (500, -(-dim * bits // 8)) and stored.dtype == np.uint8


# What each precision may move, by its rounding: a score (a row's cosine; int4's step is 18x int8's), the top 10
# shared with float32 but for near ties, and the cosine of two rows in the refitted transform's space.
MOVES = {"int8": (0.01, 9, 0.02), "int4": (0.04, 8, 0.08)}


@pytest.mark.parametrize("precision", ["int8", "int4"])
def test_scaled_raw_vectors_rerank_and_refit_as_float32_do(made_elsewhere, tmp_path, precision):
    """The same real vectors kept in float32 and in int8 or int4 (the default): rerank's scores within the
    rounding, the same top 10 but for near ties, and the transform refitted from the kept rows giving every pair
    of rows about the same cosine (MOVES); the rows take a quarter and an eighth of float32's bytes."""
    corpus, vectors, query, given = made_elsewhere
    found, transforms = {}, {}
    for kept in ("float32", precision):
        path = tmp_path / kept
        with Index.create(path, model="none", dim=384, raw_precision=kept, rerank=100) as index:
            index.ingest(corpus, vectors=vectors)
            index.refit("whiten", 32, 0.5)
            hits = index.search_vectors(np.load(query)[None], k=10)[0]
            found[kept] = {hit.id: hit.score for hit in hits}
            transforms[kept] = index.directory.transform.project(given)
        share = {"float32": 4, "int8": 1.1, "int4": 0.6}[kept]  # bytes a component, the scales included
        assert sum(f.stat().st_size for f in (path / "raw").iterdir()) < given.size * share + 1024
    score, shared, cosine = MOVES[precision]
    assert len(set(found["float32"]) & set(found[precision])) >= shared
    for pk in set(found["float32"]) & set(found[precision]):
        assert abs(found["float32"][pk] - found[precision][pk]) < score
    # the cosines of pairs of rows in the two spaces (the eigenvectors' signs may differ, the space does not)
    a, b = (
        t / np.linalg.norm(t, axis=1, keepdims=True) for t in (transforms["float32"], transforms[precision])
    )
    assert np.abs(a @ a.T - b @ b.T).max() < cosine
