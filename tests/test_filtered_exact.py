"""A filter's answer is brute force's over the vectors as given, not only over the vectors as kept: 20,000
given vectors of 384 dims (`auto` builds HNSW16 over 8-bit codes there), clustered in a randomly rotated
anisotropic basis plus noise, built here and unlike the data any default was chosen on. At 10%, 2%, 0.5% and
0.1% of the rows, and at a few rows, the top 10 with the defaults (no rerank, and rerank 100) holds at least
0.99 of numpy's brute force over the given float32 vectors, and k results whenever k documents match. The data
is at risk: ranked by the index's codes alone it is not brute force's, by rows kept in int4 (the transformed
default) it falls below 0.99."""

import json

import numpy as np
import pytest
from conftest import as_kept

from semsearch import Index
from semsearch.retrieval import strategy

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("filtered_exact")]

DOCS, DIM, QUERIES, K, CENTRES = 20_000, 384, 30, 10, 500
CUTS = (100, 20, 5, 1)  # b < cut: 10%, 2%, 0.5%, 0.1%
RECALL = strategy.FILTERED_RECALL


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def given(tmp_path_factory):
    rng = np.random.default_rng(53)
    rotation, _ = np.linalg.qr(rng.standard_normal((DIM, DIM)))
    basis = rotation * np.arange(1, DIM + 1) ** -0.8  # a few directions carry most of the variance
    centres = rng.standard_normal((CENTRES, DIM)) @ basis.T

    def drawn(count: int, noise: float) -> np.ndarray:
        spread = rng.standard_normal((count, DIM)) @ basis.T
        return unit(
            centres[rng.integers(0, CENTRES, count)]
            + noise * spread
            + 0.01 * rng.standard_normal((count, DIM))
        )

    vectors, queries = drawn(DOCS, 0.7), drawn(QUERIES, 1.2)
    b = rng.integers(0, 1000, DOCS)
    b[:3] = 5000  # three documents alone match b>=5000, ten b>=4000
    b[3:10] = 4000
    root = tmp_path_factory.mktemp("given")
    corpus = root / "corpus.jsonl"
    corpus.write_text(
        "".join(json.dumps({"id": str(i), "text": f"d{i}", "b": int(v)}) + "\n" for i, v in enumerate(b))
    )
    np.save(root / "vectors.npy", vectors)
    with Index.create(root / "index", model="none", dim=DIM, transform="none") as index:  # the defaults
        index.ingest(corpus, vectors=root / "vectors.npy")
    with Index.open(root / "index") as index:
        yield vectors, queries, b, index


def brute_force(space: np.ndarray, queries: np.ndarray, rows: np.ndarray) -> list[set[int]]:
    scores = queries @ space[rows].T
    return [set(rows[order].tolist()) for order in np.argsort(-scores, axis=1, kind="stable")[:, :K]]


def recall(found: list[list[int]], truth: list[set[int]]) -> float:
    return float(np.mean([len(set(f) & t) / len(t) for f, t in zip(found, truth)]))


def test_the_defaults_keep_untransformed_given_vectors_in_float16_over_hnsw_codes(given):
    _, _, _, index = given
    assert index.settings.raw_precision == "float16"
    assert index.vectors.kind == "hnsw-sq8"


@pytest.mark.parametrize("cut", CUTS)
def test_a_filter_finds_brute_force_over_the_vectors_as_given(given, cut):
    vectors, queries, b, index = given
    rows = np.flatnonzero(b < cut)
    truth = brute_force(vectors, queries, rows)
    for rerank in (0, 100):
        hits = index.search_vectors(queries, K, where=[f"b<{cut}"], rerank=rerank)
        assert all(len(h) == K for h in hits)
        assert recall([[int(h.id) for h in q] for q in hits], truth) >= RECALL, (cut, rerank)


def test_the_data_is_at_risk_without_the_raw_vectors_rescoring(given):
    """Ranked by hnsw-sq8's 8-bit codes alone, some filter here misses rows of the top 10; by rows kept in
    int4 (the last release's default, which scored filters so: 0.92-0.95 at 200,000 such rows), some falls
    below RECALL."""
    vectors, queries, b, index = given
    int4 = unit(as_kept(vectors, "int4"))
    by_codes, by_int4 = [], []
    for cut in CUTS:
        rows = np.flatnonzero(b < cut)
        truth = brute_force(vectors, queries, rows)
        _, found = index.vectors.scanned_codes(index.transform.project(queries), K, rows)
        by_codes.append(recall(found.tolist(), truth))
        by_int4.append(recall([list(t) for t in brute_force(int4, queries, rows)], truth))
    assert min(by_codes) < 1.0 and min(by_int4) < RECALL, (by_codes, by_int4)


@pytest.mark.parametrize("where, matching", [("b>=5000", 3), ("b>=4000", 10)])
def test_k_results_whenever_k_documents_match(given, where, matching):
    vectors, queries, b, index = given
    rows = np.flatnonzero(b >= int(where[3:]))
    assert len(rows) == matching
    truth = brute_force(vectors, queries, rows)
    hits = index.search_vectors(queries, K, where=[where], rerank=0)
    assert all(len(h) == matching for h in hits)
    assert recall([[int(h.id) for h in q] for q in hits], truth) == 1.0
