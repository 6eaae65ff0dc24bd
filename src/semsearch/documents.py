"""The document every source yields and every stage takes, below all of them: its id, text, title, typed
metadata, a vector made elsewhere if it came with one, and, for a document read from a file, the sections
of its text that passages do not cross, each with its place in the file (a page, a line range, an anchor,
a heading path), which a hit carries back."""

from __future__ import annotations

import bisect
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, overload

import numpy as np

Span = tuple[int, int]  # character offsets [start, end) in a document's text


@dataclass(frozen=True, slots=True)
class Location:
    """Where a stretch of text sits in its file; each field only where the file's kind knows it."""

    page: int | None = None  # 1-based (PDF)
    line_start: int | None = None  # 1-based, inclusive (text, Markdown, reStructuredText, code, CSV rows)
    line_end: int | None = None
    anchor: str | None = None  # HTML: the id of the nearest enclosing element that has one
    headings: tuple[str, ...] = ()  # the heading path, outermost first: ("Installation", "Linux")
    row: int | None = None  # a table's row, 1-based, the header not counted (CSV, TSV, Parquet, a DataFrame)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            name: value
            for name in ("page", "line_start", "line_end", "anchor", "row")
            if (value := getattr(self, name)) is not None
        }
        if self.headings:
            out["headings"] = list(self.headings)
        return out

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Location:
        return cls(
            page=data.get("page"),
            line_start=data.get("line_start"),
            line_end=data.get("line_end"),
            anchor=data.get("anchor"),
            headings=tuple(data.get("headings", ())),
            row=data.get("row"),
        )


@dataclass(frozen=True, slots=True)
class Section:
    """A stretch [start, end) of a document's text that no passage crosses (a heading's section, a
    paragraph, a page), with its location in the file."""

    start: int
    end: int
    location: Location


class RowSections(Sequence[Section]):
    """A table row's sections: one, over its whole `text` (the document's own string, not a copy), at its row
    (and in a CSV or TSV file its lines), its Section and Location made when asked. A row's document is held
    from its reading to its storing (a partition of them): as a tuple of a Section and its Location a row's
    place took 216 bytes, which kept a Parquet ingest one arena of Python's memory above the same corpus's as
    JSONL; now 96, its row number's int included (benchmarks/results/files.md)."""

    __slots__ = ("text", "row", "line_start", "line_end")

    def __init__(self, text: str, row: int, line_start: int | None = None, line_end: int | None = None):
        self.text, self.row, self.line_start, self.line_end = text, row, line_start, line_end

    def __len__(self) -> int:
        return 1

    @overload
    def __getitem__(self, index: int) -> Section: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Section, ...]: ...
    def __getitem__(self, index: int | slice) -> Section | tuple[Section, ...]:  # as a tuple's
        location = Location(line_start=self.line_start, line_end=self.line_end, row=self.row)
        return (Section(0, len(self.text), location),)[index]

    def __iter__(self) -> Iterator[Section]:
        yield self[0]

    def places(self) -> list[list]:
        """`section_places` of this row without making its Section and Location (hashed and stored once each)."""
        lines = (("line_start", self.line_start), ("line_end", self.line_end), ("row", self.row))
        return [[0, len(self.text), {name: value for name, value in lines if value is not None}]]

    def __repr__(self) -> str:
        return repr(tuple(self))


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)  # made elsewhere, float32
    # With a vector per passage (a 2-D `vector`, from an export): their character spans in the text.
    passages: tuple[Span, ...] | None = field(default=None, compare=False, repr=False)
    # From a file: its sections in order, covering the text (None: one section, no location).
    sections: Sequence[Section] | None = field(default=None, compare=False, repr=False)

    @property
    def embedding_text(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text

    @cached_property  # a frozen dataclass's fields never change: asked twice as it is stored
    def content_hash(self) -> str:
        payload = json.dumps([self.title, self.text, self.metadata], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(payload.encode())
        if self.vector is not None:  # a new vector for the same text is a change too
            digest.update(np.ascontiguousarray(self.vector, dtype="<f4").tobytes())
        if (
            self.sections
        ):  # the same text cut or placed differently is a change too (its hits point elsewhere)
            places = section_places(self.sections)
            digest.update(json.dumps(places, sort_keys=True, ensure_ascii=False).encode())
        return digest.hexdigest()[:32]

    @property
    def passages_hash(self) -> str:
        """What the document's passages are cut from and encoded from: its title and text, and where its
        sections cut it and which may share a passage (their spans, pages, anchors and heading paths; chunking.py).
        Not its metadata, nor the lines or table row its sections sit at: a stored document that differs only
        there keeps its passages and their vectors, and takes the new places and metadata (pipeline.py)."""
        places = [
            [s.start, s.end, s.location.page, s.location.anchor, list(s.location.headings)]
            for s in self.sections or ()
        ]
        payload = json.dumps([self.title, self.text, places], ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:32]


def section_places(sections: Sequence[Section]) -> list[list]:
    """Sections as they are hashed, stored and exported: [[start, end, location JSON], ...]."""
    if isinstance(sections, RowSections):
        return sections.places()
    return [[s.start, s.end, s.location.to_json()] for s in sections]


def passage_locations(doc: Document, spans: Sequence[Span]) -> list[Location | None]:
    """Where each passage (a character span of the document's text) sits in its file: the location of the first
    section it covers (its page, anchor and heading path), its lines those of the passage's own first and last
    characters, counted from the line its section starts on (clamped to the sections' ranges: a text that is
    not the file's lines verbatim keeps its sections' lines). None for a document without sections."""
    if not doc.sections:
        return [None] * len(spans)
    sections = tuple(doc.sections)  # a table row's (RowSections) made once here
    ends = [section.end for section in sections]  # in order, so sorted
    out: list[Location | None] = []
    for start, end in spans:
        at = min(bisect.bisect_right(ends, start), len(sections) - 1)  # the first section ending after start
        last = at
        while last + 1 < len(sections) and sections[last + 1].start < end:
            last += 1
        first, final = sections[at], sections[last]
        line_start, line_end = first.location.line_start, final.location.line_end
        final_start = final.location.line_start
        if line_start is not None and line_end is not None and final_start is not None:
            line_start = _line_at(doc.text, first, line_start, max(start, first.start))
            last_offset = min(max(end, start + 1), final.end) - 1
            line_end = max(line_start, _line_at(doc.text, final, final_start, last_offset))
        place = first.location
        out.append(Location(place.page, line_start, line_end, place.anchor, place.headings, place.row))
    return out


def _line_at(text: str, section: Section, first_line: int, offset: int) -> int:
    """The file line of a character of a section's text, the section starting on `first_line`."""
    high = section.location.line_end
    line = first_line + text.count("\n", section.start, max(offset, section.start))
    return line if high is None else min(line, high)
