"""A document assembled from blocks of text (paragraphs, headings, pages) as a parser meets them: the text is
the blocks joined by blank lines, and a section runs from one heading (or page) to the next."""

from __future__ import annotations

from typing import Any

from ....documents import Location, Section
from . import Parsed


class Assembly:
    def __init__(self) -> None:
        self.parts: list[str] = []
        self.length = 0
        self.sections: list[Section] = []
        self.headings: list[tuple[int, str]] = []  # (level, heading) of the path, outermost first
        self.place = Location()
        self.start: int | None = None  # where the open section's text starts
        self.title: str | None = None

    def add(self, text: str) -> None:
        """A block of text in the open section."""
        text = text.strip()
        if not text:
            return
        if self.parts:
            self.parts.append("\n\n")
            self.length += 2
        if self.start is None:
            self.start = self.length
        self.parts.append(text)
        self.length += len(text)

    def close(self) -> None:
        if self.start is not None:
            self.sections.append(Section(self.start, self.length, self.place))
        self.start = None

    def heading(self, level: int, text: str, anchor: str | None = None) -> None:
        """A heading: it opens a section (its path: the enclosing headings and this one) and is its first block."""
        text = " ".join(text.split())
        self.close()
        if text:
            self.headings = [(lvl, h) for lvl, h in self.headings if lvl < level] + [(level, text)]
            if self.title is None and level == 1:
                self.title = text
        self.place = Location(anchor=anchor, headings=tuple(h for _, h in self.headings))
        self.add(text)

    def page(self, number: int, text: str) -> None:
        """A page: a section of its own."""
        self.close()
        self.place = Location(page=number)
        self.add(text)
        self.close()

    def page_parts(self, number: int, parts: list[tuple[str, tuple[str, ...]]]) -> None:
        """A page in parts, each a section of its own under its heading path (a PDF's outline)."""
        for text, headings in parts:
            self.close()
            self.place = Location(page=number, headings=headings)
            self.add(text)
        self.close()

    def parsed(self, title: str | None = None, **metadata: Any) -> Parsed:
        self.close()
        first_heading = self.headings[0][1] if self.headings else None
        chosen = (title or "").strip() or self.title or first_heading
        return Parsed("".join(self.parts), chosen or None, self.sections, metadata)
