"""How the calibration (calibration.py) encodes and what it keeps: every vector at a precision of raw vectors
(storage/rawvectors.py), fresh or from the calibration cache (storage/calibrationcache.py), and the draw saved
in the cache beside the vectors it encoded. The cache spares encodings, never changes what is asked."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from ..settings import RawPrecision
from ..storage.calibrationcache import CalibrationCache
from ..storage.rawvectors import as_kept
from .drawing import PseudoQuery

Encode = Callable[[Sequence[str]], np.ndarray]

# The pseudo-queries' vectors at int8 at least, as the calibration cache keeps them (388 bytes at 384 dims, not
# float32's 1,536): real queries are float32, and at the default raw vectors' int4 the pseudo-queries' ranks moved
# enough to move two sets' weights (SciFact-mixed's paragraph band to 0.9 from 0.6: -0.146 nDCG@10 on its real
# paragraph queries), at int6 one; at int8 the five key sets choose as at float32 (calibration/cache-precision.md)
QUERY_PRECISION = "int8"
PRECISION_ORDER = tuple(precision.value for precision in RawPrecision)  # finest first


def encoders(encode: Encode, precision: str, cache: CalibrationCache | None) -> tuple[Encode, Encode]:
    """The targets' encoder and the queries'. Every vector at a precision of raw vectors, so the cache keeps
    each as encoding would give it here, at that precision's bytes: the targets at the index's own, as an
    ingest keeps them; the queries at int8 or finer (query_precision)."""
    asked_at = query_precision(precision)
    if cache is None:
        return at_precision(encode, precision), at_precision(encode, asked_at)
    return cache.encoder(encode, precision), cache.encoder(encode, asked_at)


def query_precision(raw: str) -> str:
    """The precision the calibration takes its queries' vectors at: the raw vectors' where it is QUERY_PRECISION
    or finer, else QUERY_PRECISION (a query at int4 moves the choice: calibration/cache-precision.md)."""
    return raw if PRECISION_ORDER.index(raw) <= PRECISION_ORDER.index(QUERY_PRECISION) else QUERY_PRECISION


def at_precision(encode: Encode, precision: str) -> Encode:
    """`encode`, its vectors as raw vectors at `precision` are kept (rawvectors.as_kept)."""
    return lambda texts: as_kept(encode(texts), precision)


def save_draw(
    cache: CalibrationCache,
    drawn: Sequence[PseudoQuery],
    sampled: Sequence[PseudoQuery],
    paragraphs: Sequence[str],
) -> None:
    """Save the draw, and the paragraph each sampled query was asked as ("" for the others), in `cache` with
    every vector its encoders gave."""
    paragraph_of = {row_of(q): text for q, text in zip(sampled, paragraphs)}
    cache.save(panel(drawn), [paragraph_of.get(row_of(q), "") for q in drawn])


def panel(drawn: Sequence[PseudoQuery]) -> np.ndarray:
    """The draw as the cache keeps it: a row per pseudo-query, its pk, span and cut."""
    return np.array([row_of(q) for q in drawn], dtype=np.int64).reshape(-1, 4)


def row_of(drawn: PseudoQuery) -> tuple[int, int, int, int]:
    """A pseudo-query's row of the panel: its pk, span and cut."""
    return (drawn.pk, *drawn.span, drawn.cut)
