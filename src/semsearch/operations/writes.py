"""The writes of an index but the add (adding.py): delete, refit and recalibrate, run while its writer lock is
held, and the tail every write that makes vectors or a calibration ends with (calibrated_and_published). Each
builds the next generation (generations.py) from the stages (build.py) and returns what was published, which
the facade then takes up (IndexDirectory.take_up)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..encoding.encoder import for_few_texts
from ..errors import IndexStateError
from ..ingest import build
from ..ingest.chunking import Chunker
from ..ingest.creation import make_chunker
from ..retrieval.calibration_age import aged
from ..retrieval.search import Where, allowed_rows
from ..retrieval.vectorindex import VectorIndex, resolve_index_type
from ..settings import NO_MODEL, TransformSpec, check_recall_target
from ..storage import tuningqueries
from ..storage.buildcheckpoint import clear_checkpoint
from ..storage.generations import NextGeneration
from ..storage.manifest import IndexSettings
from ..storage.rawvectors import RawVectors
from ..threads import one_blas_thread
from ..transforms import Transform
from ..transforms.stats import RunningStats
from .calibrating import calibrated
from .directory import IndexDirectory, Published
from .publish import publish

# the stages of a write and their seconds, at INFO (benchmarks/ten_million.py)
log = logging.getLogger(__name__)


def chosen(
    directory: IndexDirectory, ids: Sequence[str], allowed: np.ndarray | None, expect: int | None = None
) -> list[int]:
    """The pks (sorted) of the documents named by id (each must exist) or allowed by a filter; `expect`: how
    many there must be (what a preview showed the user), else nothing is chosen but an error."""
    pks: list[int] = []
    if ids:
        known = directory.store.existing_ids(list(ids))
        if unknown := [doc_id for doc_id in ids if doc_id not in known]:
            raise IndexStateError(
                f"no document with id {', '.join(map(repr, unknown[:5]))} in {directory.path}"
            )
        pks += [pk for pk, _ in known.values()]
    if allowed is not None:
        pks += allowed.tolist()
    if expect is not None and len(set(pks)) != expect:
        raise IndexStateError(f"the index changed: this delete now removes {len(set(pks))}, not {expect}")
    return sorted(set(pks))


def delete_chosen(directory: IndexDirectory, ids: Sequence[str], where: Where, expect: int | None) -> int:
    """Delete by id and/or filter (`expect`: chosen's), holding the writer lock; how many."""
    with directory.writing():
        directory.require_fitted()
        pks = chosen(directory, ids, allowed_rows(directory.store, where), expect)
        if pks:
            directory.take_up(delete(directory, pks))
        return len(pks)


def delete(directory: IndexDirectory, pks: Sequence[int]) -> Published:
    """Delete these documents (sorted unique pks); the vectors of their passages leave the statistics
    (downdated exactly) and the vector directory."""
    rows = directory.store.passage_pks(np.asarray(pks, dtype=np.int64))
    stats = directory.stats()
    stats.remove(directory.raw.get(rows))
    transform, vectors, settings = directory.transform, directory.loaded_vectors(), directory.settings
    with directory.generations.next(directory.manifest) as building:
        directory.store.delete(pks)
        live = directory.store.vector_pks()
        vectors = build.without(
            vectors,
            rows.tolist(),
            lambda: build.build_vectors(
                transform,
                directory.raw,
                live,
                settings.index_type,
                settings.recall_target,
                tuning_queries=tuningqueries.given(directory.path),
            ),
        )
        published = _publish(
            directory,
            building,
            stats,
            transform,
            vectors,
            directory.settings,
            calibration=aged(directory.state.calibration, len(pks)),
        )
    return published


def refit(
    directory: IndexDirectory,
    spec: TransformSpec,
    index_type: str | None,
    rerank: int | None = None,
    recall_target: float | None = None,
    calibrate: bool = True,
) -> tuple[float, Published]:
    """A new transform from the stored statistics and a vector index rebuilt from the kept raw vectors, and
    the fusion weight calibrated again for them (unless `calibrate` is False: the recorded one is kept)."""
    started = time.perf_counter()
    index_type = index_type or directory.settings.index_type
    recall_target = check_recall_target(recall_target) or directory.settings.recall_target
    resolve_index_type(index_type, 0)  # validates the name before the fit
    live, stats = directory.store.vector_pks(), directory.stats()
    fitted = build.fit(spec, stats, directory.raw, live)
    vectors = build.build_vectors(
        fitted,
        directory.raw,
        live,
        index_type,
        recall_target,
        checkpoint_in=directory.path,
        tuning_queries=tuningqueries.given(directory.path),
    )
    settings = directory.settings.with_changes(
        transform=spec.kind.value,
        dims_requested=spec.dims,
        power=spec.effective_power,
        flow_epochs=spec.epochs,
        seed=spec.seed,
        index_type=index_type,
        rerank=directory.settings.rerank if rerank is None else rerank,
        recall_target=recall_target,
    )
    calibrating = None
    if calibrate and settings.model != NO_MODEL:
        chunker = make_chunker(settings, lambda: directory.encoder)
        calibrating = Calibrating(directory.raw, chunker, directory.encoder.encode)
    published = calibrated_and_published(directory, None, (stats, fitted, vectors), settings, calibrating)
    clear_checkpoint(directory.path)
    return time.perf_counter() - started, published


def recalibrate(directory: IndexDirectory) -> tuple[float, Published]:
    """The fusion weight calibrated again from the documents as they are now, with the transform and vector
    index kept as they are: nothing re-encoded but the calibration's own pseudo-queries and their documents
    (calibration.py), nothing refitted or rebuilt. Returns seconds."""
    started = time.perf_counter()
    settings = directory.settings
    if settings.model == NO_MODEL:
        raise IndexStateError(f"{directory.path} has no model: its queries are vectors, with nothing to fuse")
    chunker = make_chunker(settings, lambda: directory.encoder)
    calibrating = Calibrating(directory.raw, chunker, for_few_texts(directory.encoder))
    parts = (directory.stats(), directory.transform, directory.loaded_vectors())
    kept = dict(
        isotropy=directory.state.isotropy, unchanged_from=directory.generation_dir
    )  # no vector changed
    with one_blas_thread():  # the drift's products
        published = calibrated_and_published(directory, None, parts, settings, calibrating, **kept)
    return time.perf_counter() - started, published


@dataclass(frozen=True)
class Calibrating:
    """What a write's calibration reads and encodes with: the raw vectors, the chunker, the encoder."""

    raw: RawVectors
    chunker: Chunker | None
    encode: Callable[..., np.ndarray]  # texts -> their vectors (pipeline.Encode, or for_few_texts')


def calibrated_and_published(
    directory: IndexDirectory,
    building: NextGeneration | None,
    parts: tuple[RunningStats, Transform, VectorIndex],
    settings: IndexSettings,
    calibrating: Calibrating | None,
    **changes: Any,
) -> Published:
    """The tail of the writes that make vectors or a calibration (add, refit, recalibrate): the fusion weight
    calibrated for this generation's vectors where `calibrating` says with what, then the generation
    (`building`, or the next one begun here, once calibrated) published."""
    stats, transform, vectors = parts
    if calibrating is not None:
        raw, chunker, encode = calibrating.raw, calibrating.chunker, calibrating.encode
        changes["calibration"] = calibrated(directory, settings, transform, vectors, raw, chunker, encode)
        log.info("calibrated")
    if building is not None:
        return _publish(directory, building, stats, transform, vectors, settings, **changes)
    with directory.generations.next(directory.manifest) as begun:
        return _publish(directory, begun, stats, transform, vectors, settings, **changes)


def _publish(
    directory: IndexDirectory,
    building: NextGeneration,
    stats: RunningStats,
    transform: Transform,
    vectors: VectorIndex,
    settings: IndexSettings,
    **changes: Any,
) -> Published:
    manifest = publish(
        directory.generations, building, directory.state, settings, stats, transform, vectors, **changes
    )
    return Published(manifest, transform, vectors)
