"""Keeping an index in step with a folder: which of its files are new, changed, unchanged or gone since the
folder was last ingested, read from the `files` table (storage/synced.py), and the documents to add.

The rules (docs/reference.md, "Sync"): a file is unchanged when its size and modification time are as recorded
(it is not read), or when its bytes hash as recorded (it is read, not parsed; the new time is recorded): an mtime
change alone costs no parsing and no encoding. Otherwise it is parsed again and its documents replace the old
ones (an id it no longer gives is removed with it). A file recorded but no longer found is gone: its documents
are removed only with --prune, and only those still as that file's ingest stored them (an id since replaced from
another folder or another corpus is not the file's any more). A file changed within UNSURE_NS of the scan may
change again within the same tick of the file system's clock unseen: it is recorded as unsure, and read again
next time."""

from __future__ import annotations

import hashlib
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from ..documents import Document
from ..errors import DataError
from ..storage.store import DocumentStore
from ..storage.synced import UNSURE_TIME, FileRecord

UNSURE_NS = 2_000_000_000  # FAT's clock ticks in 2 s; ext4 and APFS in nanoseconds, NTFS in 100 ns
HASH_BLOCK = 1 << 20


class Folder(Protocol):
    """A folder's documents: its files (relative POSIX path, path), and each one's documents."""

    root: Path  # absolute

    def files(self) -> Iterable[tuple[str, Path]]: ...

    def read(self, relative: str, path: Path) -> list[Document]:
        """The file's documents; a DataError naming the file and why when it cannot be read."""
        ...


@dataclass
class FolderChanges:
    """What a folder's scan found against what its last ingest recorded."""

    root: str
    added: list[str] = field(default_factory=list)  # relative paths of files not recorded before
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    gone: list[FileRecord] = field(default_factory=list)  # recorded, no longer in the folder
    documents: list[Document] = field(default_factory=list)  # of the new and changed files
    records: list[FileRecord] = field(default_factory=list)  # to record once the documents are written
    stale: dict[str, str] = field(default_factory=dict)  # id -> hash: a changed file's ids it no longer gives
    refused: list[DataError] = field(default_factory=list)  # files that could not be read (left as they were)

    prunable: list[str] = field(
        default_factory=list
    )  # ids of the gone files' documents still as they left them

    @property
    def gone_documents(self) -> dict[str, str]:
        """id -> stored hash of the gone files' documents (what --prune removes, if still so stored)."""
        return {doc_id: digest for record in self.gone for doc_id, digest in record.documents.items()}

    @property
    def gone_paths(self) -> list[str]:
        return [record.path for record in self.gone]


def file_hash(path: Path) -> str:
    digest = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as handle:
        while block := handle.read(HASH_BLOCK):
            digest.update(block)
    return digest.hexdigest()


def scan(
    folder: Folder, store: DocumentStore, *, parse: bool = True, on_read: Callable[[int], None] | None = None
) -> FolderChanges:
    """Compare the folder with what the store recorded of it; parse the new and changed files (only sort them
    without `parse`, for a dry run). A file that cannot be read is refused (its DataError kept) and left as
    recorded."""
    root = str(folder.root)
    recorded = store.recorded_files(root)
    changes = FolderChanges(root)
    started = time.time_ns()
    seen: set[str] = set()
    maybe_same: list[tuple[str, Path, FileRecord]] = []  # size and time as recorded: confirmed below
    for relative, path in folder.files():
        seen.add(relative)
        old = recorded.get(relative)
        try:
            status = path.stat()
            if old is not None and (old.size, old.mtime_ns) == (status.st_size, status.st_mtime_ns):
                maybe_same.append((relative, path, old))
                continue
            digest = file_hash(path)
        except OSError as error:
            changes.refused.append(DataError(f"cannot read: {error.strerror or error}", path=path))
            continue
        when = status.st_mtime_ns if status.st_mtime_ns < started - UNSURE_NS else UNSURE_TIME
        if old is not None and old.hash == digest:
            maybe_same.append(
                (relative, path, FileRecord(relative, status.st_size, when, digest, old.documents))
            )
            continue
        _parse(
            folder, changes, relative, path, FileRecord(relative, status.st_size, when, digest), old, parse
        )
        if on_read:
            on_read(1)
    stored = store.existing_ids([doc_id for _, _, r in maybe_same for doc_id in r.documents])
    for relative, path, record in maybe_same:
        if all(stored.get(doc_id, (0, None))[1] == digest for doc_id, digest in record.documents.items()):
            changes.unchanged += 1
            if record != recorded[relative]:
                changes.records.append(record)  # the new time, or no longer unsure
        else:  # its documents were deleted or replaced since: read it again
            _parse(folder, changes, relative, path, record, recorded[relative], parse)
        if on_read:
            on_read(1)
    changes.gone = [record for relative, record in recorded.items() if relative not in seen]
    changes.prunable = sorted(still_stored(store, changes.gone_documents))
    return changes


def still_stored(store: DocumentStore, documents: dict[str, str]) -> dict[str, int]:
    """id -> pk of those documents (id -> content hash) stored with that very hash."""
    stored = store.existing_ids(list(documents))
    return {doc_id: pk for doc_id, (pk, digest) in stored.items() if documents[doc_id] == digest}


def _parse(
    folder: Folder,
    changes: FolderChanges,
    relative: str,
    path: Path,
    record: FileRecord,
    old: FileRecord | None,
    parse: bool,
) -> None:
    try:
        documents = folder.read(relative, path) if parse else []
    except DataError as error:
        changes.refused.append(error)
        return
    (changes.added if old is None else changes.changed).append(relative)
    changes.documents += documents
    ids = {doc.id: doc.content_hash for doc in documents}
    changes.records.append(FileRecord(relative, record.size, record.mtime_ns, record.hash, ids))
    if old is not None:
        changes.stale.update({doc_id: h for doc_id, h in old.documents.items() if doc_id not in ids})
