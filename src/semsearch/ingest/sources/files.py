"""Document files as a source: one file, or a directory walked recursively. A file's id is its path relative to
the directory given (POSIX separators; a single file: its name), its title its own (else the file name), its
metadata `path` (as reached from the argument), `type`, `size`, `modified` and what the file carries (Markdown's
front matter); its sections place every passage in the file. Files are parsed in a pool of processes, a
bounded number ahead of the reader, so they are parsed while the documents before them are encoded."""

from __future__ import annotations

import datetime
import os
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from itertools import chain, islice
from multiprocessing import get_context
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

from ...documents import Document
from ...errors import DataError
from ..ocr import OCR_KINDS, TEXT_LAYERS_ONLY, Extraction
from ..ocr.progress import pool_reports
from ..reachable import check_id
from .base import Entry, Place, Source
from .fields import check_values
from .formats import DOCUMENT_KINDS, LIBRARIES, MISSING_EXTRA, Unreadable, kind_of, parser

MAX_FILE_BYTES = 64 << 20  # a document file larger than this is refused (a table or JSONL file is streamed)
# a scan's pages are pictures: a PDF or image file may be this large (its pages are decoded one at a time)
MAX_PICTURES_BYTES = 1 << 30
HEAD_BYTES = 4096  # what is read to tell a file's kind by its content
PARSE_WORKERS = max(1, min(4, os.cpu_count() or 1))
POOL_FROM = 32  # fewer light files than this are parsed in this process (a pool costs more than it saves)
# Kinds slow to parse (a PDF's pages, OCR): one such file among the first sends them all to the pool, so the
# encoder runs beside their parsing whatever their count
HEAVY_KINDS = frozenset({"pdf", "image", "docx"})
AHEAD_PER_WORKER = 8  # files parsed or waiting, ahead of the reader, per worker: bounds the memory they hold
FILES_A_TRIP = 4  # files a worker is sent at once: each trip costs the reader and the worker (10% of the CPU)


@dataclass(frozen=True)
class FileTask:
    path: str  # to open
    id: str  # relative to the directory given
    shown: str  # as the user reaches it: metadata `path` and messages
    kind: str
    extraction: Extraction = TEXT_LAYERS_ONLY  # how its text is extracted (OCR)


class FileRead(NamedTuple):
    """What a worker gives back of one file: ("doc", Document) or ("error", reason), and the pages OCR recognized
    and found blank in a file with text (named by the ingest, not kept in the document's metadata)."""

    outcome: str
    value: Any
    blank_pages: tuple[int, ...] = ()


def read_document(task: FileTask) -> FileRead:
    """One file read and parsed; run in a worker process."""
    try:
        with open(task.path, "rb") as handle:
            info = os.fstat(handle.fileno())
            limit = (
                MAX_PICTURES_BYTES
                if task.extraction.recognizes and task.kind in OCR_KINDS
                else MAX_FILE_BYTES
            )
            if info.st_size > limit:
                return FileRead("error", f"larger than {limit >> 20} MiB ({info.st_size} bytes)")
            data = handle.read()
    except OSError as error:
        return FileRead("error", f"cannot read: {error.strerror or error}")
    try:
        parsed = parser(task.kind, task.extraction)(data, task.shown)
    except Unreadable as error:
        return FileRead("error", str(error))
    except ImportError as error:
        if (error.name or "").startswith("semsearch"):
            raise  # our own code, not a missing parser
        return FileRead("error", MISSING_EXTRA.format(kind=task.kind))
    except Exception as error:  # a parser's own failure on a damaged file: its reason, one line
        reason = str(error).splitlines()[0] if str(error) else type(error).__name__
        return FileRead("error", f"cannot be read as {task.kind}: {reason}")
    if not parsed.text.strip():
        return FileRead("error", "no text")
    modified = datetime.datetime.fromtimestamp(info.st_mtime, datetime.timezone.utc)
    facts = {
        "path": task.shown,
        "type": task.kind,
        "size": info.st_size,
        "modified": modified.replace(tzinfo=None).isoformat(timespec="seconds"),
    }
    name = PurePosixPath(task.id).name
    try:  # what a front matter holds must be storable and filterable as a JSON line's fields are
        check_values(parsed.metadata, "metadata")
        check_id(task.id, "id")
    except DataError as error:
        field = f" (field {error.field!r})" if error.field and error.field != "metadata" else ""
        return FileRead("error", f"{error.reason}{field}")
    document = Document(
        id=task.id,
        text=parsed.text,
        title=(parsed.title or "").strip() or name,
        metadata={**parsed.metadata, **facts},  # the file's own facts win over a front matter's fields
        sections=tuple(parsed.sections) or None,
    )
    return FileRead("doc", document, parsed.blank_pages)


def read_documents(tasks: list[FileTask]) -> list[FileRead]:
    return [read_document(task) for task in tasks]


def parsed_in_order(
    tasks: Iterable[FileTask], workers: int = PARSE_WORKERS
) -> Iterator[tuple[FileTask, FileRead]]:
    """Each task with read_document's result, in the tasks' order, as the results come: from a pool of
    `workers` processes when there are at least POOL_FROM files or one of HEAVY_KINDS among the first, at most
    AHEAD_PER_WORKER a worker ahead of the reader (a slow reader, the encoder, holds back the parsing instead
    of piling up parsed files)."""
    tasks = iter(tasks)
    first = list(islice(tasks, POOL_FROM))
    light = not any(task.kind in HEAVY_KINDS for task in first)
    if (len(first) < POOL_FROM and light) or workers < 2:
        for task in chain(first, tasks):  # every task (one core: more than POOL_FROM files too)
            yield task, read_document(task)
        return
    context = get_context("forkserver")
    # The workers fork from a server that has imported this module (and NumPy) and the parsers of the first
    # files' kinds once, not each worker on its own (a second of CPU on a short folder); no effect once this
    # process's server runs. A library that is not installed is passed over (the file then says so).
    libraries = sorted({name for task in first for name in LIBRARIES.get(task.kind, ())})
    context.set_forkserver_preload(["__main__", __name__, *libraries])
    with pool_reports(context) as reporting:  # the pages the workers recognize, to the ingest's bar
        pool = ProcessPoolExecutor(workers, mp_context=context, **reporting)
        pending: deque[tuple[list[FileTask], Future]] = deque()
        ahead = 0  # files submitted and not yet handed to the reader
        try:
            rest = chain(first, tasks)
            while batch := list(islice(rest, FILES_A_TRIP)):
                pending.append((batch, pool.submit(read_documents, batch)))
                ahead += len(batch)
                if ahead >= workers * AHEAD_PER_WORKER:
                    done, future = pending.popleft()
                    ahead -= len(done)
                    yield from zip(done, future.result())
            while pending:
                done, future = pending.popleft()
                yield from zip(done, future.result())
        finally:  # the reader stopped early (an error, a refusal): what is queued is not parsed
            pool.shutdown(wait=True, cancel_futures=True)


class FilesSource(Source):
    """Document files (of the kinds in formats/), each one document. Subclasses list the files."""

    rereadable = False
    extraction = TEXT_LAYERS_ONLY
    walked = True  # files met in a walk: a picture no engine reads is listed, not refused (one named is)

    def tasks(self) -> Iterator[FileTask | None]:  # None: a file passed over (no known kind)
        raise NotImplementedError

    def task(self, path: str, relative: str, shown: str, kind: str | None) -> FileTask | None:
        """The task of reading a file, None if it is passed over: of no known kind, or a picture with --ocr
        never (as before OCR); a picture with no engine to read it is listed in `needs_ocr`."""
        if (
            kind is None
            or kind not in DOCUMENT_KINDS
            or (kind == "image" and not self.extraction.wants_engine)
        ):
            return None
        return FileTask(path, relative, shown, kind, self.extraction)

    def entries(self) -> Iterator[Entry]:
        self.ignored = 0
        for task, (outcome, value, blank) in parsed_in_order(self._kept(self.tasks())):
            if blank:
                self.blank_pages.append((task.shown, blank))
            yield Place(task.shown), value if outcome == "doc" else DataError(value, path=task.shown)

    def planned(self) -> Iterator[Entry]:
        """A document per file with its id and no text, parsing nothing (what Corpus.check reads)."""
        self.ignored = 0
        for task in self._kept(self.tasks()):
            yield Place(task.shown), Document(id=task.id, text="")

    def _kept(self, tasks: Iterable[FileTask | None]) -> Iterator[FileTask]:
        self.needs_ocr, self.blank_pages = [], []
        for task in tasks:
            if task is None:
                self.ignored += 1
            elif task.kind == "image" and not task.extraction.recognizes and self.walked:
                self.needs_ocr.append(task.shown)
            else:
                yield task


class FileSource(FilesSource):
    """One document file named on the command line: its id is its name."""

    walked = False

    def __init__(self, path: Path, kind: str, extraction: Extraction = TEXT_LAYERS_ONLY):
        super().__init__(path)
        self.path, self.kind, self.extraction = path, kind, extraction

    def tasks(self) -> Iterator[FileTask | None]:
        yield self.task(str(self.path), self.path.name, self.path.as_posix(), self.kind)


class DirectorySource(FilesSource):
    """The files under a directory, recursively, in a stable order: hidden files and directories and what a
    `.gitignore` on the way names are left out unless `hidden` / `no_ignore`; `include` / `exclude` are globs
    as .gitignore writes them (`*.md`, `drafts/`, `docs/**/*.html`) on the path relative to the directory.
    Symbolic links are followed, a directory reached twice (a link loop) read once. Tables and JSONL files
    inside are read as their own sources (sources/__init__.py)."""

    def __init__(
        self,
        path: Path,
        include: Sequence[str] = (),
        exclude: Sequence[str] = (),
        hidden: bool = False,
        no_ignore: bool = False,
        tables: Any = None,
        extraction: Extraction = TEXT_LAYERS_ONLY,
    ):
        super().__init__(path)
        self.extraction = extraction
        self.root, self.include, self.exclude = path, list(include), list(exclude)
        self.hidden, self.no_ignore = hidden, no_ignore
        self.tables = tables  # makes the source of a table or JSONL file met in the walk

    def files(self) -> Iterator[tuple[Path, str, str | None]]:
        """(file, its path relative to the root, its kind or None) for each file the walk keeps."""
        import pathspec

        include = pathspec.GitIgnoreSpec.from_lines(self.include) if self.include else None
        exclude = pathspec.GitIgnoreSpec.from_lines(self.exclude)
        seen: set[tuple[int, int]] = set()
        ignores: list[tuple[str, Any]] = []  # (directory relative to the root, its .gitignore)

        def ignored(relative: str, is_dir: bool) -> bool:
            probe = relative + "/" if is_dir else relative
            if exclude.match_file(probe):
                return True
            for base, spec in ignores:
                if (not base or relative.startswith(base + "/")) and spec.match_file(
                    probe[len(base) + 1 if base else 0 :]
                ):
                    return True
            return False

        def walk(directory: Path, relative: str) -> Iterator[tuple[Path, str, str | None]]:
            try:
                info = directory.stat()
            except OSError:
                return
            if (info.st_dev, info.st_ino) in seen:
                return  # a link back to a directory already walked
            seen.add((info.st_dev, info.st_ino))
            pushed = False
            if not self.no_ignore and (directory / ".gitignore").is_file():
                try:
                    lines = (
                        (directory / ".gitignore").read_text(encoding="utf-8", errors="replace").splitlines()
                    )
                except OSError:
                    lines = []
                ignores.append((relative, pathspec.GitIgnoreSpec.from_lines(lines)))
                pushed = True
            try:
                children = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError as error:
                raise DataError(f"cannot read: {error.strerror or error}", path=directory) from None
            for child in children:
                if not self.hidden and child.name.startswith("."):
                    continue
                child_relative = f"{relative}/{child.name}" if relative else child.name
                try:
                    is_dir = child.is_dir()  # follows links
                except OSError:
                    continue
                if ignored(child_relative, is_dir):
                    continue
                if is_dir:
                    yield from walk(Path(child.path), child_relative)
                elif include is None or include.match_file(child_relative):
                    yield Path(child.path), child_relative, _kind(Path(child.path))
            if pushed:
                ignores.pop()

        yield from walk(self.root, "")

    def shown(self, relative: str) -> str:
        return (PurePosixPath(self.root.as_posix()) / relative).as_posix()

    def tasks(self) -> Iterator[FileTask | None]:
        for path, relative, kind in self.files():
            yield self.task(str(path), relative, self.shown(relative), kind)

    def entries(self) -> Iterator[Entry]:
        yield from self._with_tables(super().entries())

    def planned(self) -> Iterator[Entry]:
        yield from self._with_tables(super().planned())

    def _with_tables(self, documents: Iterator[Entry]) -> Iterator[Entry]:
        """The document files' entries, then the tables and JSONL files of the walk (read whole each time)."""
        yield from documents
        ignored = self.ignored
        if self.tables is not None:
            for _, relative, kind in self.files():
                if kind is not None and kind not in DOCUMENT_KINDS:
                    ignored -= 1
                    yield from self.tables(Path(self.shown(relative)), kind).entries()
        self.ignored = ignored


def _kind(path: Path) -> str | None:
    try:
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        head = b""  # unreadable: told by its suffix, and reading it says why
    return kind_of(path.name, head)
