"""Snippets: the part of a hit's document that answers, cropped to `crop` words, with what matched marked.

The part: the hit's best passage (a document cut into several) or its whole text. The marks, kind "words": the
words the keyword side matched, found as the keyword analysis cuts them (analysis.py, the index's porter
tokenizer: storage/keywordterms.py), so a mark is a whole word whose index term is one of the query's terms
(corrections of a typo included, stopwords never, as keywords.py drops them), or a Han or Hangul bigram the
query holds (a single Han character only where the query has it alone); never a substring of a longer word
("zip" is not marked inside "gzip"). The crop: the window of `crop` reader's words (cjk.word_spans) holding the
most marks, a few words of context before the first. Kind "passage": where no word of the part matches (a
query by meaning, or by vector alone), the part's opening window, nothing marked: the place was found by its
passage's own vector, and nothing is encoded at query time (encoding each hit's sentences cost a query by vector
ten times its search).

A snippet is JSON-ready: {"text", "highlights": [[start, end], ...] (character offsets in text), "kind"}."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..cjk import CJK_PUNCTUATION, CJK_SENTENCE_ENDS, HAN, HAN_RUN, HANGUL, bigrams, word_spans
from ..storage.keywordterms import STEMMER

CONTEXT = 4  # words shown before the first mark where the window allows
# unicode61's tokens: runs of letters and digits; Han and Hangul runs are cut apart from the rest (the analysis
# puts spaces around them)
TOKEN = re.compile(f"[{HAN}]+|[{HANGUL}]+|[^\\W_{HAN}{HANGUL}]+")
CJK_RUN = re.compile(f"[{HAN}{HANGUL}]")
CJK_WORD = re.compile(f"[{HAN}{CJK_PUNCTUATION}]")  # where a reader's words (cjk.WORD) are not whitespace's
STEM_SLACK = 3  # letters at a word's end its stem may differ in (two, and one for safety: marks_of)
SENTENCE_END = re.compile(f"\n\\s*\n|[.!?;:]+[\"')\\]]*(?=\\s)|[{CJK_SENTENCE_ENDS}]+")
Span = tuple[int, int]


def word_marks(text: str, terms: Mapping[str, Any]) -> list[Span]:
    """Where the text's words that the keyword side matched are: whole tokens whose index term is among
    `terms`, Han and Hangul bigrams among them (merged where they overlap)."""
    return marks_of([text], terms)[0]


def marks_of(texts: Sequence[str], terms: Mapping[str, Any]) -> list[list[Span]]:
    """`word_marks` of each text for one query's terms, in one call (`matching`)."""
    if not terms:
        return [[] for _ in texts]
    # strings, not match objects: a token's position is found only where it is marked (token_marks)
    tokens = [TOKEN.findall(text) for text in texts]
    found = matching(tokens, terms)
    marked = found.words.keys() | found.runs
    return [
        [] if marked.isdisjoint(words) else token_marks(text, words, found)
        for text, words in zip(texts, tokens)
    ]


@dataclass(frozen=True)
class Matching:
    """Which tokens (TOKEN's) of some texts match a query's terms: `words`, each with the terms it stems to that
    the query has; `runs`, the Han and Hangul runs (matched by their bigrams, `cjk_marks`); `paired`, the Han
    characters the query has only inside its bigrams; `terms`, the query's."""

    words: dict[str, tuple[str, ...]]
    runs: set[str]
    paired: set[str]
    terms: Mapping[str, Any]


def matching(tokens: Sequence[Sequence[str]], terms: Mapping[str, Any]) -> Matching:
    """The tokens' matches of the terms, only the words that may match stemmed (the stemmer asks SQLite for every
    word it has not seen: most of a query's cost here). Porter stemming rewrites only a suffix: a stem differs
    from its word in at most its last two letters ("sensibiliti" -> "sensibl", "y" -> "i"; FTS5 passes words
    under three letters through), so an ASCII word can stem to a term only if, lower-cased, it starts with the
    term less its last STEM_SLACK letters (at least its first letter)."""
    prefixes = tuple({term[: max(1, len(term) - STEM_SLACK)] for term in terms})
    words = set().union(*map(set, tokens))
    runs = {word for word in words if not word.isascii() and CJK_RUN.match(word)}
    possible = [word for word in words - runs if not word.isascii() or word.lower().startswith(prefixes)]
    stems = STEMMER.terms_of(possible)
    matched = {word: hit for word, found in stems.items() if (hit := tuple(t for t in found if t in terms))}
    # a lone Han character marks only where the query asks for it alone, not as part of its bigrams
    paired = {char for term in terms if len(term) == 2 and HAN_RUN.fullmatch(term) for char in term}
    return Matching(matched, runs, paired, terms)


def token_marks(text: str, tokens: list[str], found: Matching) -> list[Span]:
    """The marks of one text from its TOKEN matches in order: a token's first occurrence at or after the end of
    the one before is where TOKEN found it (what lies between holds no letter, digit, Han or Hangul character,
    where a token would have started)."""
    marks: list[Span] = []
    position = 0
    for token in tokens:
        position = text.find(token, position)
        if token in found.words:
            marks.append((position, position + len(token)))
        elif token in found.runs:
            marks += cjk_marks(token, position, found.terms, found.paired)
        position += len(token)
    return merged(marks)


def cjk_marks(token: str, start: int, terms: Mapping[str, Any], paired: set[str]) -> list[Span]:
    """The marks in a Han or Hangul run at `start`: its bigrams that are terms, and its lone Han characters that
    are (not those `paired`: only where the query has them alone)."""
    marks = []
    if len(token) >= 2:
        marks += [(start + i, start + i + 2) for i, pair in enumerate(bigrams(token)) if pair in terms]
    if HAN_RUN.match(token):
        marks += [
            (start + i, start + i + 1) for i, char in enumerate(token) if char in terms and char not in paired
        ]
    elif len(token) == 1 and token in terms:
        marks.append((start, start + 1))
    return marks


def merged(spans: list[Span]) -> list[Span]:
    out: list[Span] = []
    for start, end in sorted(spans):
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def sentence_spans(text: str) -> list[Span]:
    """The text's sentences (ending at . ! ? ; : before whitespace, or at a CJK sentence end), trimmed."""
    spans, begin = [], 0
    for end in [match.end() for match in SENTENCE_END.finditer(text)] + [len(text)]:
        piece = text[begin:end]
        stripped = piece.strip()
        if stripped:
            left = begin + len(piece) - len(piece.lstrip())
            spans.append((left, left + len(stripped)))
        begin = end
    return spans


def crop_window(text: str, marks: Sequence[Span], crop: int, anchor: int | None = None) -> Span:
    """The character span of the `crop`-word window: the one holding most marks (the first such, with CONTEXT
    words before its first mark where it keeps them all), or starting at `anchor` (a character offset)."""
    if not CJK_WORD.search(text) and len(text.split()) <= crop:  # then its words are str.split's
        return (0, len(text))
    words = word_spans(text)
    if len(words) <= crop:
        return (0, len(text))
    starts = np.array([start for start, _ in words])
    last = len(words) - crop
    if anchor is not None:
        first = min(int(np.searchsorted(starts, anchor, side="right")) - 1, last)
        first = max(first, 0)
    else:
        marked = np.zeros(len(words), dtype=np.int64)
        for start, _ in marks:
            marked[max(int(np.searchsorted(starts, start, side="right")) - 1, 0)] += 1
        totals = np.convolve(
            marked, np.ones(crop, dtype=np.int64), mode="valid"
        )  # window i: words i..i+crop-1
        first = int(np.argmax(totals))
        held = totals[first]
        if held:  # a few words before the first mark, where stepping back keeps every mark of the window
            lead = int(np.flatnonzero(marked[first:])[0])
            back = max(min(CONTEXT - lead, first), 0)
            while back > 0 and totals[first - back] != held:
                back -= 1
            first -= back
    return (words[first][0], words[first + crop - 1][1])


def snippet(text: str, marks: list[Span], crop: int, kind: str, anchor: int | None = None) -> dict[str, Any]:
    """The snippet of `text` (marks: its spans to mark, in text's offsets)."""
    start, end = crop_window(text, marks, crop, anchor)
    highlights = [[max(s, start) - start, min(e, end) - start] for s, e in marks if s < end and e > start]
    return {"text": text[start:end], "highlights": highlights, "kind": kind}
