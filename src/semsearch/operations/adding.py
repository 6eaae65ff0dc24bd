"""The writes that add documents: an add's steps (Adding: encode and store, derive the vectors, calibrate,
publish), as the facade asks for it under the writer lock, then a refit where the refit policy says, or under "auto" a calibration again where the recorded one is stale; and a
corpus's ingest: its vectors' width checked, what a new index keeps of an export, its tuning queries kept, the
encoding where the cluster is, and its document files recorded for `serve` (ingest/recordfiles.py)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Iterator
from dataclasses import replace
from functools import partial
from typing import Any

from ..documents import Document
from ..errors import DataError
from ..ingest import build, exported
from ..ingest.ahead import read_ahead
from ..ingest.creation import make_chunker
from ..ingest.distributed import Executor, InProcess, Job, executor_for
from ..ingest.documents import Corpus
from ..ingest.exported import Restored
from ..ingest.pipeline import (
    STREAMED_FIRST_PARTITION,
    Added,
    AddReport,
    Progress,
    add_documents,
    fidelity_sample,
)
from ..ingest.recordfiles import record_document_files
from ..ingest.resume import resume_points
from ..ingest.vectorfiles import keep_tuning_queries
from ..retrieval.calibration import Calibration
from ..retrieval.calibration_age import age, aged
from ..retrieval.vectorindex import VectorIndex
from ..settings import NO_MODEL, Quantize, RefitPolicy, TransformSpec
from ..storage import tuningqueries
from ..storage.buildcheckpoint import clear_checkpoint
from ..storage.generations import NextGeneration
from ..storage.manifest import IndexState
from ..storage.rawspool import SegmentWriter
from ..storage.rawvectors import RawVectors, Segment
from ..storage.resumecache import ResumeCache
from ..transforms import Transform
from . import writes
from .calibrating import ready_renewal
from .directory import IndexDirectory, Published
from .ingestoptions import IngestOptions
from .writes import Calibrating, calibrated_and_published

# the stages of an add and their seconds, at INFO (benchmarks/ten_million.py)
log = logging.getLogger(__name__)


def ingest(
    directory: IndexDirectory,
    corpus: Corpus,
    options: IngestOptions,
    progress: Progress | None = None,
    resumable: bool = False,
) -> AddReport:
    """Add the documents of a corpus, validated whole before anything is written (`resumable`: a first ingest
    no reader sees keeps resume points: ingest/first.py)."""
    width, dim = corpus.check().vector_width, directory.settings.encoder_dim
    if corpus.export:
        exported.check_model(corpus.export, directory.settings, str(corpus.path))
    if options.tuning_queries is not None:  # kept before the build that tunes on them
        keep_tuning_queries(directory.path, options.tuning_queries, dim)
    if width is not None and width != dim:
        where = dict(path=corpus.vectors) if corpus.vectors else dict(path=corpus.path, line=1)
        raise DataError(f"vectors of width {width}, expected {dim}", field=corpus.fields.vector, **where)
    count, refit = directory.state.count, options.refit
    restored = exported.restored(corpus, count, directory.settings, options.recalibrate, refit)
    how = dict(restored=restored, streamed=corpus.streamed, resume_from=corpus if resumable else None)
    # a cluster that does not answer is an error after `wait`
    with executor_for(options.cluster, directory.wait) as executor, directory.writing():
        report = add_locked(directory, corpus.documents, progress, refit, executor, **how)
        record_document_files(directory.store, corpus.source)  # so that `serve` serves them
    return report


def add(
    directory: IndexDirectory,
    documents: Callable[[], Iterator[Document]],
    progress: Progress | None,
    refit: RefitPolicy | str,
) -> AddReport:
    with directory.writing():
        return add_locked(directory, documents, progress, refit, None)


def add_locked(
    directory: IndexDirectory,
    documents: Callable[[], Iterator[Document]],
    progress: Progress | None,
    refit: RefitPolicy | str,
    executor: Executor | None,
    **how: Any,
) -> AddReport:
    """The add (`how`: store_and_publish's restored, streamed, resume_from), then a refit if `refit` says (which
    calibrates again), else under "auto" a calibration again where the recorded one is stale."""
    refit, restored = RefitPolicy.parse(refit, "refit"), how.get("restored")
    done, published = store_and_publish(directory, documents(), progress, executor, **how)
    if published is not None:
        directory.take_up(published)
    kept = restored.parts if restored and published else ()
    report, drift = done.report(restored=kept), directory.state.drift
    if report.added and refit.due(drift) and not report.young:
        refit_locked(directory, build.refit_spec(directory.settings, None, None, None, None, None), None)
        return replace(report, refitted=True, drift=drift, restored=())  # both made again
    if report.added and refit is RefitPolicy.AUTO and calibration_stale(directory.state):
        recalibrate_locked(directory)
        return replace(report, drift=drift, recalibrated=True, restored=report.kept("calibration"))
    return replace(report, drift=drift)


def refit_locked(
    directory: IndexDirectory, spec: TransformSpec, index_type: str | None, *tuning: Any
) -> float:
    directory.require_fitted()
    seconds, published = writes.refit(directory, spec, index_type, *tuning)
    directory.take_up(published)
    return seconds


def recalibrate_locked(directory: IndexDirectory) -> float:
    directory.require_fitted()
    seconds, published = writes.recalibrate(directory)
    directory.take_up(published)
    return seconds


def calibration_stale(state: IndexState) -> bool:
    """Whether the recorded calibration is stale: more than STALE_SHARE of the documents it was made on changed
    since (calibration_age.py)."""
    recorded = age(state.calibration)
    return recorded is not None and recorded.stale


def store_and_publish(
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
    run = Adding(directory, documents, progress, executor or InProcess(), streamed, resume_from)
    try:
        with directory.generations.next(directory.manifest) as building:
            done = run.store()
            if done.added == 0:
                run.writer.discard()
                return done, (run.republished(building) if done.moved else None)
            published = run.derived_and_published(building, done, restored)
    except BaseException:
        run.abandon()
        raise
    run.finish(published)
    return done, published


class Adding:
    """One add, a step a method: the encoding set up (resume points taken up, the job, the raw segment
    writer), the documents stored, the vectors derived (fitted anew or kept), the calibration, then the
    generation published and what the add kept for a crash cleared."""

    def __init__(
        self,
        directory: IndexDirectory,
        documents: Iterable[Document],
        progress: Progress | None,
        executor: Executor,
        streamed: bool,
        resume_from: Corpus | None,
    ):
        self.directory, self.progress, self.executor, self.streamed = directory, progress, executor, streamed
        self.settings = settings = directory.settings
        self.state = state = directory.state
        self.stats, self.start = directory.stats(), Added(next_pk=state.next_pk)
        self.resume_from = resume_from
        self.points = resume_points(directory.path, resume_from, state.count, directory.store)
        if self.points is not None:
            documents, self.stats, self.start = self.points.taken_up(
                documents, self.stats, self.start, progress
            )
        self.cache = ResumeCache(directory.path, settings.encoder_dim)
        self.job = Job(
            settings,
            encode=None if settings.model == NO_MODEL else directory.encoder.encode,
            chunker=make_chunker(settings, lambda: directory.encoder),
            cache=self.cache,
            progress=progress,
            path=directory.path,
        )
        kept_rows = None if self.points is None else self.start.passages  # a resumable spool: its rows kept
        self.writer = SegmentWriter(
            directory.path, state.next_pk, settings.encoder_dim, settings.raw_precision, kept_rows
        )
        if streamed:  # the next partition's files parsed while this one is encoded
            documents = read_ahead(documents, executor.partition_docs)
        self.documents = documents
        self.fidelity: list[Callable[[], dict[str, Any]]] = []
        self.measure_fidelity = (
            self.job.encode is not None
            and settings.quantize != Quantize.NONE
            and state.quantize_fidelity is None
        )

    def store(self) -> Added:
        """The documents encoded (where the executor runs) and stored, their raw vectors written."""
        points, directory = self.points, self.directory
        return add_documents(
            self.documents,
            store=directory.store,
            raw=directory.raw,
            stats=self.stats,
            writer=self.writer,
            run=lambda partitions: self.executor.run(self.handed_out(partitions), self.job),
            first_pk=self.state.next_pk,
            progress=self.progress,
            partition_docs=self.executor.partition_docs,
            first_partition=STREAMED_FIRST_PARTITION if self.streamed else None,
            done=self.start,
            stored=None if points is None else partial(points.reached, self.writer, self.stats),
            repeated=None if points is None else self.resume_from.repeat_refused,
        )

    def handed_out(self, partitions: Iterable[list[Document]]) -> Iterator[list[Document]]:
        """The partitions; once the last is handed to the executor, the int8 fidelity check on the first one's
        texts is: here it runs after the encoding, before the index is built (its fp32 encoder does not come on
        top of the index); a cluster queues it behind the partitions, for the first worker left idle."""
        first: list[Document] = []
        for docs in partitions:
            first = first or docs
            yield docs
        if self.measure_fidelity and (sample := fidelity_sample(first, self.job.chunker)):
            self.fidelity.append(self.executor.fidelity(sample, self.job))

    def republished(self, building: NextGeneration) -> Published:
        """Only metadata or places changed: the same vectors, in a generation of its own (readers that cache
        by generation see the new rows)."""
        directory, state = self.directory, self.state
        keep = dict(calibration=state.calibration, isotropy=state.isotropy)
        transform, vectors = directory.transform, directory.loaded_vectors()
        return calibrated_and_published(
            directory, building, (self.stats, transform, vectors), self.settings, None, **keep
        )

    def derived_and_published(
        self, building: NextGeneration, done: Added, restored: Restored | None
    ) -> Published:
        """The transform and vector index for the stored rows, the calibration, then the generation."""
        log.info("stored %d documents, %d passages", done.added, done.passages)
        state, settings = self.state, self.settings
        if self.points is not None:
            self.points.reached(self.writer, self.stats, done, last=True)
        done.refitted = state.count > 0 and build.young(settings, state.rows)
        segments = Segment.all_of(state.segments) + [self.writer.finish()]
        log.info("raw segment written")
        # not mapped: the build's and calibration's scattered reads would keep whole segments in the RSS
        raw = RawVectors(self.directory.path, segments, settings.encoder_dim, mapped=False)
        if state.count == 0 or done.refitted:  # first or young: fit on all documents, index all
            transform, vectors = self.fitted(raw, restored)
        else:  # keep the transform so the stored vectors stay valid
            transform, vectors = self.extended(raw, segments, done)
        log.info("vector index built")
        changes: dict[str, Any] = dict(segments=tuple(s.to_json() for s in segments), next_pk=done.next_pk)
        if self.fidelity:
            changes["quantize_fidelity"] = self.fidelity[0]()
        calibrate = None
        if (calibration := restored_part(restored, "calibration", state)) is not None:
            changes["calibration"] = calibration
        elif self.job.encode is not None and (
            state.count == 0 or done.refitted or Calibration.from_json(state.calibration) is None
        ):
            calibrate = Calibrating(raw, self.job.chunker, self.executor.encoder(self.job))
        else:
            changes["calibration"] = aged(state.calibration, done.added)
        if self.points is not None:
            self.points.finish()
        parts = (self.stats, transform, vectors)
        return calibrated_and_published(self.directory, building, parts, settings, calibrate, **changes)

    def fitted(self, raw: RawVectors, restored: Restored | None) -> tuple[Transform, VectorIndex]:
        """A first or young index: the transform fitted on every row (or its export's), the index built on all."""
        state, settings, directory = self.state, self.settings, self.directory
        live = directory.store.vector_pks()
        transform = restored_part(restored, "transform", state)
        graph = restored_part(restored, "graph", state)
        if transform is None:
            transform = build.fit(settings.spec, self.stats, raw, live)
            log.info("transform fitted")
        vectors = build.build_vectors(  # ivf, pq: trained here, filled where the executor encodes
            transform,
            raw,
            live,
            settings.index_type,
            settings.recall_target,
            None if isinstance(self.executor, InProcess) else self.executor.add_blocks,
            checkpoint_in=directory.path,
            tuning_queries=tuningqueries.given(directory.path),
            code_ranges=restored_part(restored, "codes", state),
            blocks=None if graph is None else graph.blocks,
            trained_lists=restored_part(restored, "lists", state),
        )
        if graph is not None and vectors.graph_runs() and vectors.blocks == graph.blocks:
            # its source's graph, made again: searched as its source searches it
            vectors.with_tuning(graph.search_params, graph.measured_recall)
        return transform, vectors

    def extended(
        self, raw: RawVectors, segments: list[Segment], done: Added
    ) -> tuple[Transform, VectorIndex]:
        """The transform kept, the vector index given the new rows (and rid of the replaced ones)."""
        directory, settings = self.directory, self.settings
        transform = directory.transform
        vectors = build.after_add(
            transform,
            directory.loaded_vectors(),
            raw=raw,
            new_rows=RawVectors(directory.path, segments[-1:], settings.encoder_dim),
            live=directory.store.vector_pks(),
            replaced=done.replaced,
            index_type=settings.index_type,
            recall_target=settings.recall_target,
            tuning_queries=tuningqueries.given(directory.path),
        )
        return transform, vectors

    def abandon(self) -> None:
        if self.points is None:
            self.writer.discard()
        else:  # the spool stays for the resume points (a refused first ingest's directory is removed)
            self.writer.close()

    def finish(self, published: Published) -> None:
        """What the add kept for a crash cleared; a stale calibration's renewal readied while the model runs."""
        directory = self.directory
        self.cache.clear()
        clear_checkpoint(directory.path)
        if self.points is not None:
            self.points.clear()
        encode = self.job.encode
        if encode and (stale := age(published.manifest.state.calibration)) and stale.stale:
            ready_renewal(directory, published, self.job.chunker, self.executor.encoder(self.job))


def restored_part(restored: Restored | None, part: str, state: Any) -> Any:
    """A part of an export a first ingest keeps (None: made here)."""
    return getattr(restored, part) if restored is not None and state.count == 0 else None
