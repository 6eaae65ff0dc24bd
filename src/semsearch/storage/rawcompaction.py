"""Compaction of the raw vectors: the rows of deleted and replaced documents leave the segments, once enough
of them are dead to pay for a pass over the rows."""

from __future__ import annotations

import numpy as np

from .rawspool import SegmentWriter
from .rawvectors import FLOAT32, RawVectors, Segment, among

# a write compacts when at least this share of the stored rows, and this many, are dead (each row is 1.5 KB at
# 384 dims)
COMPACT_SHARE, COMPACT_MIN_ROWS = 0.25, 256


def worth_compacting(segments: list[Segment], live: int) -> bool:
    stored = sum(segment.count for segment in segments)
    dead = stored - live
    return dead >= COMPACT_MIN_ROWS and dead >= COMPACT_SHARE * stored


def compact(raw: RawVectors, live: np.ndarray, generation: int, precision: str = FLOAT32) -> Segment | None:
    """One segment of the live rows only (their pks listed beside it), at `precision`, to take the place of all
    of `raw`'s: the rows of deleted and replaced documents leave the disk. New file names, so readers of the
    published generation keep theirs; the old files go once no published manifest names them (`unreferenced`).
    Rows coded int8 come back to the same codes."""
    writer = SegmentWriter(raw.directory.parent, int(live[0]) if len(live) else 0, raw.dim, precision)
    kept = []
    for pks, block in raw.blocks():
        keep = among(pks, live)
        writer.append(block[keep])
        kept.append(pks[keep])
    pks = np.concatenate(kept) if kept else np.empty(0, dtype=np.int64)
    return writer.finish(f"seg-g{generation:06d}.npy", pks)
