"""Filtered search's selector: the ids a search may return, as FAISS checks them for every vector it scores."""

from __future__ import annotations

from collections.abc import Callable

import faiss
import numpy as np

BITMAP_IDS = 1 << 27  # ids below this are selected through a bitmap (16 MiB at most), others by a hash set
SELECTORS_KEPT = 8  # arrays whose selectors are kept (a filter's rows, cached by the store, come back)


class Selector:
    """A bitmap (one bit per id, a shift and a mask per check) where the ids are small enough, else FAISS's
    hash set. Keeps its arrays alive as long as FAISS may read them."""

    def __init__(self, ids: np.ndarray):
        ids = np.ascontiguousarray(ids, dtype=np.int64)
        top = int(ids.max(initial=-1)) + 1
        if int(ids.min(initial=0)) >= 0 and top <= BITMAP_IDS:
            member = np.zeros(top, dtype=bool)
            member[ids] = True
            self.array = np.packbits(member, bitorder="little")
            self.faiss = faiss.IDSelectorBitmap(len(self.array), faiss.swig_ptr(self.array))
        else:
            self.array = ids
            self.faiss = faiss.IDSelectorBatch(len(ids), faiss.swig_ptr(ids))


class Selectors:
    """The selectors of the last SELECTORS_KEPT arrays searched with, by the array's identity: a filter's
    array that comes back has its bitmap made once. An index drops them when its rows change."""

    def __init__(self) -> None:
        self._kept: dict[tuple[int, bool], tuple[np.ndarray, Selector]] = {}

    def of(self, allowed: np.ndarray, rows: Callable[[], np.ndarray] | None = None) -> Selector:
        """The selector of `allowed`, or where `rows` is given, of the ids it returns for them (kept apart)."""
        key = (id(allowed), rows is not None)
        if key not in self._kept or self._kept[key][0] is not allowed:
            if len(self._kept) >= SELECTORS_KEPT:
                self._kept.pop(next(iter(self._kept)))
            self._kept[key] = (allowed, Selector(allowed if rows is None else rows()))
        return self._kept[key][1]
