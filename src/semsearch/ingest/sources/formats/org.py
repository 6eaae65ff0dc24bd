"""Emacs Org mode with orgparse: the headings (`* `, `** `, ...) cut the text into sections, each with its line
range and heading path (a heading's words without its TODO keyword, priority or tags); the title is the file's
`#+TITLE:`, else its first top-level heading. The text is the source as it is, as for Markdown."""

from __future__ import annotations

from . import Format, Parsed, decoded
from .lines import Lines, heading_sections

FORMATS = (Format("org", (".org",), libraries=("orgparse",)),)


def parse(data: bytes, kind: str = "org") -> Parsed:
    import orgparse

    source = decoded(data)
    root = orgparse.loads(source)
    lines = Lines(source)
    headings = [(node.linenumber - 1, node.level, node.heading.strip()) for node in root[1:]]
    sections = heading_sections(lines, headings)
    title = (root.get_file_property("TITLE") or "").strip() or next(
        (heading for _, level, heading in headings if level == 1), None
    )
    return Parsed(lines.text, title or None, sections)
