"""A PDF's headings read from its own table of contents, where it has no outline (bookmarks): each line of a
contents page (a listing, listings.py) that names a page, its title and printed page number, placed on the page of
the file where a line begins with that title. Printed numbers and the file's pages differ by the front matter
(a title page, the contents in roman numerals): the offset is the one most of the titles are found at, and a
title not found at it is left out. The numbering's depth is the heading's level ("2" 0, "2.1" 1, none 0)."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

from ...listings import PAGE_REFERENCES, SEPARATORS, is_listing, listed_place

NUMBERED = re.compile(r"^\s*((?:[0-9]{1,3}|[A-Z])(?:\.[0-9]{1,3})*)\.?\s+(\S.*)$")
MAX_OFFSET = 40  # pages of front matter before the printed page 1, at most
FOUND_SHARE = 0.5  # at least this share of the titles found at one offset, or no headings are read


def contents_pages(pages: list[str]) -> list[str]:
    """The table of contents: the first run of listing pages, in the first half of the document (a listing
    after it, a back-of-book index, names terms, not headings)."""
    run: list[str] = []
    for text in pages[: max(1, len(pages) // 2)]:
        if is_listing(text):
            run.append(text)
        elif run:
            break
    return run


def contents_entries(pages: list[str]) -> list[tuple[str, int, int]]:
    """(title, printed page, level) of every line of the contents that names a page by a number."""
    entries = []
    for text in contents_pages(pages):
        for line in text.splitlines():
            if not listed_place(line):
                continue
            reference = PAGE_REFERENCES.search(line.rstrip())
            assert reference is not None  # listed_place found it
            number = reference.group(0).split(",")[0].strip()
            if not number.isdigit():
                continue
            title = " ".join(line[: reference.start()].rstrip(SEPARATORS).split())
            numbered = NUMBERED.match(title)
            level = numbered.group(1).count(".") if numbered else 0
            entries.append((numbered.group(2) if numbered else title, int(number), level))
    return entries


def contents_headings(
    pages: list[str], title_at: Callable[[str, str, int], int | None]
) -> list[tuple[int, int, str]]:
    """The headings of a PDF without an outline, as pdf.py's outline gives them: (0-based page index, level,
    title), read from its contents pages; none where too few titles are found on the pages they name.
    `title_at(text, title, start)`: where a title begins a line of a page's text (None: it does not)."""
    entries = contents_entries(pages)
    if not entries:
        return []
    offsets: Counter[int] = Counter()
    for title, printed, _ in entries:
        for offset in range(MAX_OFFSET + 1):
            index = printed - 1 + offset
            if (
                index < len(pages)
                and not is_listing(pages[index])
                and title_at(pages[index], title, 0) is not None
            ):
                offsets[offset] += 1
    if not offsets:
        return []
    offset, found = offsets.most_common(1)[0]
    if found < FOUND_SHARE * len(entries):
        return []
    out = []
    for title, printed, level in entries:
        index = printed - 1 + offset
        if index < len(pages) and title_at(pages[index], title, 0) is not None:
            out.append((index, level, title))
    return out
