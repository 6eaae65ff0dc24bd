"""Pseudo-queries where the inverse cloze of calibration.py cannot go, and cheap targets where it is costly.

- A document of fewer than MIN_SENTENCES sentences (a corpus of one-sentence glosses or titles) gives a cropped
  span instead: a third of its words (at least CROP_WORDS[0], at most CROP_WORDS[1]) at a seeded place is the
  query, the document without them its target. Under 2 x CROP_WORDS[0] words: no query (too little is left).
- A document cut into several passages is not re-encoded without its query: the passages holding the query are
  dropped from the dense side, and the text they cover taken out of the keyword side, so both sides see the
  document without the query's neighbourhood, at no encoding cost (re-encoding a long document would cost as
  much as its ingest: 256 targets of 40 passages are two ingests of a 5,000-passage corpus). A document all of
  whose passages hold the query is left out; of a document that gave several queries, every one's passages are
  dropped and regions taken out (a query that would leave it no passage is left out)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from ..cjk import word_spans

CROP_WORDS = (4, 16)


def crop(text: str, rng: np.random.Generator) -> tuple[str, str, tuple[int, int]] | None:
    """A span of a third of the text's words, the text without it, and the span; None for too few words."""
    words = word_spans(text)
    if len(words) < 2 * CROP_WORDS[0]:
        return None
    size = min(CROP_WORDS[1], max(CROP_WORDS[0], len(words) // 3))
    first = int(rng.integers(len(words) - size + 1))
    start, end = words[first][0], words[first + size - 1][1]
    return text[start:end], joined(text[:start], text[end:]), (start, end)


def cropped(
    drawn: Sequence[Any], texts: dict[int, str], counts: np.ndarray, spans: dict[int, tuple[int, int]]
):
    """Of pseudo-queries whose documents have several passages (`counts`, rows pk .. pk + count - 1, whose
    character spans are `spans`): those kept (their `rest` now the text without the dropped passages' region:
    of a document that gave several, without every one of their regions), and the rows dropped. A query whose
    passages would leave its document none is left out."""
    kept, gone, regions = [], {}, {}
    for query, count in zip(drawn, counts):
        rows = range(query.pk, query.pk + int(count))
        start, end = query.span
        holding = [row for row in rows if row in spans and spans[row][0] < end and start < spans[row][1]]
        together = gone.get(query.pk, set()).union(holding)  # with its document's other queries' rows
        if not holding or len(together) == len(rows) or query.pk not in texts:
            continue
        gone[query.pk] = together
        low, high = min(spans[row][0] for row in holding), max(spans[row][1] for row in holding)
        regions.setdefault(query.pk, []).append((low, high))
        kept.append(query)
    rests = {pk: outside(texts[pk], found) for pk, found in regions.items()}
    dropped = [row for pk in gone for row in sorted(gone[pk])]
    return [replace(query, rest=rests[query.pk]) for query in kept], np.asarray(dropped, dtype=np.int64)


def outside(text: str, regions: Sequence[tuple[int, int]]) -> str:
    """The text without these regions (which may overlap), its pieces joined as `joined` joins two."""
    pieces, begin = [], 0
    for low, high in sorted(regions):
        pieces.append(text[begin:low])
        begin = max(begin, high)
    return " ".join(part for part in (piece.strip() for piece in [*pieces, text[begin:]]) if part)


def joined(before: str, after: str) -> str:
    """The text either side of a cut, a space between them (the cut is a word boundary on both sides)."""
    return " ".join(part for part in (before.strip(), after.strip()) if part)
