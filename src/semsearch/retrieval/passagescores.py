"""Where in a document a keyword query answers: BM25 over the document's own passages. The document's score,
bm25 over the whole index, says whether it answers; this says which of its passages, as a reader's search
inside a long file would: a term counts where a passage's words stem to it (snippets.matching: the keyword
index's own stemming, so "histograms" counts for "histogram") and in the headings its section sits under
(HEADING_WEIGHT times, as the index weighs a title: a section's title names what its pages are about), and a
term's idf comes from the document's passages (a word on every page of a manual tells no page from another; a
word on three tells those three). Lengths are the passages' words against their mean, k1 and b as FTS5's
bm25 and Lucene set them."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .bm25matrix import TITLE_WEIGHT
from .snippets import TOKEN, Matching, cjk_marks, matching

K1 = 1.2
B = 0.75
HEADING_WEIGHT = TITLE_WEIGHT


@dataclass(frozen=True)
class PassageTerms:
    """A document's passages as the scoring reads them: each passage's length in words, and for every word of
    their texts (`body`) and of their headings (`headings`) the passages holding it and how often; built once
    per document and content (a manual's 300 pages cost a query most of its time to cut into words)."""

    rows: list[int]  # the passages' vector rows
    lengths: np.ndarray
    body: dict[str, tuple[list[int], list[int]]]  # word -> (passage indexes, times)
    headings: dict[str, tuple[list[int], list[int]]]

    @classmethod
    def of(cls, rows: list[int], texts: Sequence[str], headings: Sequence[Sequence[str]]) -> PassageTerms:
        body = [TOKEN.findall(text) for text in texts]
        above = [TOKEN.findall(" ".join(path)) for path in headings]
        lengths = np.array([len(words) for words in body], dtype=np.float64)
        return cls(rows, lengths, postings(body), postings(above))

    def scores(self, terms: Mapping[str, float]) -> np.ndarray:
        """Each passage's BM25 for the query's terms (weighted as the query asks them), 0 where none is held."""
        if not terms or not self.rows:
            return np.zeros(len(self.rows))
        found = matching([list(self.body), list(self.headings)], terms)
        column = {term: i for i, term in enumerate(terms)}
        held = np.zeros((len(self.rows), len(terms)))
        for weight, words in ((1.0, self.body), (HEADING_WEIGHT, self.headings)):
            for word, term in matched_terms(words.keys(), found):
                passages, times = words[word]
                held[passages, column[term]] += weight * np.array(times, dtype=np.float64)
        norm = K1 * (1 - B + B * self.lengths / max(float(self.lengths.mean()), 1.0))
        frequency = (held > 0).sum(axis=0)
        idf = np.log1p((len(self.rows) - frequency + 0.5) / (frequency + 0.5))
        weights = np.array([float(terms[term]) for term in terms])
        return ((held * (K1 + 1)) / (held + norm[:, None]) * (idf * weights)).sum(axis=1)


def postings(texts: Sequence[Sequence[str]]) -> dict[str, tuple[list[int], list[int]]]:
    """Each word of these word lists: the lists holding it (their indexes, ascending) and how often. Kept as
    lists: a query scores the few words it matches, and an array made for each of a document's thousands of
    words was two thirds of reading it."""
    listed: dict[str, tuple[list[int], list[int]]] = {}
    for at, words in enumerate(texts):
        for word, times in Counter(words).items():
            where, counts = listed.setdefault(word, ([], []))
            where.append(at)
            counts.append(times)
    return listed


def matched_terms(words: Iterable[str], found: Matching) -> Iterator[tuple[str, str]]:
    """(word, term) for each of the words that stems to a query term, a Han or Hangul run once per bigram (or
    lone character) of it that is one."""
    for word in found.words.keys() & set(words):
        for term in found.words[word]:
            yield word, term
    for run in found.runs & set(words):
        for start, end in cjk_marks(run, 0, found.terms, found.paired):
            yield run, run[start:end]
