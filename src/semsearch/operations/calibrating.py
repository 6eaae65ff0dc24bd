"""The calibration of an index's generation (retrieval/calibration.py), for the writes (writes.py): made on
the documents, encoder, transform and vector index a write has in hand, its pseudo-queries' vectors kept in the
calibration cache beside the index (storage/calibrationcache.py)."""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from ..ingest.chunking import Chunker
from ..ingest.creation import make_chunker
from ..ingest.pipeline import Encode, split
from ..retrieval.calibration import Calibration, Skipped, calibrate, encode_ahead
from ..retrieval.search import DenseRetriever
from ..retrieval.vectorindex import VectorIndex
from ..storage.calibrationcache import CalibrationCache, encoder_name
from ..storage.manifest import IndexSettings
from ..storage.rawvectors import RawVectors
from ..threads import one_blas_thread
from ..transforms import Transform
from .directory import IndexDirectory, Published

log = logging.getLogger(__name__)


def ready_renewal(
    directory: IndexDirectory, published: Published, chunker: Chunker | None, encode: Encode
) -> None:
    """Encode what renewing a stale calibration will encode (calibration.encode_ahead), while this write's model
    runs: the renewal (`refit --calibrate`, or `--refit auto` next) then starts none (STS-B dev with a fifth
    rewritten: the renewal 0.55 s against 0.71, the upsert 1.57 against 1.34: calibration.md)."""
    settings = directory.settings
    cache = CalibrationCache.load(directory.path, encoder_name(settings))
    cut = partial(split, chunker=chunker)
    encoded = encode_ahead(
        directory.store, published.vectors.count, cut, encode, settings.raw_precision, cache
    )
    log.info("the stale calibration's renewal readied: %d texts encoded", encoded)


def calibrated(directory: IndexDirectory, settings: IndexSettings, *parts: Any) -> dict[str, Any] | None:
    """The fusion weight this generation's documents choose (calibration.py), as the manifest keeps it; `parts`
    as `_calibrate` takes them (transform, vectors, raw, chunker, encode)."""
    cache = CalibrationCache.load(directory.path, encoder_name(settings))
    return _calibrate(directory, settings, *parts, cache=cache).to_json()  # or why there is none


def calibration(directory: IndexDirectory, **options: Any) -> Calibration | Skipped:
    """calibrate() on the index as it is (its documents, encoder, passages, transform and vector index),
    nothing kept: `options` go to calibrate() (a cache, another rerank, lengths)."""
    settings = directory.settings
    chunker = make_chunker(settings, lambda: directory.encoder)
    parts = (
        directory.transform,
        directory.loaded_vectors(),
        directory.raw,
        chunker,
        directory.encoder.encode,
    )
    return _calibrate(directory, settings, *parts, **options)


def _calibrate(
    directory: IndexDirectory,
    settings: IndexSettings,
    transform: Transform,
    vectors: VectorIndex,
    raw: RawVectors,
    chunker: Chunker | None,
    encode: Encode,
    **options: Any,
) -> Calibration | Skipped:
    with one_blas_thread():  # its products are small: a second thread would only spin between them
        return calibrate(
            store=directory.store,
            dense=DenseRetriever(transform, vectors, raw),
            encode=encode,
            cut=partial(split, chunker=chunker),
            **{"rerank": settings.rerank, "precision": settings.raw_precision, **options},
        )
