"""The vector index: FAISS inner product over L2-normalised vectors (so scores are cosines), keyed by the
document store's integer row ids."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from .errors import IndexStateError, SettingsError
from .storage import atomic_path

INDEX_TYPES = ("flat", "hnsw", "ivf", "pq", "auto")
# `auto`: exact search while documents x dims stay within a budget, HNSW above. The budget is 50,000 documents
# at the default 128 dims (an exact scan of 6.4M numbers, about 1.5 ms here; 117k x 128 took 3.4 ms against
# HNSW's 0.6): wider vectors switch sooner (16,666 at 384 dims), narrower ones later.
AUTO_FLAT_LIMIT, AUTO_REFERENCE_DIMS = 50_000, 128
HNSW_NEIGHBOURS, HNSW_EF_CONSTRUCTION, HNSW_EF_SEARCH = 32, 80, 128
TRAINING_ROWS_PER_LIST = 40
PQ_MIN_DOCUMENTS = 64  # 4-bit codes need 16 centroids per sub-space, each from a few rows  # FAISS warns below 39 points per centroid


def resolve_index_type(index_type: str, count: int, dim: int = AUTO_REFERENCE_DIMS) -> str:
    """The concrete type for `count` documents of `dim` dims (`auto` picks by both; see AUTO_FLAT_LIMIT)."""
    if index_type not in INDEX_TYPES:
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(INDEX_TYPES)})")
    if index_type == "auto":
        return "flat" if count * dim <= AUTO_FLAT_LIMIT * AUTO_REFERENCE_DIMS else "hnsw"
    return index_type


def inverted_lists(count: int) -> int:
    """IVF's number of lists: about 4 sqrt(n), FAISS's rule of thumb, with enough rows to train each."""
    return int(max(1, min(4 * np.sqrt(max(count, 1)), count // TRAINING_ROWS_PER_LIST, 65536)))


class VectorIndex:
    """flat: exact (IndexFlatIP). hnsw: a graph (HNSW32), no training, removal by rebuilding. ivf: inverted
    lists over k-means cells, trained on a sample, `nprobe` lists searched. pq: ivf with product-quantised
    codes (about 4 dims per byte), the smallest. All keep our ids and filter by id inside the search."""

    FILE = "vectors.faiss"

    def __init__(self, index: faiss.Index):
        self.index = index
        self._tune()

    @classmethod
    def create(cls, dim: int, index_type: str = "flat", count: int = 0) -> VectorIndex:
        """An empty index of a concrete type (see `resolve_index_type`); `count`: the expected number of
        vectors, which sizes ivf and pq."""
        metric = faiss.METRIC_INNER_PRODUCT
        if index_type == "flat":
            # IDMap2 keeps our ids and can reconstruct vectors by id.
            return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))
        if index_type == "hnsw":
            return cls(faiss.IndexIDMap(faiss.IndexHNSWFlat(dim, HNSW_NEIGHBOURS, metric)))
        lists = inverted_lists(count)
        if index_type == "ivf":
            return cls(faiss.index_factory(dim, f"IVF{lists},Flat", metric))
        if index_type == "pq":
            if count < PQ_MIN_DOCUMENTS:
                raise SettingsError(
                    f"a pq index trains its codes on at least {PQ_MIN_DOCUMENTS} documents, and there are "
                    f"{count}: use --index-type flat (or auto) until the corpus is larger"
                )
            # About 4 dims per one-byte code, m dividing dim; 4-bit codes where lists are too few to train 8.
            m = max(d for d in range(1, dim + 1) if dim % d == 0 and d <= max(1, dim // 4))
            bits = 8 if count >= 256 * TRAINING_ROWS_PER_LIST else 4
            return cls(faiss.index_factory(dim, f"IVF{lists},PQ{m}x{bits}", metric))
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(INDEX_TYPES[:-1])})")

    def _tune(self) -> None:
        inner = faiss.downcast_index(self.index.index) if isinstance(self.index, faiss.IndexIDMap) else None
        if isinstance(inner, faiss.IndexHNSW):
            inner.hnsw.efConstruction = HNSW_EF_CONSTRUCTION

    @property
    def kind(self) -> str:
        index = faiss.downcast_index(self.index)
        if isinstance(index, faiss.IndexIDMap):
            inner = faiss.downcast_index(index.index)
            return "hnsw" if isinstance(inner, faiss.IndexHNSW) else "flat"
        return "pq" if isinstance(index, faiss.IndexIVFPQ) else "ivf"

    @property
    def description(self) -> str:
        """The FAISS structure, e.g. IVF1372,Flat, for `info`."""
        index = faiss.downcast_index(self.index)
        if isinstance(index, faiss.IndexIVF):
            codes = f"PQ{index.pq.M}x{index.pq.nbits}" if isinstance(index, faiss.IndexIVFPQ) else "Flat"
            return f"IVF{index.nlist},{codes} nprobe={self._nprobe(index)}"
        return "HNSW32,Flat" if self.kind == "hnsw" else "Flat"

    @staticmethod
    def _nprobe(index) -> int:
        # About 1/16 of the lists, at least 8: measured recall@10 against flat in benchmarks/results/scale.md.
        return int(min(index.nlist, max(8, index.nlist // 16)))

    @property
    def training_rows(self) -> int:
        """Rows `train` wants (0: needs none)."""
        index = faiss.downcast_index(self.index)
        if isinstance(index, faiss.IndexIVF) and not index.is_trained:
            return max(index.nlist * 64, 256 * 64 if isinstance(index, faiss.IndexIVFPQ) else 0)
        return 0

    def train(self, sample: np.ndarray) -> None:
        self.index.train(np.ascontiguousarray(sample, dtype=np.float32))

    @property
    def supports_remove(self) -> bool:
        return self.kind != "hnsw"

    @property
    def dim(self) -> int:
        return self.index.d

    @property
    def count(self) -> int:
        return self.index.ntotal

    def add(self, vectors: np.ndarray, ids: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype=np.float32)
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or len(vectors) != len(ids):
            raise SettingsError(
                f"vectors {vectors.shape} and ids {ids.shape} do not fit an index of dim {self.dim}"
            )
        self.index.add_with_ids(vectors, ids)

    def remove(self, ids: np.ndarray) -> int:
        """Remove by id (not for hnsw: see `supports_remove`; the caller rebuilds it instead)."""
        if not self.supports_remove:
            raise SettingsError("an HNSW index cannot remove vectors; rebuild it")
        return int(self.index.remove_ids(np.ascontiguousarray(ids, dtype=np.int64)))

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The k best (id, score) per query; with `allowed`, only among those ids (filtered inside the
        search, so k come back whenever k are allowed)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise SettingsError(f"queries {queries.shape} do not fit an index of dim {self.dim}")
        selector = None
        if allowed is not None:
            allowed = np.ascontiguousarray(allowed, dtype=np.int64)
            if len(allowed) == 0:
                return [[] for _ in queries]
            k = min(k, len(allowed))
            selector = faiss.IDSelectorBatch(allowed)
        params = self._search_parameters(selector)
        k = min(k, self.count)
        if k == 0:
            return [[] for _ in queries]
        if len(queries) == 1:
            # One query gives FAISS's threads little to share (measured at 117k x 128, flat: 5.8-7.3 ms on one
            # thread, 10.7 ms on two).
            threads = faiss.omp_get_max_threads()
            faiss.omp_set_num_threads(1)
            try:
                scores, ids = self.index.search(queries, k, params=params)
            finally:
                faiss.omp_set_num_threads(threads)
        else:
            scores, ids = self.index.search(queries, k, params=params)
        return [
            [(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i != -1]
            for row_ids, row_scores in zip(ids, scores)
        ]

    def _search_parameters(self, selector) -> faiss.SearchParameters | None:
        index = faiss.downcast_index(self.index)
        if isinstance(index, faiss.IndexIVF):
            return faiss.SearchParametersIVF(sel=selector, nprobe=self._nprobe(index))
        if self.kind == "hnsw":
            return faiss.SearchParametersHNSW(sel=selector, efSearch=HNSW_EF_SEARCH)
        return None if selector is None else faiss.SearchParameters(sel=selector)

    def save(self, directory: Path) -> None:
        with atomic_path(Path(directory) / self.FILE) as tmp:
            faiss.write_index(self.index, str(tmp))

    @classmethod
    def load(cls, directory: Path) -> VectorIndex:
        path = Path(directory) / cls.FILE
        if not path.is_file():
            raise IndexStateError(f"{directory}: no vector index ({cls.FILE}); the index is incomplete")
        return cls(faiss.read_index(str(path)))  # already of its own class; a downcast here would not own it
