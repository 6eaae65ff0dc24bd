"""The recall target holds for queries unlike the corpus's own vectors (tuning.py): on 30,000 vectors resampled
from 1,000 sources with noise, held-out queries made from the sources with more noise (no closer to the corpus
than the build's sample queries) find at least the target's share of their exact top 10 through an ivf index
tuned at build, where midpoints of two documents, the sample queries of the rule before, stop too early."""

import json

import faiss
import numpy as np
import pytest
from conftest import as_kept

from semsearch import Index
from semsearch.retrieval import tuning

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("tuning")

DOCS, DIM, SOURCES, HELD_OUT, K = 30_000, 48, 1000, 400, 10
TARGET = 0.95


def unit(x: np.ndarray) -> np.ndarray:
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)


@pytest.fixture(scope="module")
def corpus():
    rng = np.random.default_rng(5)
    scale = np.linspace(1.0, 0.3, DIM)  # an uneven spectrum, as an encoder's
    sources = rng.standard_normal((SOURCES, DIM)) * scale
    docs = unit(sources[rng.integers(0, SOURCES, DOCS)] + 0.7 * rng.standard_normal((DOCS, DIM)) * scale)
    held_out = unit(
        sources[rng.integers(0, SOURCES, HELD_OUT)] + 1.3 * rng.standard_normal((HELD_OUT, DIM)) * scale
    )
    return docs, held_out


def top1(queries: np.ndarray, docs: np.ndarray) -> float:
    return float(np.mean(np.max(queries @ docs.T, axis=1)))


def recall(ids: np.ndarray, exact: np.ndarray) -> float:
    return float(np.mean([len(set(found) & set(want)) / K for found, want in zip(ids, exact)]))


def test_an_ivf_index_tuned_at_build_meets_its_target_on_held_out_queries(corpus, tmp_path):
    docs, held_out = corpus
    (tmp_path / "corpus.jsonl").write_text(
        "".join(json.dumps({"id": f"d{i}", "text": f"doc {i}"}) + "\n" for i in range(DOCS))
    )
    np.save(tmp_path / "vectors.npy", docs)
    with Index.create(
        tmp_path / "ivf", model="none", dim=DIM, transform="none", index_type="ivf", recall_target=TARGET
    ) as index:
        index.ingest(tmp_path / "corpus.jsonl", vectors=tmp_path / "vectors.npy")
        vectors = index.vectors
        assert vectors.kind == "ivf" and vectors.recall >= TARGET
        sample = tuning.sample_queries(np.arange(DOCS, dtype=np.int64), lambda pks: docs[pks])
        assert top1(held_out, docs) >= top1(
            sample, docs
        )  # the held-out queries are no further off the corpus
        kept = unit(as_kept(docs))  # exact search ranks the vectors as the index keeps them
        _, exact = faiss.knn(held_out, kept, K, metric=faiss.METRIC_INNER_PRODUCT)
        found = [[int(h.id[1:]) for h in hits] for hits in index.search_vectors(held_out, K, rerank=0)]
        assert recall(np.array(found), exact) >= TARGET, vectors.search_params

        # midpoints of two documents reach the target at a smaller nprobe, where the held-out queries do not
        spread = np.linspace(0, DOCS - 1, tuning.SAMPLE_QUERIES).astype(np.int64)
        midpoints = unit(docs[spread] + docs[(spread + DOCS // 2 + 1) % DOCS])
        _, midpoint_exact = faiss.knn(midpoints, kept, K, metric=faiss.METRIC_INNER_PRODUCT)

        def recall_at(queries: np.ndarray, truth: np.ndarray, nprobe: int) -> float:
            found = vectors.search(queries, K, params={"nprobe": nprobe})
            return recall(np.array([[pk for pk, _ in hits] for hits in found]), truth)

        nprobe = next(p for p in range(1, 200) if recall_at(midpoints, midpoint_exact, p) >= TARGET)
        assert nprobe < vectors.search_params["nprobe"]
        assert recall_at(held_out, exact, nprobe) < TARGET
