"""The kinds over 8-bit codes (flat-sq8, hnsw-sq8): a byte a dimension, trained on each dimension's range.
Their codes, decoded, are the vectors they keep, as an int8 raw row is the raw vector kept: filtered search is
exact over them, and a default query's rerank re-scores its candidates from the raw vectors."""

from __future__ import annotations

import faiss
import numpy as np

from .base import Ranked, ranked
from .faissthreads import single_threaded
from .idmapped import IdMapped

SQ8_TRAINING_ROWS = 65_536  # rows whose per-dimension range the 8-bit codes span (a value outside is clipped)
# up to this many rows are decoded and scored here, more by FAISS's scan of every code with a selector: a
# decode costs FAISS microseconds a row, its scan of every code about a nanosecond a dimension
DECODED_ROWS = 128


class Codes(IdMapped):
    CODES = "SQ8"
    exact_source = "codes"

    @property
    def training_rows(self) -> int:
        return 0 if self.index.is_trained else SQ8_TRAINING_ROWS

    def vectors_of(self, ids: np.ndarray) -> np.ndarray:
        """The codes of these ids decoded by FAISS as its search decodes them (a row in 1 ns a dim)."""
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        storage = self._storage()
        size = storage.code_size
        codes = faiss.rev_swig_ptr(storage.codes.data(), storage.ntotal * size).reshape(-1, size)
        rows = self.positions(ids)
        if not len(rows):
            return np.empty((0, self.dim), dtype=np.float32)
        chosen = np.ascontiguousarray(codes[np.maximum(rows, 0)])
        decoded = single_threaded(1, lambda: storage.sa_decode(chosen))  # two threads: twice as slow
        return np.where((rows >= 0)[:, None], decoded, np.nan)  # not held: no score

    def _exact_of_rows(self, queries: np.ndarray, k: int, ids: np.ndarray, rows: np.ndarray) -> Ranked:
        """A few ids decoded and scored here (DECODED_ROWS), more by a scan of every code (`scanned_codes`)."""
        if len(rows) <= DECODED_ROWS:
            return self._scored_by_id(queries, k, np.asarray(ids)[self.positions(ids) >= 0])
        return ranked(*self.scanned_codes(queries, k, ids))

    def scanned_codes(self, queries: np.ndarray, k: int, ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The k best of these ids (sorted unique) by their codes, a scan of every code with their rows as a
        selector (FAISS's SQ8 scan), as FAISS's (scores, ids) arrays, -1 padding."""
        queries = np.ascontiguousarray(queries, dtype=np.float32)
        codes, selector = self._storage(), self._selector(ids, lambda: self._held_rows(ids))
        k = max(1, min(k, self.count))
        search = lambda: codes.search(queries, k, params=faiss.SearchParameters(sel=selector.faiss))  # noqa: E731
        scores, found = single_threaded(len(queries), search)
        assert self._held is not None  # set with the rows the selector holds (positions)
        return scores, np.where(found >= 0, self._held[np.maximum(found, 0)], -1)

    def code_ranges(self) -> list[float]:
        """The trained ranges (each dimension's least value, then each one's span), which an export carries so
        that its import codes every vector as this index did (trained on other rows, the codes of the same
        vectors differ, and so the candidates near a list's foot, and a graph's links)."""
        return faiss.vector_to_array(faiss.downcast_index(self._storage()).sq.trained).tolist()

    def with_code_ranges(self, ranges: list[float]) -> Codes:
        """This empty index trained with these ranges (`code_ranges`); ValueError where they do not fit its
        dims."""
        trained = np.asarray(ranges, dtype=np.float32)
        if trained.shape != (2 * self.dim,) or not np.isfinite(trained).all():
            raise ValueError(f"8-bit ranges of {trained.shape}, for {self.dim} dims of {self.kind}")
        storage, inner = faiss.downcast_index(self._storage()), faiss.downcast_index(self.index.index)
        faiss.copy_array_to_vector(trained, storage.sq.trained)
        storage.is_trained = inner.is_trained = self.index.is_trained = True  # the codes, the graph, the ids
        return self
