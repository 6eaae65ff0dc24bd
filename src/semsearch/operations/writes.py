"""The writes of an index (add, delete, refit), run while its writer lock is held. Each builds the next
generation (generations.py) from the stages (ingest.py, build.py) and returns what was published, which the
facade then takes up (IndexDirectory.take_up)."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from functools import partial
from typing import Any

import numpy as np

from ..documents import Document
from ..encoding.encoder import for_few_texts
from ..errors import IndexStateError
from ..ingest import build
from ..ingest.ahead import read_ahead
from ..ingest.creation import make_chunker
from ..ingest.distributed import Executor, InProcess, Job
from ..ingest.documents import Corpus
from ..ingest.exported import Restored
from ..ingest.pipeline import (
    STREAMED_FIRST_PARTITION,
    Added,
    Progress,
    add_documents,
    fidelity_sample,
)
from ..ingest.resume import resume_points
from ..retrieval.calibration import Calibration
from ..retrieval.calibration_age import age, aged
from ..retrieval.vectorindex import VectorIndex, resolve_index_type
from ..settings import NO_MODEL, Quantize, TransformSpec, check_recall_target
from ..storage import tuningqueries
from ..storage.buildcheckpoint import clear_checkpoint
from ..storage.generations import NextGeneration
from ..storage.manifest import IndexSettings
from ..storage.rawspool import SegmentWriter
from ..storage.rawvectors import RawVectors, Segment
from ..storage.resumecache import ResumeCache
from ..threads import one_blas_thread
from ..transforms import Transform
from ..transforms.stats import RunningStats
from .calibrating import calibrated, ready_renewal
from .directory import IndexDirectory, Published
from .publish import publish

# the stages of a write and their seconds, at INFO (benchmarks/ten_million.py)
log = logging.getLogger(__name__)


def add(
    directory: IndexDirectory,
    documents: Iterable[Document],
    progress: Progress | None,
    executor: Executor | None = None,
    restored: Restored | None = None,
    streamed: bool = False,
    resume_from: Corpus | None = None,
) -> tuple[Added, Published | None]:
    """Encode, count and store the documents not already here unchanged (ingest.add_documents; the `executor`
    encodes, and fills an ivf or pq index built anew: this process by default, or a cluster), then publish a
    generation (None when nothing was added). `restored`: what a new index keeps of the export it is ingested
    from (exported.py) instead of making it: the calibration (made on the same documents) and the transform (as
    its source fitted it); else the documents added count toward the recorded calibration's age
    (calibration_age.py), or a first or young index calibrates.
    Vectors also go to a resume cache as they are encoded: if the process dies, the same ingest run again takes
    them from there instead of encoding them again. `streamed`: the documents are files parsed as they are
    read: a thread reads them a partition ahead of the encoder (ahead.py), and the partitions start smaller
    (pipeline.STREAMED_FIRST_PARTITION), so that the encoder starts before every file is parsed.
    `resume_from`: the corpus of a first ingest into a directory no reader sees, which then keeps resume
    points as it stores (ingest/resume.py), and takes up after the last one (`documents` then unread)."""
    settings, state = directory.settings, directory.state
    stats, start = directory.stats(), Added(next_pk=state.next_pk)
    points = resume_points(directory.path, resume_from, state.count, directory.store)
    if points is not None:
        documents, stats, start = points.taken_up(documents, stats, start, progress)
    cache = ResumeCache(directory.path, settings.encoder_dim)
    executor = executor or InProcess()
    job = Job(
        settings,
        encode=None if settings.model == NO_MODEL else directory.encoder.encode,
        chunker=make_chunker(settings, lambda: directory.encoder),
        cache=cache,
        progress=progress,
        path=directory.path,
    )
    kept_rows = None if points is None else start.passages  # a resumable spool: its rows kept
    writer = SegmentWriter(
        directory.path, state.next_pk, settings.encoder_dim, settings.raw_precision, kept_rows
    )
    if streamed:  # the next partition's files parsed while this one is encoded
        documents = read_ahead(documents, executor.partition_docs)
    fidelity: list[Callable[[], dict[str, Any]]] = []
    measure_fidelity = (
        job.encode is not None and settings.quantize != Quantize.NONE and state.quantize_fidelity is None
    )

    def handed_out(partitions: Iterable[list[Document]]) -> Iterator[list[Document]]:
        """The partitions; once the last is handed to the executor, the int8 fidelity check on the first one's
        texts is: here it runs after the encoding, before the index is built (its fp32 encoder does not come on
        top of the index); a cluster queues it behind the partitions, for the first worker left idle."""
        first: list[Document] = []
        for docs in partitions:
            first = first or docs
            yield docs
        if measure_fidelity and (sample := fidelity_sample(first, job.chunker)):
            fidelity.append(executor.fidelity(sample, job))

    try:
        with directory.generations.next(directory.manifest) as building:
            done = add_documents(
                documents,
                store=directory.store,
                raw=directory.raw,
                stats=stats,
                writer=writer,
                run=lambda partitions: executor.run(handed_out(partitions), job),
                first_pk=state.next_pk,
                progress=progress,
                partition_docs=executor.partition_docs,
                first_partition=STREAMED_FIRST_PARTITION if streamed else None,
                done=start,
                stored=None if points is None else partial(points.reached, writer, stats),
                repeated=None if points is None else resume_from.repeat_refused,
            )
            if done.added == 0:
                writer.discard()
                if not done.moved:
                    return done, None
                # only metadata or places changed: the same vectors, in a generation of its own (readers that
                # cache by generation see the new rows)
                keep = dict(calibration=state.calibration, isotropy=state.isotropy)
                transform, vectors = directory.transform, directory.loaded_vectors()
                return done, _publish(directory, building, stats, transform, vectors, settings, **keep)
            log.info("stored %d documents, %d passages", done.added, done.passages)
            if points is not None:
                points.reached(writer, stats, done, last=True)
            done.refitted = state.count > 0 and build.young(settings, state.rows)
            segments = Segment.all_of(state.segments) + [writer.finish()]
            log.info("raw segment written")
            # not mapped: the build's and calibration's scattered reads would keep whole segments in the RSS
            raw = RawVectors(directory.path, segments, settings.encoder_dim, mapped=False)
            live = directory.store.vector_pks()
            if state.count == 0 or done.refitted:  # first or young: fit on all documents, index all
                transform = restored_part(restored, "transform", state)
                graph = restored_part(restored, "graph", state)
                if transform is None:
                    transform = build.fit(settings.spec, stats, raw, live)
                    log.info("transform fitted")
                vectors = build.build_vectors(  # ivf, pq: trained here, filled where the executor encodes
                    transform,
                    raw,
                    live,
                    settings.index_type,
                    settings.recall_target,
                    None if isinstance(executor, InProcess) else executor.add_blocks,
                    checkpoint_in=directory.path,
                    tuning_queries=tuningqueries.given(directory.path),
                    code_ranges=restored_part(restored, "codes", state),
                    blocks=None if graph is None else graph.blocks,
                    trained_lists=restored_part(restored, "lists", state),
                )
                if graph is not None and vectors.graph_runs() and vectors.blocks == graph.blocks:
                    # its source's graph, made again: searched as its source searches it
                    vectors.with_tuning(graph.search_params, graph.measured_recall)
            else:  # keep the transform so the stored vectors stay valid
                transform = directory.transform
                vectors = build.after_add(
                    transform,
                    directory.loaded_vectors(),
                    raw=raw,
                    new_rows=RawVectors(directory.path, segments[-1:], settings.encoder_dim),
                    live=live,
                    replaced=done.replaced,
                    index_type=settings.index_type,
                    recall_target=settings.recall_target,
                    tuning_queries=tuningqueries.given(directory.path),
                )
            log.info("vector index built")
            changes: dict[str, Any] = dict(
                segments=tuple(s.to_json() for s in segments), next_pk=done.next_pk
            )
            if fidelity:
                changes["quantize_fidelity"] = fidelity[0]()
            if (calibration := restored_part(restored, "calibration", state)) is not None:
                changes["calibration"] = calibration
            elif job.encode is not None and (
                state.count == 0 or done.refitted or Calibration.from_json(state.calibration) is None
            ):
                changes["calibration"] = calibrated(
                    directory, settings, transform, vectors, raw, job.chunker, executor.encoder(job)
                )
            else:
                changes["calibration"] = aged(state.calibration, done.added)
            log.info("calibrated")
            if points is not None:
                points.finish()
            published = _publish(directory, building, stats, transform, vectors, settings, **changes)
    except BaseException:
        if points is None:
            writer.discard()
        else:  # the spool stays for the resume points (a refused first ingest's directory is removed)
            writer.close()
        raise
    cache.clear()
    clear_checkpoint(directory.path)
    if points is not None:
        points.clear()
    if published and job.encode and (stale := age(published.manifest.state.calibration)) and stale.stale:
        ready_renewal(directory, published, job.chunker, executor.encoder(job))
    return done, published


def restored_part(restored: Restored | None, part: str, state: Any) -> Any:
    """A part of an export a first ingest keeps (None: made here)."""
    return getattr(restored, part) if restored is not None and state.count == 0 else None


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
    changes = {}
    if calibrate and settings.model != NO_MODEL:
        chunker = make_chunker(settings, lambda: directory.encoder)
        changes["calibration"] = calibrated(
            directory, settings, fitted, vectors, directory.raw, chunker, directory.encoder.encode
        )
    with directory.generations.next(directory.manifest) as building:
        published = _publish(directory, building, stats, fitted, vectors, settings, **changes)
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
    encode = for_few_texts(directory.encoder)
    transform, vectors = directory.transform, directory.loaded_vectors()
    chunker = make_chunker(settings, lambda: directory.encoder)
    calibration = calibrated(directory, settings, transform, vectors, directory.raw, chunker, encode)
    with (
        directory.generations.next(directory.manifest) as building,
        one_blas_thread(),
    ):  # the drift's products
        published = _publish(
            directory, building, directory.stats(), transform, vectors, settings, calibration=calibration,
            isotropy=directory.state.isotropy, unchanged_from=directory.generation_dir,  # no vector changed
        )  # fmt: skip
    return time.perf_counter() - started, published


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
