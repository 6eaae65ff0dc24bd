"""reStructuredText with docutils: the sections its titles open (a title over an underline, or between an
overline and an underline) cut the text into sections, each with its line range and heading path; the title is
the first top-level section's. The text is the source as it is, as for Markdown. Nothing in a file reaches
outside it: the directives that read other files or pass raw markup (include, raw, csv-table's :file:) are
off, and no docutils.conf is read."""

from __future__ import annotations

import io
from typing import Any

from . import Format, Parsed, decoded
from .lines import Lines

FORMATS = (Format("rst", (".rst",), libraries=("docutils.core",)),)

SETTINGS = {
    "file_insertion_enabled": False,  # include, csv-table :file: and :url:, raw :file:
    "raw_enabled": False,
    "_disable_config": True,  # no docutils.conf from the working directory or the user's
    "report_level": 5,  # a malformed construct is read as text, not reported
    "halt_level": 5,
    "doctitle_xform": False,  # the document's title stays its first section
    "warning_stream": None,  # replaced by a buffer for each parse
}


def parse(data: bytes, kind: str = "rst") -> Parsed:
    from docutils import nodes
    from docutils.core import publish_doctree

    source = decoded(data)
    rows = source.split("\n")
    tree = publish_doctree(source, settings_overrides={**SETTINGS, "warning_stream": io.StringIO()})
    headings: list[tuple[int, list[str]]] = []  # (0-based line where the section starts, its heading path)
    for section in tree.findall(nodes.section):
        title = section[0] if len(section) and isinstance(section[0], nodes.title) else None
        if title is None or not title.line or title.line < 2:
            continue
        start = title.line - 2  # title.line: the underline's (1-based); the title's text just above
        if start >= 1 and _overline(rows[start - 1], rows[title.line - 1]):
            start -= 1
        headings.append((start, _path(section, nodes)))
    lines = Lines(source)
    sections = []
    starts = [0] + [start for start, _ in headings] + [len(lines)]
    paths: list[list[str]] = [[]] + [path for _, path in headings]
    for begin, end, path in zip(starts, starts[1:], paths):
        if begin < end and (kept := lines.section(begin, end, path)) is not None:
            sections.append(kept)
    top = [path[0] for _, path in headings if len(path) == 1]
    return Parsed(source, top[0] if top else None, sections)


def _overline(above: str, underline: str) -> bool:
    """Whether the line above a title is its overline: the underline's character, repeated."""
    above, underline = above.strip(), underline.strip()
    return bool(above) and bool(underline) and set(above) == {underline[0]}


def _path(section: Any, nodes: Any) -> list[str]:
    """The titles of the section and the sections around it, outermost first."""
    path, node = [], section
    while node is not None:
        if isinstance(node, nodes.section) and len(node) and isinstance(node[0], nodes.title):
            path.append(" ".join(node[0].astext().split()))
        node = node.parent
    return path[::-1]
