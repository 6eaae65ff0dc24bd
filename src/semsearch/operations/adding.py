"""The writes that add documents, as the facade asks them: an add (writes.add) under the writer lock, then a
refit where the refit policy says, or under "auto" a calibration again where the recorded one is stale; and a
corpus's ingest: its vectors' width checked, what a new index keeps of an export, its tuning queries kept, the
encoding where the cluster is, and its document files recorded for `serve` (ingest/recordfiles.py)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from ..documents import Document
from ..errors import DataError
from ..ingest import build, exported
from ..ingest.distributed import Executor, executor_for
from ..ingest.documents import Corpus
from ..ingest.pipeline import AddReport, Progress
from ..ingest.recordfiles import record_document_files
from ..ingest.vectorfiles import keep_tuning_queries
from ..retrieval.calibration_age import age
from ..settings import RefitPolicy, TransformSpec
from ..storage.manifest import IndexState
from . import writes
from .directory import IndexDirectory
from .ingestoptions import IngestOptions


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
    """The add (`how`: writes.add's restored, streamed, resume_from), then a refit if `refit` says (which
    calibrates again), else under "auto" a calibration again where the recorded one is stale."""
    refit, restored = RefitPolicy.parse(refit, "refit"), how.get("restored")
    done, published = writes.add(directory, documents(), progress, executor, **how)
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
