"""pq: ivf with product-quantised codes (IndexIVFPQ, about 4 dims a byte), the smallest kind. Its codes only
find candidates, which the raw vectors re-score (`k_factor` of them a result). Opt-in: at a default query's
depth it loses a little nDCG@10 to hnsw and answers slower (benchmarks/results/index-type-quality.md)."""

from __future__ import annotations

import faiss
import numpy as np

from ...errors import SettingsError
from .base import Ranked, VectorIndex
from .ivf import IVF, TRAINING_ROWS_PER_LIST, inverted_lists, with_centroids

PQ_CENTROIDS = (16, 256)  # a sub-space's centroids: 4-bit or 8-bit codes
PQ_MIN_DOCUMENTS = 64  # 4-bit codes need 16 centroids per sub-space, each from a few rows


class PQ(IVF):
    kind = "pq"
    STRUCTURE = faiss.IndexIVFPQ
    exact_source = None
    MIN_TRAINING_ROWS = 256 * 64  # the codebooks' 256 centroids a sub-space

    @classmethod
    def create(cls, dim: int, count: int = 0) -> VectorIndex:
        """About 4 dims per one-byte code, the sub-spaces dividing dim; 4-bit codes where the documents are too
        few to train 8."""
        if count < PQ_MIN_DOCUMENTS:
            raise SettingsError(
                f"a pq index trains its codes on at least {PQ_MIN_DOCUMENTS} documents, and there are "
                f"{count}: use --index-type flat (or auto) until the corpus is larger"
            )
        m = max(d for d in range(1, dim + 1) if dim % d == 0 and d <= max(1, dim // 4))
        bits = 8 if count >= 256 * TRAINING_ROWS_PER_LIST else 4
        return cls(new_pq(dim, inverted_lists(count), m, bits))

    def codes_name(self) -> str:
        pq = self.concrete.pq
        return f"PQ{pq.M}x{pq.nbits}"

    def vectors_of(self, ids: np.ndarray) -> None:
        return None

    def exact(self, queries: np.ndarray, k: int, ids: np.ndarray) -> Ranked | None:
        return None

    def trained_lists(self) -> dict[str, np.ndarray] | None:
        """The cells' centroids and the codebooks (sub-spaces x centroids x their dims), which an export carries
        so that its import codes every vector as this index does."""
        trained = super().trained_lists() or {}
        pq = self.concrete.pq
        trained["codebooks"] = faiss.vector_to_array(pq.centroids).reshape(pq.M, pq.ksub, pq.dsub)
        return trained

    @classmethod
    def codebooks_problem(cls, dim: int, codebooks: np.ndarray | None) -> str | None:
        if codebooks is None:
            return f"codebooks missing for {cls.kind}"
        if (
            codebooks.ndim != 3
            or codebooks.shape[1] not in PQ_CENTROIDS
            or codebooks.shape[0] * codebooks.shape[2] != dim
        ):
            return f"codebooks of {codebooks.shape} for an index of {dim} dims"
        return None

    @classmethod
    def with_trained(cls, dim: int, trained: dict[str, np.ndarray]) -> VectorIndex:
        centroids, codebooks = trained["centroids"], trained["codebooks"]
        index = new_pq(dim, len(centroids), len(codebooks), int(np.log2(codebooks.shape[1])))
        faiss.copy_array_to_vector(
            np.ascontiguousarray(codebooks, "float32").ravel(), faiss.downcast_index(index).pq.centroids
        )
        with_centroids(index, centroids)
        faiss.downcast_index(index).precompute_table()  # what FAISS's training ends with
        return cls(index)


def new_pq(dim: int, lists: int, subspaces: int, bits: int) -> faiss.Index:
    """An untrained IVF-PQ index. FAISS trains a polysemous code order by default, for a Hamming pre-filter no
    search here uses, at many times the cost of the rest of the training: off."""
    index = faiss.index_factory(dim, f"IVF{lists},PQ{subspaces}x{bits}", faiss.METRIC_INNER_PRODUCT)
    faiss.downcast_index(index).do_polysemous_training = False
    return index
