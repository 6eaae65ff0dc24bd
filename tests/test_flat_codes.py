"""flat-sq8: an exact scan over 8-bit codes, `auto`'s choice from AUTO_CODED_ROWS rows to the flat
budget. It answers exactly over its codes (decoded here by the scheme, not by FAISS) unfiltered, and filtered
exactly over the raw vectors (projected), which re-score its codes' shortlist;
its codes are trained again as the index doubles; an index an older release made flat keeps answering as flat
and turns flat-sq8 at its next write; the transform's matrix is kept in float32 only where that is exact."""

import json

import faiss
import numpy as np
import pytest

from semsearch import Index
from semsearch.retrieval import strategy
from semsearch.retrieval.search import DenseRetriever
from semsearch.retrieval.vectorindex import (
    AUTO_CODED_ROWS,
    AUTO_FLAT_LIMIT,
    factory,
    outgrown,
    resolve_index_type,
)
from semsearch.settings import TransformKind, TransformSpec
from semsearch.storage.packedarrays import read_arrays
from semsearch.transforms.linear import LinearTransform, rounded

pytestmark = pytest.mark.xdist_group("flat_codes")

DIM, DIMS, ROWS = 48, 32, 3000


def given(root, start: int, count: int, seed: int, spread: float = 1.0) -> dict:
    """A corpus of `count` documents (ids v{start}..., `g` in 0-9, `h` in 0-199) and their vectors (a shared
    anisotropic shape, `spread` times as wide), as files."""
    mixing = np.random.default_rng(0).normal(size=(DIM, DIM))
    vectors = (np.random.default_rng(seed).normal(size=(count, DIM)) @ mixing * spread).astype(np.float32)
    corpus, saved = root / f"c{start}.jsonl", root / f"v{start}.npy"
    lines = (
        json.dumps({"id": f"v{i}", "text": f"v {i}", "g": i % 10, "h": i % 200})
        for i in range(start, start + count)
    )
    corpus.write_text("".join(line + "\n" for line in lines))
    np.save(saved, vectors)
    return {"corpus": corpus, "vectors": saved}


def build(path, count: int, root, **options) -> None:
    with Index.create(path, model="none", dim=DIM, transform="whiten", dims=DIMS, **options) as index:
        index.ingest(**given(root, 0, count, seed=1))


@pytest.fixture(scope="module")
def coded(tmp_path_factory):
    root = tmp_path_factory.mktemp("flat_codes")
    build(root / "index", ROWS, root)
    with Index.open(root / "index") as index:
        yield index


def codes_of(index: Index) -> tuple[faiss.IndexScalarQuantizer, np.ndarray]:
    inner = faiss.downcast_index(index.vectors.index.index)
    return inner, faiss.vector_to_array(index.vectors.index.id_map)


def decoded(inner: faiss.IndexScalarQuantizer) -> np.ndarray:
    """Every row as its 8-bit codes hold it, by FAISS's non-uniform 8-bit scheme: a dimension's range
    [vmin, vmin + vdiff] (trained) cut into 255 steps, a code c meaning the middle of its step."""
    trained = faiss.vector_to_array(inner.sq.trained).reshape(2, -1)
    codes = faiss.vector_to_array(inner.codes).reshape(inner.ntotal, inner.d).astype(np.float64)
    return trained[0] + (codes + 0.5) / 255 * trained[1]


def assert_exact(found, queries, rows: np.ndarray, pks: np.ndarray, k: int) -> None:
    """Each query's answer is the k best of these rows by brute force: its scores those of the rows, no row left
    out scoring above its last (ties aside)."""
    for query, ranked in zip(queries, found):
        scores = rows @ query
        answered = np.array([pk for pk, _ in ranked])
        by_pk = dict(zip(pks.tolist(), scores))
        assert len(ranked) == min(k, len(pks))
        assert np.allclose([score for _, score in ranked], [by_pk[pk] for pk in answered], atol=1e-5)
        left_out = scores[~np.isin(pks, answered)]
        assert left_out.max(initial=-np.inf) <= ranked[-1][1] + 1e-5


def test_flat_sq8_answers_exactly_over_its_codes(coded):
    info = coded.info()
    assert (coded.vectors.kind, info["index_type"], info["index_structure"]) == ("flat-sq8", "auto", "SQ8")
    assert info["search_params"] == {} and 0.9 < info["measured_recall"] < 1  # against float32 exact search
    # a byte a dimension and the id (flat: 4 bytes a dimension)
    assert DIMS + 8 <= info["bytes_per_passage"]["vector_index"] <= DIMS + 9
    inner, held = codes_of(coded)
    rows = decoded(inner)
    queries = np.random.default_rng(5).normal(size=(6, DIM)).astype(np.float32)
    projected = coded.transform.project(queries)
    retriever = DenseRetriever(coded.transform, coded.vectors, coded.raw)
    assert_exact(retriever.candidates(queries, 10, None), projected, rows, held, 10)
    # filtered, exactly over the raw vectors projected (strategy.py): few rows (scored from them), more (the
    # codes' shortlist, a scan of the codes with the rows as a selector, re-scored from them)
    for where in ("h", 7), ("g", 3):
        allowed = np.array([pk for pk in range(ROWS) if pk % {"h": 200, "g": 10}[where[0]] == where[1]])
        assert (len(allowed) < strategy.SHORTLIST_ROWS) == (where[0] == "h")
        raw = coded.transform.project(coded.raw.get(allowed))
        assert_exact(retriever.candidates(queries, 10, allowed), projected, raw, allowed, 10)
        hits = coded.search_vectors(queries, k=10, mode="dense", rerank=0, where=[f"{where[0]}={where[1]}"])
        assert all(h.metadata[where[0]] == where[1] for found in hits for h in found)
        assert [[h.id for h in found] for found in hits] == [
            [f"v{pk}" for pk, _ in ranked] for ranked in retriever.candidates(queries, 10, allowed)
        ]


def test_auto_picks_flat_codes_between_its_bounds():
    assert resolve_index_type("auto", AUTO_CODED_ROWS - 1) == "flat"
    assert (
        resolve_index_type("auto", AUTO_CODED_ROWS)
        == resolve_index_type("auto", AUTO_FLAT_LIMIT)
        == "flat-sq8"
    )
    assert (
        resolve_index_type("auto", AUTO_FLAT_LIMIT + 1)
        == resolve_index_type("auto", 20_000, 384)
        == "hnsw-sq8"
    )
    assert resolve_index_type("flat-sq8", 10) == "flat-sq8" and resolve_index_type("flat", 10**6) == "flat"
    # flat-sq8's codes are trained again when its rows reach a power of two (graphs: never)
    assert not outgrown("flat-sq8", 1100, 2047) and outgrown("flat-sq8", 2047, 2048)
    assert not outgrown("hnsw-sq8", 60_000, 140_000) and not outgrown("flat", 1000, 5000)


def test_codes_are_trained_again_as_the_index_doubles(coded, tmp_path):
    build(tmp_path / "index", ROWS, tmp_path)
    with Index.open(tmp_path / "index") as index:
        before = faiss.vector_to_array(codes_of(index)[0].sq.trained)
        index.ingest(**given(tmp_path, ROWS, 1000, seed=2, spread=3.0))  # 4,000 rows: kept, codes as trained
        inner, held = codes_of(index)
        assert index.vectors.count == 4000 and np.array_equal(faiss.vector_to_array(inner.sq.trained), before)
        index.ingest(**given(tmp_path, 4000, 100, seed=3, spread=3.0))  # past 4,096: rebuilt, trained on all
        inner, held = codes_of(index)
        projected = index.transform.project(index.raw.get(held))
        trained = faiss.vector_to_array(inner.sq.trained).reshape(2, -1)
        assert index.vectors.kind == "flat-sq8" and inner.ntotal == 4100
        assert np.allclose(trained[0], projected.min(axis=0), atol=1e-6)
        assert np.allclose(trained[0] + trained[1], projected.max(axis=0), atol=1e-6)


def test_an_index_made_flat_by_an_older_auto_answers_as_before_and_turns_coded_when_written(tmp_path):
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(
            factory, "AUTO_CODED_ROWS", AUTO_FLAT_LIMIT + 1
        )  # auto made such an index flat up to the budget
        build(tmp_path / "index", 1500, tmp_path)
    queries = np.random.default_rng(6).normal(size=(4, DIM)).astype(np.float32)
    with Index.open(tmp_path / "index") as index:
        assert (index.vectors.kind, index.info()["index_structure"]) == ("flat", "Flat")
        stored = index.vectors.vectors_of(np.arange(1500))  # float32 rows, scored as they are
        retriever = DenseRetriever(index.transform, index.vectors, index.raw)
        assert_exact(
            retriever.candidates(queries, 10, None),
            index.transform.project(queries),
            stored,
            np.arange(1500),
            10,
        )
        index.ingest(**given(tmp_path, 1500, 10, seed=4))
        assert (index.vectors.kind, index.vectors.count) == ("flat-sq8", 1510)


def test_the_transform_matrix_is_kept_in_float16_only_where_exact(coded, tmp_path):
    saved = read_arrays(next(coded.path.glob("gen-*")) / LinearTransform.FILE)[0]  # as stored, unpacked
    assert (
        saved["matrix"].dtype == np.float16
        and saved["mean"].dtype == saved["eigenvalues"].dtype == np.float64
    )
    assert np.array_equal(saved["matrix"].astype(np.float64), coded.transform.matrix)
    assert 0 < coded.transform.rounding < 1e-3 and coded.state.drift == 0  # the rounding's share left out
    stats = read_arrays(next(coded.path.glob("gen-*")) / "stats.safetensors")[0]
    assert stats["mean"].dtype == stats["comoment_upper"].dtype == np.float64  # running statistics: float64
    # a matrix of an older release's fit (float32's values, float64's) is written as it is, read back unchanged
    rng = np.random.default_rng(7)
    spec = TransformSpec(TransformKind.WHITEN, 4, 0.5)
    for matrix, kept in (
        (rng.normal(size=(6, 4)), np.float64),
        (np.float32(rng.normal(size=(6, 4))), np.float32),
    ):
        older = LinearTransform(spec, 6, rng.normal(size=6), matrix, np.arange(4, 0, -1.0))
        older.save(tmp_path)
        assert read_arrays(tmp_path / LinearTransform.FILE)[0]["matrix"].dtype == kept
        again = LinearTransform.load(tmp_path, spec, 6)
        assert np.array_equal(again.matrix, older.matrix) and np.array_equal(again.mean, older.mean)
    # beyond float16's range, or a spread of variances that float16's rounding would mix: float32's values
    assert rounded(np.array([[0.1 + 1e-9]]), 1e4).tolist() == [[float(np.float32(0.1))]]
    wide = rounded(np.array([[1e5, 1.0 + 1e-9]]), 1.0)
    assert (
        wide.tolist() == [[1e5, 1.0]]
        and LinearTransform(spec, 1, np.zeros(1), wide, np.ones(2)).arrays()["matrix"].dtype == np.float32
    )
