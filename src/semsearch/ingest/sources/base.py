"""The one interface every source of documents has: it yields each Document, or the DataError one entry is,
with the place it came from (file, line or row), so a corpus of any kind is validated, skipped and
counted the same way (documents.Corpus)."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...documents import Document
from ...errors import DataError


def file_identity(path: Path) -> list:
    """A file as a resumed ingest checks it is the same: its absolute path, size and modification time."""
    status = path.stat()
    return [str(path.resolve()), status.st_size, status.st_mtime_ns]


@dataclass(frozen=True)
class Place:
    """Where an entry came from, as an error names it: a file and a line (JSONL) or row (a table, 1-based)."""

    path: str | Path | None = None
    line: int | None = None
    row: int | None = None

    def where(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "row": self.row}

    def within(self) -> str:
        """The place inside its file, as `first at ...` says it."""
        return f"line {self.line}" if self.line else f"row {self.row}" if self.row else str(self.path)


Entry = tuple[Place, "Document | DataError"]
BlankPages = tuple[str, tuple[int, ...]]  # a file as messages name it, and its pages OCR found blank


class Source(ABC):
    """Documents from somewhere. `entries` may be called more than once and gives the same entries each time;
    `rereadable` False: reading is costly (files parsed), so a corpus reads them once, as it ingests them,
    and checks first what `planned` knows without parsing.
    `ignored`: files passed over as of no known type (counted after a full read); `needs_ocr`: the pictures
    passed over for want of an OCR engine (named, with the install command); `blank_pages`: (file, page numbers)
    of the files read whose pages include some OCR recognized and found no text on (the back of a sheet)."""

    rereadable = True
    export: dict[str, Any] | None = None  # the header of a `semsearch export`, for the JSONL source of one
    vectors: Path | None = None  # an .npy file of vectors made elsewhere (JSONL only)

    def __init__(self, name: str | Path):
        self.name = name  # as messages name it
        self.ignored = 0
        self.needs_ocr: list[str] = []
        self.blank_pages: list[BlankPages] = []

    @abstractmethod
    def entries(self) -> Iterator[Entry]: ...

    def identity(self) -> list | None:
        """What a resumed ingest knows the source again by (its files' paths, sizes and modification times:
        ingest/resume.py), or None. A source that has one reads `entries(skip)`: the first `skip` entries
        passed over unparsed; one without is read whole again by a resume."""
        return None

    def planned(self) -> Iterator[Entry]:
        """The entries as far as they are known without the costly reading: a source that parses files gives
        each file's document with its id and no text (its refusal, if any, only `entries` finds)."""
        return self.entries()

    def documents(self) -> Iterator[Document | DataError]:
        for _, item in self.entries():
            yield item


class Sources(Source):
    """Several sources read one after the other (`semsearch ingest A B C`)."""

    def __init__(self, parts: Sequence[Source]):
        super().__init__(", ".join(str(part.name) for part in parts))
        self.parts = list(parts)
        self.rereadable = all(part.rereadable for part in parts)

    def entries(self) -> Iterator[Entry]:
        yield from self._read(lambda part: part.entries())

    def planned(self) -> Iterator[Entry]:
        yield from self._read(lambda part: part.planned())

    def _read(self, read: Callable[[Source], Iterator[Entry]]) -> Iterator[Entry]:
        for part in self.parts:
            part.ignored = 0
            yield from read(part)
        self.ignored = sum(part.ignored for part in self.parts)
        self.needs_ocr = [name for part in self.parts for name in part.needs_ocr]
        self.blank_pages = [blank for part in self.parts for blank in part.blank_pages]
