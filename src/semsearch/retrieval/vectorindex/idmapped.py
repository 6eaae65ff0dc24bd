"""The kinds that keep their vectors row by row behind FAISS's id map (flat and hnsw, over float32 rows or
8-bit codes): an id's row found through a table, and the float32 rows scored in place."""

from __future__ import annotations

import faiss
import numpy as np

from .base import Ranked, VectorIndex, ranked


class IdMapped(VectorIndex):
    """An IndexIDMap over a storage of rows (`_storage`), the rows in the order they were added."""

    CODES = "Flat"  # the rows' form in FAISS's factory names
    _positions: np.ndarray | None = None  # row of the stored vectors by id, made on first use
    _held: np.ndarray | None = None  # the id of each stored row, with it

    @classmethod
    def holds(cls, index: faiss.Index) -> bool:
        return (
            isinstance(index, faiss.IndexIDMap) and type(faiss.downcast_index(index.index)) is cls.STRUCTURE
        )

    def _changed(self) -> None:
        super()._changed()
        self._positions = None

    @property
    def description(self) -> str:
        return self.CODES

    def _storage(self) -> faiss.Index:
        """The FAISS index holding the rows."""
        return faiss.downcast_index(self.index.index)

    def positions(self, ids: np.ndarray) -> np.ndarray:
        """Rows of the stored vectors holding these ids, -1 for an id not held (a document a writer added
        since this generation); the id -> row table is made once per loaded index (an O(n) pass, 8 bytes per
        id) and dropped when the index changes."""
        if self._positions is None:
            self._held = faiss.vector_to_array(self.concrete.id_map)
            table = np.full(int(self._held.max(initial=-1)) + 2, -1, dtype=np.int64)  # the last: ids beyond
            table[self._held] = np.arange(len(self._held), dtype=np.int64)
            self._positions = table
        ids = np.asarray(ids, dtype=np.int64)
        return self._positions[np.clip(ids, -1, len(self._positions) - 1)]

    def _held_rows(self, ids: np.ndarray) -> np.ndarray:
        """The rows holding these ids, leaving out the ids not held (they have no score)."""
        rows = np.ascontiguousarray(self.positions(ids))
        return rows[rows >= 0]

    def exact(self, queries: np.ndarray, k: int, ids: np.ndarray) -> Ranked:
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        rows = self._held_rows(ids)
        k = min(k, len(rows))
        if k == 0:
            return [[] for _ in queries]
        return self._exact_of_rows(queries, k, ids, rows)

    def _exact_of_rows(self, queries: np.ndarray, k: int, ids: np.ndarray, rows: np.ndarray) -> Ranked:
        """`exact` of these ids, held in these rows (at least k)."""
        raise NotImplementedError

    def ids(self) -> np.ndarray:
        return np.sort(faiss.vector_to_array(self.concrete.id_map).astype(np.int64))

    def held_vectors(self) -> tuple[np.ndarray, np.ndarray]:
        """Every id the index holds and its vector exactly as indexed (`vectors_of`; a copy), for a caller that
        scores many queries against them all at once (a calibration's scratch copy of a flat-sq8 index)."""
        ids = faiss.vector_to_array(self.concrete.id_map)
        vectors = self.vectors_of(ids)
        assert vectors is not None  # every id-mapped kind keeps its rows' vectors
        return ids, vectors


class StoredRows(IdMapped):
    """flat and hnsw: float32 rows, contiguous, scored in place (no copy)."""

    exact_source = "stored"

    def vectors_of(self, ids: np.ndarray) -> np.ndarray:
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        storage = self._storage()
        stored = faiss.rev_swig_ptr(storage.get_xb(), storage.ntotal * self.dim).reshape(-1, self.dim)
        rows = self.positions(ids)
        return np.where((rows >= 0)[:, None], stored[np.maximum(rows, 0)], np.nan)  # not held: no score

    def _exact_of_rows(self, queries: np.ndarray, k: int, ids: np.ndarray, rows: np.ndarray) -> Ranked:
        """By FAISS's scoring of the rows, every query against the same rows."""
        storage = self._storage()
        scores = np.empty((len(queries), k), dtype=np.float32)
        found = np.empty((len(queries), k), dtype=np.int64)
        faiss.knn_inner_products_by_idx(
            faiss.swig_ptr(queries),
            storage.get_xb(),
            faiss.swig_ptr(rows),
            self.dim,
            len(queries),
            storage.ntotal,
            len(rows),
            k,
            faiss.swig_ptr(scores),
            faiss.swig_ptr(found),
            0,  # every query scores the same rows
        )
        order = np.argsort(-scores, axis=1, kind="stable")  # FAISS leaves these in heap order
        scores, found = np.take_along_axis(scores, order, 1), np.take_along_axis(found, order, 1)
        assert self._held is not None  # set with the rows scored (positions)
        return ranked(scores, np.where(found >= 0, self._held[np.maximum(found, 0)], -1))
