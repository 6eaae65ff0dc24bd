"""Plain text and source code: the text as it is, cut into sections of about SECTION_LINES
lines at blank lines (text) or at top-level blocks (code: a line that starts at the margin after a blank
one), each with its line range. Only the encoding is read here; there is no format to parse."""

from __future__ import annotations

from . import Format, Parsed, decoded
from .lines import Lines, blocks

CODE_SUFFIXES = """py pyi js mjs ts tsx jsx go rs java kt scala swift c h cc cpp hpp cxx cs rb php pl lua r jl sh
bash zsh fish ps1 sql hs ml ex exs erl clj dart m css scss vue svelte toml yaml yml ini cfg""".split()  # noqa: SIM905 (49 suffixes: a line each as a list)
FORMATS = (
    Format("text", (".txt", ".text")),
    Format("code", tuple(f".{suffix}" for suffix in CODE_SUFFIXES)),
)

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
