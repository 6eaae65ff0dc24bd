"""Sections of a text by line: where each line starts, and a section made of a run of lines."""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from ....documents import Location, Section


class Lines:
    """The character offset where each line of `text` starts; `first` is the file line of the text's line 1."""

    def __init__(self, text: str, first: int = 1):
        self.text, self.first = text, first
        self.starts = [0] + [i + 1 for i, c in enumerate(text) if c == "\n"]

    def __len__(self) -> int:
        return len(self.starts)

    def offset(self, line: int) -> int:
        """The offset of the text's 0-based `line` (the text's end past the last)."""
        return self.starts[line] if line < len(self.starts) else len(self.text)

    def line_at(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def section(self, begin: int, end: int, headings: Sequence[str] = ()) -> Section | None:
        """The section of the text's 0-based lines [begin, end), trimmed of blank edges (None: only blanks)."""
        start, stop = self.offset(begin), self.offset(end)
        chunk = self.text[start:stop]
        if not chunk.strip():
            return None
        start += len(chunk) - len(chunk.lstrip())
        stop -= len(chunk) - len(chunk.rstrip())
        location = Location(
            line_start=self.first + self.line_at(start),
            line_end=self.first + self.line_at(stop - 1),
            headings=tuple(headings),
        )
        return Section(start, stop, location)


def blocks(lines: Lines, breaks: Sequence[int], limit: int) -> list[Section]:
    """Sections of at most about `limit` lines, cut only at the 0-based lines in `breaks` (paragraph or block
    starts) where one can be, else at `limit`."""
    sections, begin, allowed = [], 0, set(breaks)
    for line in range(1, len(lines) + 1):
        at_end = line == len(lines)
        if at_end or (line - begin >= limit and (line in allowed or line - begin >= 2 * limit)):
            if (section := lines.section(begin, line)) is not None:
                sections.append(section)
            begin = line
    return sections


def heading_sections(lines: Lines, headings: Sequence[tuple[int, int, str]]) -> list[Section]:
    """The sections a text's headings cut it into, `headings` as (0-based line, level, words) in file order:
    each section's heading path is the heading that opens it and those above it (a heading closes the ones of
    its level and deeper); the text before the first heading is a section with no path."""
    sections: list[Section] = []
    path: list[tuple[int, str]] = []
    starts = [0] + [line for line, _, _ in headings] + [len(lines)]
    for n, (begin, end) in enumerate(zip(starts, starts[1:])):
        if n > 0:
            _, level, heading = headings[n - 1]
            path = [(depth, words) for depth, words in path if depth < level] + [(level, heading)]
        if begin < end and (section := lines.section(begin, end, [words for _, words in path])) is not None:
            sections.append(section)
    return sections
