"""The vector index: FAISS inner product over L2-normalised vectors (so scores are cosines), keyed by the
document store's integer row ids."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from .errors import IndexStateError, SettingsError
from .storage import atomic_path


class VectorIndex:
    FILE = "vectors.faiss"

    def __init__(self, index: faiss.Index):
        self.index = index

    @classmethod
    def create(cls, dim: int, index_type: str = "flat") -> VectorIndex:
        if index_type != "flat":
            raise SettingsError(f"unknown index type {index_type!r} (known: flat)")
        # IDMap2 keeps our ids and can reconstruct vectors by id (refit and checks need that).
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))

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
        return int(self.index.remove_ids(np.ascontiguousarray(ids, dtype=np.int64)))

    def search(
        self, queries: np.ndarray, k: int, allowed: np.ndarray | None = None
    ) -> list[list[tuple[int, float]]]:
        """The k best (id, score) per query; with `allowed`, only among those ids (filtered inside the
        search, so k come back whenever k are allowed)."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        if queries.ndim != 2 or queries.shape[1] != self.dim:
            raise SettingsError(f"queries {queries.shape} do not fit an index of dim {self.dim}")
        params = None
        if allowed is not None:
            allowed = np.ascontiguousarray(allowed, dtype=np.int64)
            if len(allowed) == 0:
                return [[] for _ in queries]
            k = min(k, len(allowed))
            params = faiss.SearchParameters(sel=faiss.IDSelectorBatch(allowed))
        k = min(k, self.count)
        if k == 0:
            return [[] for _ in queries]
        scores, ids = self.index.search(queries, k, params=params)
        return [
            [(int(i), float(s)) for i, s in zip(row_ids, row_scores) if i != -1]
            for row_ids, row_scores in zip(ids, scores)
        ]

    def save(self, directory: Path) -> None:
        with atomic_path(Path(directory) / self.FILE) as tmp:
            faiss.write_index(self.index, str(tmp))

    @classmethod
    def load(cls, directory: Path) -> VectorIndex:
        path = Path(directory) / cls.FILE
        if not path.is_file():
            raise IndexStateError(f"{directory}: no vector index ({cls.FILE}); the index is incomplete")
        return cls(faiss.read_index(str(path)))
