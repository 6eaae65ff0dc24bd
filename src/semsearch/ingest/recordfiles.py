"""The document files an ingest of files and corpora read (`semsearch ingest manual.pdf`, or files beside
folders), recorded as a folder's sync records its files (table `files`, storage/synced.py) so that `serve`
serves them (server/files.py), and found again for it (`served_at`): each file under its folder's resolved root, with the ids its document got and
their stored content hashes. Recorded unsure (no time, no hash), so a later sync of that folder reads each
once more (its document found unchanged by its content) instead of trusting a record made after the fact."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath
from typing import Any

from ..storage.recordedfiles import recorded_at
from ..storage.store import DocumentStore
from ..storage.synced import UNSURE_TIME, FileRecord
from .sources.base import Sources
from .sources.files import DirectorySource, FileSource


def document_files(source: Any) -> Iterator[tuple[Path, str, str]]:
    """(resolved folder root, path relative to it, document id) of each document file the source reads."""
    if isinstance(source, Sources):
        for part in source.parts:
            yield from document_files(part)
    elif isinstance(source, FileSource):
        for task in source.tasks():
            if task is not None:
                path = Path(task.path).resolve()
                yield path.parent, path.name, task.id
    elif isinstance(source, DirectorySource):
        root = Path(source.root).resolve()
        for task in source.tasks():
            if task is not None:
                yield root, task.id, task.id


def record_document_files(store: DocumentStore, source: Any) -> int:
    """Record the source's document files whose documents are stored; how many."""
    found = list(document_files(source))
    stored = store.existing_ids([doc_id for *_, doc_id in found])
    by_root: dict[str, list[FileRecord]] = {}
    for root, relative, doc_id in found:
        if doc_id in stored:
            size = (root / relative).stat().st_size if (root / relative).exists() else 0
            record = FileRecord(relative, size, UNSURE_TIME, "", {doc_id: stored[doc_id][1]})
            by_root.setdefault(str(root), []).append(record)
    for folder, records in by_root.items():
        store.record_files(folder, records)
    return sum(map(len, by_root.values()))


def served_at(store: DocumentStore, parts: Sequence[str]) -> list[tuple[str, str]]:
    """(root, relative path) of the recorded files the path names, those whose documents are still stored
    as the file's ingest stored them first."""
    tails = {"/".join(parts[cut:]): tuple(parts[:cut]) for cut in range(len(parts))}
    found = []
    for root, relative, documents in recorded_at(store, list(tails)):
        head = tails[relative]
        if not head or PurePosixPath(root).parts[-len(head) :] == head:
            found.append((root, relative, documents))
    stored = store.existing_ids([doc_id for *_, documents in found for doc_id in documents])
    return [
        (root, relative)
        for root, relative, documents in found
        if any(stored.get(doc_id, (0, None))[1] == digest for doc_id, digest in documents.items())
    ]
