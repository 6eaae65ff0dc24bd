"""Typo tolerance on the keyword side: a query word whose term the keyword index lacks is matched to the index's
terms within one or two edits, weighted below an exact match.

As Meilisearch counts them: a word of 5 letters or more may hold one typo, of 9 or more two (shorter words, and
numbers, must match exactly); an edit is a deletion, insertion, substitution or transposition of two neighbours
(optimal string alignment distance, rapidfuzz's, over the index's terms of the lengths that can be that close).
The distance is taken between the query word's term (as the index stems it) and the index's terms. Only the
closest terms count (all at the smallest distance found, the MAX_CORRECTIONS most frequent of them), each
weighing CORRECTION_WEIGHT[edits] of an exact term: a word the index holds is never corrected, so an exact match
never loses to a correction of it. The vocabulary is the keyword index's own terms (fts5vocab) of the content the
query reads, so it follows every upsert and delete."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property

ONE_TYPO_FROM, TWO_TYPOS_FROM = 5, 9  # letters in the query word
CORRECTION_WEIGHT = {
    1: 0.8,
    2: 0.5,
}  # of an exact term's weight: swept in benchmarks/results/text-controls.md
MAX_CORRECTIONS = 4


def allowed_edits(word: str, typos: int) -> int:
    """How many typos the word may hold (at most `typos`): none below 5 letters or for a number."""
    if word.isdigit() or len(word) < ONE_TYPO_FROM:
        return 0
    return min(typos, 1 if len(word) < TWO_TYPOS_FROM else 2)


@dataclass
class Vocabulary:
    """The keyword index's terms with how many documents hold each."""

    documents: Mapping[str, int]
    by_length: dict[int, list[str]] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        self.by_length = {}
        for term in self.documents:
            self.by_length.setdefault(len(term), []).append(term)

    def __contains__(self, term: str) -> bool:
        return term in self.documents

    def near(self, term: str, edits: int) -> list[tuple[str, int]]:
        """The closest terms within `edits` of `term` and their distance (the most frequent first, at most
        MAX_CORRECTIONS; none: nothing that close)."""
        if edits <= 0:
            return []
        found = []
        for length in range(len(term) - edits, len(term) + edits + 1):
            bucket = self.by_length.get(length)
            if bucket:
                found += [(match, int(d)) for match, d, _ in self._extract(term, bucket, edits)]
        if not found:
            return []
        closest = min(d for _, d in found)
        best = sorted((t for t, d in found if d == closest), key=lambda t: (-self.documents[t], t))
        return [(t, closest) for t in best[:MAX_CORRECTIONS]]

    @cached_property
    def _extract(self):  # noqa: ANN202 - rapidfuzz's extract, bound to the distance
        from rapidfuzz import process
        from rapidfuzz.distance import OSA

        return lambda term, choices, edits: process.extract(
            term, choices, scorer=OSA.distance, score_cutoff=edits, limit=None
        )


def weighted_terms(
    words: list[tuple[str, list[str]]], typos: int, vocabulary: Vocabulary | None
) -> dict[str, float]:
    """Each term a query asks for and its weight: a query word's own terms 1 each time it is said; for a word
    whose term the vocabulary lacks, its corrections (see the module). `words`: (query word, its terms)."""
    weights: dict[str, float] = {}
    for word, terms in words:
        for term in terms:
            edits = allowed_edits(word, typos) if vocabulary is not None else 0
            if not edits or term in vocabulary:
                weights[term] = weights.get(term, 0.0) + 1.0
                continue
            for correction, distance in vocabulary.near(term, edits):
                weights[correction] = weights.get(correction, 0.0) + CORRECTION_WEIGHT[distance]
    return weights
