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
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ..documents import Document
from ..errors import DataError
from ..storage.store import DocumentStore
from ..storage.synced import UNSURE_TIME, FileRecord
from .documents import refusal

UNSURE_NS = 2_000_000_000  # FAT's clock ticks in 2 s; ext4 and APFS in nanoseconds, NTFS in 100 ns
HASH_BLOCK = 1 << 20


class Folder(Protocol):
    """A folder's documents: its files (relative POSIX path, path), and the documents of some of them."""

    root: Path  # absolute

    def files(self) -> Iterable[tuple[str, Path]]: ...

    def extraction_key(self, relative: str) -> str:
        """How the file would be read now (storage/synced.py's FileRecord.extraction): another reads it again."""
        ...

    def read(self, files: Sequence[tuple[str, Path]]) -> Iterator[list[Document] | DataError]:
        """Each file's documents, in order, or the DataError naming it and why it cannot be read."""
        ...


@dataclass
class FolderChanges:
    """What a folder's scan found against what its last ingest recorded."""

    root: str
    added: list[str] = field(default_factory=list)  # relative paths of files not recorded before
    changed: list[str] = field(default_factory=list)
    unchanged: int = 0
    unchanged_documents: int = 0  # the unchanged files' documents (not read again)
    gone: list[FileRecord] = field(default_factory=list)  # recorded, no longer in the folder
    documents: list[Document] = field(default_factory=list)  # of the new and changed files
    records: list[FileRecord] = field(default_factory=list)  # to record once the documents are written
    stale: dict[str, str] = field(default_factory=dict)  # id -> hash: a changed file's ids it no longer gives
    refused: list[DataError] = field(default_factory=list)  # files that could not be read (left as they were)
    # new and changed files not read yet (relative path, path, new record, old record): read_changes reads them
    pending: list[tuple[str, Path, FileRecord, FileRecord | None]] = field(default_factory=list)

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


def scan(folder: Folder, store: DocumentStore, *, parse: bool = True, later: bool = False) -> FolderChanges:
    """Compare the folder with what the store recorded of it, and read (parse) the new and changed files; `later`:
    leave them `pending`, for read_changes to read as the ingest asks for them; without `parse` (a dry run)
    only sort them. A file that cannot be read is refused (its DataError kept) and left as recorded."""
    root = str(folder.root)
    recorded = store.recorded_files(root)
    changes = FolderChanges(root)
    started = time.time_ns()
    seen: set[str] = set()
    maybe_same: list[tuple[str, Path, FileRecord]] = []  # content as recorded: its documents confirmed below
    to_parse: list[tuple[str, Path, FileRecord]] = []
    for relative, path in folder.files():
        seen.add(relative)
        old = recorded.get(relative)
        key = folder.extraction_key(relative)
        try:
            status = path.stat()
            same_reading = old is not None and old.extraction == key
            if (
                old is not None
                and same_reading
                and (old.size, old.mtime_ns) == (status.st_size, status.st_mtime_ns)
            ):
                maybe_same.append((relative, path, old))
                continue
            digest = file_hash(path)
        except OSError as error:
            changes.refused.append(DataError(f"cannot read: {error.strerror or error}", path=path))
            continue
        when = status.st_mtime_ns if status.st_mtime_ns < started - UNSURE_NS else UNSURE_TIME
        record = FileRecord(relative, status.st_size, when, digest, old.documents if old else {}, key)
        (maybe_same if old is not None and same_reading and old.hash == digest else to_parse).append(
            (relative, path, record)
        )
    stored = store.existing_ids([doc_id for _, _, r in maybe_same for doc_id in r.documents])
    for relative, path, record in maybe_same:
        if all(stored.get(doc_id, (0, None))[1] == digest for doc_id, digest in record.documents.items()):
            changes.unchanged += 1
            changes.unchanged_documents += len(record.documents)
            if record != recorded[relative]:
                changes.records.append(record)  # the new time, or no longer unsure
        else:  # its documents were deleted or replaced since: read it again
            to_parse.append((relative, path, record))
    changes.pending = [
        (relative, path, record, recorded.get(relative)) for relative, path, record in to_parse
    ]
    if not parse:
        for _, _, record, old in changes.pending:
            _parsed(changes, record, old, [])
        changes.pending = []
    elif not later:
        changes.documents = list(read_changes(folder, changes))
    changes.gone = [record for relative, record in recorded.items() if relative not in seen]
    changes.prunable = sorted(still_stored(store, changes.gone_documents))
    return changes


def read_changes(folder: Folder, changes: FolderChanges, *, refuse: bool = False) -> Iterator[Document]:
    """The pending files' documents, in order, each file read (parsed: in a pool, ahead of the reader) as they
    are asked for and then counted as added or changed and recorded; a file that cannot be read is kept in
    `refused`, or with `refuse` the rest are read for theirs and the ingest refused (DataError naming all)."""
    pending, changes.pending = changes.pending, []
    read = folder.read([(relative, path) for relative, path, _, _ in pending])
    for (_, _, record, old), documents in zip(pending, read):
        if refuse and isinstance(documents, DataError):
            changes.refused.append(documents)
            changes.refused += [error for error in read if isinstance(error, DataError)]
            raise refusal(changes.refused)
        _parsed(changes, record, old, documents)
        if not isinstance(documents, DataError):
            yield from documents


def still_stored(store: DocumentStore, documents: dict[str, str]) -> dict[str, int]:
    """id -> pk of those documents (id -> content hash) stored with that very hash."""
    stored = store.existing_ids(list(documents))
    return {doc_id: pk for doc_id, (pk, digest) in stored.items() if documents[doc_id] == digest}


def _parsed(
    changes: FolderChanges, record: FileRecord, old: FileRecord | None, documents: list[Document] | DataError
) -> None:
    if isinstance(documents, DataError):
        changes.refused.append(documents)
        return
    (changes.added if old is None else changes.changed).append(record.path)
    changes.documents += documents
    ids = {doc.id: doc.content_hash for doc in documents}
    changes.records.append(
        FileRecord(record.path, record.size, record.mtime_ns, record.hash, ids, record.extraction)
    )
    if old is not None:
        changes.stale.update({doc_id: h for doc_id, h in old.documents.items() if doc_id not in ids})


class DirectoryFolder:
    """A directory source (sources/files.py) as sync reads it: the files its walk keeps that are of a known
    kind; a document file parsed as the source parses it (in a pool of processes when there are many), a
    table or JSONL file met in the walk read whole (a bad row refuses the file). The source's `needs_ocr` and
    `blank_pages` are the last scan's and the files it read."""

    def __init__(self, source: Any):  # a sources.files.DirectorySource
        self.source = source
        self.root = Path(source.root).resolve()
        self.kinds: dict[str, str] = {}

    def files(self) -> Iterator[tuple[str, Path]]:
        from .sources.files import DOCUMENT_KINDS

        source = self.source
        self.kinds = {}
        source.ignored, source.needs_ocr, source.blank_pages = 0, [], []
        for path, relative, kind in source.files():
            task = source.task(str(path), relative, source.shown(relative), kind)
            if task is not None and not task.extraction.recognizes and kind == "image":
                source.needs_ocr.append(task.shown)
                continue
            if kind is None or (task is None and kind in DOCUMENT_KINDS):
                source.ignored += 1
                continue
            self.kinds[relative] = kind
            yield relative, path

    def extraction_key(self, relative: str) -> str:
        return self.source.extraction.key(self.kinds.get(relative))

    def expected(self, pending: Sequence[tuple[str, Any, Any, Any]]) -> int | None:
        """How many documents the pending files give, if known before reading them (not for a table)."""
        from .sources.files import DOCUMENT_KINDS

        kinds = [self.kinds[relative] for relative, *_ in pending]
        return len(kinds) if all(kind in DOCUMENT_KINDS for kind in kinds) else None

    def read(self, files: Sequence[tuple[str, Path]]) -> Iterator[list[Document] | DataError]:
        from .sources.files import DOCUMENT_KINDS, FilesSource, FileTask

        source, kinds = self.source, self.kinds
        tasks = [
            FileTask(str(path), relative, source.shown(relative), kinds[relative], source.extraction)
            for relative, path in files
            if kinds[relative] in DOCUMENT_KINDS
        ]

        class Listed(FilesSource):
            def tasks(self) -> Iterator[FileTask | None]:
                yield from tasks

        listed = Listed(source.name)
        parsed = (item for _, item in listed.entries())
        for relative, _ in files:
            kind = kinds[relative]
            if kind in DOCUMENT_KINDS:
                item = next(parsed)
                # this file's blank pages, if any, now: the reader may stop at any file
                source.blank_pages += listed.blank_pages
                listed.blank_pages.clear()
                yield item if isinstance(item, DataError) else [item]
            else:
                yield _whole(source.tables(Path(source.shown(relative)), kind).entries())


def _whole(entries: Iterable[tuple[Any, Document | DataError]]) -> list[Document] | DataError:
    """A table's or JSONL file's documents, or the first error among them (a repeated id is one)."""
    documents: list[Document] = []
    first: dict[str, Any] = {}
    for place, item in entries:
        if isinstance(item, DataError):
            return item
        if item.id in first:
            message = f"id {item.id!r} appears twice (first at {first[item.id].within()})"
            return DataError(message, field="id", **place.where())
        first[item.id] = place
        documents.append(item)
    return documents
