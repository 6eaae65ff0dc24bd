"""Ids seen twice in a stream of documents, found in 8 bytes an id: a hash of each, kept in an array, sorted once
at the end; only where two hashes are equal are the ids read again and compared. A dict of every id, with the
strings it kept, took 121 bytes an id (benchmarks/id_check.py; 12 GB for 100M documents, on the one driver that
checks a corpus before ingesting it)."""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable

import numpy as np

_hash = hash  # Python's 64-bit string hash: fast, and equal for equal ids within this process


class RepeatedIds:
    """Add every id in order; `first_repeat` then finds the first one (in that order) that came before."""

    def __init__(self) -> None:
        self._hashes = array("q")

    def add(self, doc_id: str) -> None:
        self._hashes.append(_hash(doc_id))

    def first_repeat(self, ids_again: Callable[[], Iterable[str]]) -> tuple[int, int, str] | None:
        """(ordinal of the repeat, ordinal of the id's first place, the id), ordinals counted from 1 in the order
        ids were added, or None when every id is unique. `ids_again` gives the ids once more, in that order: it
        is read only where hashes repeat (an id repeated, or two ids whose hashes agree)."""
        hashes = np.frombuffer(self._hashes, dtype=np.int64)
        order = np.argsort(hashes, kind="stable")
        ranked = hashes[order]
        equal = np.flatnonzero(ranked[1:] == ranked[:-1])  # 25 bytes an id at this peak, for a moment
        del ranked
        if not len(equal):
            return None
        candidates = set(order[equal].tolist()) | set(order[equal + 1].tolist())
        first_place: dict[str, int] = {}
        for ordinal, doc_id in enumerate(ids_again()):
            if ordinal in candidates:
                if doc_id in first_place:
                    return ordinal + 1, first_place[doc_id] + 1, doc_id
                first_place[doc_id] = ordinal
        return None
