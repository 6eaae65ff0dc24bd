"""Stretches of a document that only list other places: a table of contents (titles, dot leaders, page numbers)
or a back-of-book index (terms and the pages they are on, in columns). Such a page holds every title and term it
lists, so a query for a section's title finds it before the section. chunking.py cuts no passage from one: it
stays in the document's text (its keyword row, its full text, its export) but is never a place a search answers,
and the section it names answers instead.

A line lists a place when it ends in page references (numbers or roman numerals, several joined by commas or
dashes) after words: strongly after a dot leader or a comma ("Advanced Indexing . . . . 168", "histogram, 45,
67"), weakly after a space ("1 Introduction 1", a chapter's line in LaTeX's contents). A stretch is a listing when
at least LISTED_SHARE of its lines list a place and LEADER_SHARE of them strongly: a table of data whose rows end
in integers ("setosa 50") is not one, nor prose with a number at a line's end."""

from __future__ import annotations

import re

# page references at a line's end: 168 | xii | 16, 52 | 30-34
_REFERENCE = r"(?:\d{1,4}|(?=[ivxlcdm])m{0,3}(?:cm|cd|d?c{0,3})(?:xc|xl|l?x{0,3})(?:ix|iv|v?i{0,3})\b)"
PAGE_REFERENCES = re.compile(rf"\b{_REFERENCE}(?:\s*[,\u2013-]\s*{_REFERENCE})*\s*$", re.IGNORECASE)
DOT_LEADER = re.compile(r"(?:\.\s?){2,}\s*$|[\u2026\u00b7]\s*$")
SEPARATORS = " \t.,\u2026\u00b7\u2013-"
LISTED_SHARE = 0.5
LEADER_SHARE = 0.2
MIN_LINES = 4  # a stretch of fewer lines is never judged a listing


def listed_place(line: str) -> int:
    """2: the line lists a place after a dot leader or a comma; 1: after a space; 0: it does not list one."""
    line = line.rstrip()
    match = PAGE_REFERENCES.search(line)
    if match is None or match.start() == 0:
        return 0
    before = line[: match.start()]
    if before[-1] not in SEPARATORS:  # the reference is the tail of a word (a roman numeral's letters)
        return 0
    words = before.rstrip(SEPARATORS)
    if not words or words[-1].isdigit() or words.strip("0123456789" + SEPARATORS) == "":
        return 0  # a row of numbers, not a title's or a term's
    return 2 if DOT_LEADER.search(before) or before.rstrip().endswith(",") else 1


def is_listing(text: str, min_lines: int = MIN_LINES) -> bool:
    """Whether a stretch of text (a page, a section) only lists other places (the module's rule)."""
    lines = [line for line in text.splitlines() if any(char.isalnum() for char in line)]
    if len(lines) < max(min_lines, 1):
        return False
    kinds = [listed_place(line) for line in lines]
    listed = sum(1 for kind in kinds if kind)
    strong = sum(1 for kind in kinds if kind == 2)
    return listed >= LISTED_SHARE * len(lines) and strong >= LEADER_SHARE * len(lines)
