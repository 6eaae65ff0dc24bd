"""The second half of a folder's sync (ingest/sync.py finds the changes), run under the writer lock after the
new and changed files' documents are added: remove the documents a changed file no longer gives and, with
prune, those of the files gone, then record the files as read. Documents go first and the records after, so a
crash in between leaves files unrecorded, read again next time (their documents then found unchanged), never
recorded with documents that were not written."""

from __future__ import annotations

from dataclasses import dataclass

from ..ingest.pipeline import AddReport
from ..ingest.sync import FolderChanges, still_stored
from . import writes
from .directory import IndexDirectory


@dataclass(frozen=True)
class SyncReport:
    """Files added, changed, unchanged and gone; the documents removed (a changed file's vanished ids, and the
    gone files' with prune); the add's own report (None when nothing was added)."""

    added: int
    changed: int
    unchanged: int
    gone: int
    removed: int
    pruned: bool
    add: AddReport | None
    unchanged_documents: int  # the unchanged files' (not read again)
    seconds: float

    @classmethod
    def of(
        cls, changes: FolderChanges, removed: int, pruned: bool, add: AddReport | None, seconds: float
    ) -> SyncReport:
        files = (len(changes.added), len(changes.changed), changes.unchanged, len(changes.gone))
        return cls(*files, removed, pruned, add, changes.unchanged_documents, seconds)


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
