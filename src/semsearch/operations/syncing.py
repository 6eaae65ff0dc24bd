"""A folder's sync, as `semsearch ingest DIR` and `Index.ingest(DIR)` run it: each folder scanned against what
its last ingest recorded (ingest/sync.py), then written a folder at a time under the writer lock: the new and
changed files' documents added, the documents a changed file no longer gives and, with prune, those of the
files gone removed, then the files recorded as read. Documents go first and the records after, so a crash in
between leaves files unrecorded, read again next time (their documents then found unchanged), never recorded
with documents that were not written."""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence

from ..documents import Document
from ..errors import DataError
from ..ingest.distributed import Executor, executor_for
from ..ingest.documents import checked, refusal
from ..ingest.pipeline import AddReport, Progress
from ..ingest.sync import DirectoryFolder, FolderChanges, read_changes, scan, still_stored
from ..settings import RefitPolicy
from . import writes
from .adding import add_locked
from .deleting import Preview
from .directory import IndexDirectory
from .ingestoptions import IngestOptions, Listener, SyncReport


def sync_folders(
    directory: IndexDirectory,
    folders: Sequence[DirectoryFolder],
    options: IngestOptions,
    listener: Listener,
    *,
    watching: bool = False,
    empty_ok: bool = False,
) -> tuple[list[SyncReport], list[DataError]]:
    """Scan the folders against the index, then bring the index in step with each; each folder's report and
    the files refused. Unreadable files refuse the whole ingest unless skipped (a watch skips them: they are
    read again at their next change). One folder's files are parsed as they are encoded (a refusal undoes the
    write); several folders' are all read first, so that a refusal in any writes none of them. A folder with
    no file of a known type and none recorded is an error unless `watching` or `empty_ok`."""
    streamed = len(folders) == 1
    scanned = [(folder, scan(folder, directory.store, later=streamed)) for folder in folders]
    if not (watching or empty_ok):
        for folder, changes in scanned:
            refuse_empty(folder, changes)
    refuse = not (options.skip_invalid or watching)
    refused = [error for _, changes in scanned for error in changes.refused]
    if refused and refuse:
        raise refusal(refused)  # a new index's partial directory goes too
    for error in refused:
        listener.skipped(error)
    reports = []
    for folder, changes in scanned:
        if options.prune and changes.prunable:
            plan = Preview(len(changes.prunable), directory.state.count, changes.prunable[:10])
            if plan.needs_confirmation:
                listener.confirm_prune(plan, directory.path)
        known = len(changes.refused)
        stream = read_changes(folder, changes, refuse=refuse) if changes.pending else None
        total = len(changes.documents) if stream is None else folder.expected(changes.pending)
        with listener.encoding(total) as progress:
            report = sync(directory, changes, stream, options.prune, progress, options.refit, options.cluster)
        for error in changes.refused[known:]:  # found as the files were parsed
            listener.skipped(error)
            refused.append(error)
        reports.append(report)
        listener.synced(folder.root, report, directory.state.count, changes.refused)
    return reports, refused


def refuse_empty(folder: DirectoryFolder, changes: FolderChanges) -> None:
    """No file of a known type and none recorded: an error (naming the pictures that need OCR, if any)."""
    found = (changes.added, changes.changed, changes.unchanged, changes.gone, changes.refused)
    if changes.pending or any(found):
        return
    from ..ingest.ocr import needs_ocr_line

    needs = folder.source.needs_ocr
    raise DataError(f"no documents: {needs_ocr_line(needs)}" if needs else "no documents", path=folder.root)


def sync(
    directory: IndexDirectory,
    changes: FolderChanges,
    documents: Iterable[Document] | None = None,
    prune: bool = False,
    progress: Progress | None = None,
    refit: RefitPolicy | str = RefitPolicy.NEVER,
    cluster: Executor | str | int | None = None,
) -> SyncReport:
    """Bring the index in step with one scanned folder, holding the writer lock: the new and changed files'
    documents (`documents`: as `sync.read_changes` parses them; else `changes.documents`) added, checked as
    they pass; a changed file's lost ids, and with `prune` gone files', removed; the files recorded."""
    streamed = documents is not None
    dim = directory.settings.encoder_dim
    stream = checked(changes.documents if documents is None else documents, path=changes.root, dim=dim)
    started, added = time.perf_counter(), None
    with executor_for(cluster, directory.wait) as executor, directory.writing():
        if streamed or changes.documents:
            report = add_locked(directory, lambda: stream, progress, refit, executor, streamed=streamed)
            added = report if report.added or report.unchanged or report.moved else None
        removed = finish(directory, changes, prune)
    return SyncReport.of(changes, removed, prune, added, time.perf_counter() - started)


def finish(directory: IndexDirectory, changes: FolderChanges, prune: bool) -> int:
    """Remove what the sync removes and record the files (the caller holds the writer lock); how many
    documents were removed."""
    doomed = dict(changes.stale)
    if prune:
        doomed.update(changes.gone_documents)
    pks = sorted(still_stored(directory.store, doomed).values())
    if pks:
        directory.take_up(writes.delete(directory, pks))
    directory.store.record_files(changes.root, changes.records, changes.gone_paths if prune else ())
    return len(pks)


def combined(reports: Sequence[SyncReport]) -> AddReport:
    """The add reports of the folders' syncs as one, the unchanged files' documents counted as unchanged; the
    drift the last add left, and whether any refitted or calibrated again."""
    adds = [report.add for report in reports if report.add is not None]
    return AddReport(
        added=sum(add.added for add in adds),
        unchanged=sum(add.unchanged for add in adds) + sum(report.unchanged_documents for report in reports),
        seconds=sum(report.seconds for report in reports),
        replaced=sum(add.replaced for add in adds),
        resumed=sum(add.resumed for add in adds),
        drift=next((add.drift for add in reversed(adds) if add.drift is not None), None),
        refitted=any(add.refitted for add in adds),
        young=any(add.young for add in adds),
        passages=sum(add.passages for add in adds),
        recalibrated=any(add.recalibrated for add in adds),
        moved=sum(add.moved for add in adds),
    )


def planned(folder: DirectoryFolder, directory: IndexDirectory | None) -> tuple[FolderChanges, int]:
    """What a sync of the folder would read and what a prune would remove, nothing parsed or written, with the
    index's count (`directory` None: no index yet, every file new)."""
    if directory is None:
        return FolderChanges(str(folder.root), added=[path for path, _ in folder.files()]), 0
    return scan(folder, directory.store, parse=False), directory.state.count
