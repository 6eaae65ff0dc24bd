"""Which document each vector row belongs to: a document of n passages owns rows pk .. pk + n - 1 (chunking.py),
every other row is a whole document, its own pk."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class PassageMap:
    """Documents of more than one passage: pks (their first rows, sorted), passage counts."""

    long: np.ndarray
    counts: np.ndarray

    def owners(self, rows: np.ndarray) -> np.ndarray:
        """The document pk of each vector row."""
        rows = np.asarray(rows, dtype=np.int64)
        if not len(self.long):
            return rows
        at = np.searchsorted(self.long, rows, side="right") - 1
        inside = (at >= 0) & (rows < self.long[np.maximum(at, 0)] + self.counts[np.maximum(at, 0)])
        return np.where(inside, self.long[np.maximum(at, 0)], rows)

    def rows_of(self, doc_pks: np.ndarray) -> np.ndarray:
        """The vector rows of these documents (sorted unique pks), sorted."""
        if not len(self.long):
            return np.asarray(doc_pks, dtype=np.int64)
        found = np.isin(self.long, doc_pks, assume_unique=True)
        extra = [np.arange(pk + 1, pk + n) for pk, n in zip(self.long[found], self.counts[found])]
        return np.sort(np.concatenate([np.asarray(doc_pks, dtype=np.int64), *extra]))

    def counts_of(self, pks: np.ndarray) -> np.ndarray:
        """How many passages each of these documents has."""
        pks = np.asarray(pks, dtype=np.int64)
        if not len(self.long):
            return np.ones(len(pks), dtype=np.int64)
        at = np.minimum(np.searchsorted(self.long, pks), len(self.long) - 1)
        return np.where(self.long[at] == pks, self.counts[at], 1)
