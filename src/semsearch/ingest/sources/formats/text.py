"""Plain text and source code: the text as it is, cut into sections of about SECTION_LINES
lines at blank lines (text) or at top-level blocks (code: a line that starts at the margin after a blank
one), each with its line range. Only the encoding is read here; there is no format to parse."""

from __future__ import annotations

from . import Parsed, decoded
from .lines import Lines, blocks

SECTION_LINES = {"text": 40, "code": 60}


def parse(data: bytes, kind: str = "text") -> Parsed:
    text = decoded(data)
    lines = Lines(text)
    rows = text.split("\n")
    if kind == "code":
        breaks = [
            n for n in range(1, len(rows)) if not rows[n - 1].strip() and rows[n][:1] not in ("", " ", "\t")
        ]
    else:
        breaks = [n for n in range(1, len(rows)) if not rows[n - 1].strip() and rows[n].strip()]
    return Parsed(text, None, blocks(lines, breaks, SECTION_LINES[kind]))
