"""The exhaustive kinds: every search scores every row it may return, so each is exact over what it keeps and
has nothing to tune. flat keeps float32 rows (IndexFlatIP); flat-sq8 8-bit codes (IndexScalarQuantizer), a
quarter of the bytes, trained on each dimension's range."""

from __future__ import annotations

import faiss

from .codes import Codes
from .idmapped import StoredRows


class Flat(StoredRows):
    kind = "flat"
    STRUCTURE = faiss.IndexFlatIP
    exhaustive = True

    @classmethod
    def create(cls, dim: int, count: int = 0) -> Flat:
        return cls(faiss.IndexIDMap2(faiss.IndexFlatIP(dim)))  # IDMap2: reconstructs vectors by id


class FlatSQ8(Codes):
    kind = "flat-sq8"
    STRUCTURE = faiss.IndexScalarQuantizer
    exhaustive = True

    @classmethod
    def create(cls, dim: int, count: int = 0) -> FlatSQ8:
        # IDMap: its codes are read by row (`positions`), never reconstructed by id
        codes = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_8bit, faiss.METRIC_INNER_PRODUCT)
        return cls(faiss.IndexIDMap(codes))


def outgrown(kind: str, before: int, after: int) -> bool:
    """Whether a flat-sq8 index growing from `before` to `after` rows is rebuilt, its codes trained again: when
    the count passes a power of two, so the range its codes span is always trained on more than half the rows
    (a rebuild is a scan of the rows, amortised: the rows encoded again at most double those added). Graphs are
    trained on a sample of SQ8_TRAINING_ROWS once."""
    return kind == FlatSQ8.kind and max(before, 1).bit_length() < max(after, 1).bit_length()
