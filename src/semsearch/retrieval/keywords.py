"""Keyword retrieval: BM25 over the documents' title and text, by SQLite FTS5 (the `keywords` table, schema.py),
in the store's own file and transactions.

A query's text never reaches FTS5's query syntax: it is cut into words here (Unicode letters and digits), each
word quoted as a string, and the words ORed, so `state-of-the-art`, `C++`, quotes, `NEAR` and `AND` are plain
words. English stopwords (Lucene's list, which BM25 baselines such as Anserini and Elasticsearch's english
analyzer drop) are dropped from queries unless nothing else is left: FTS5's bm25 weights a word in half the
rows or more at almost zero anyway (its IDF is floored there), and a query ORing `the` scores every document
that has it (2.5x slower on SciFact for the same nDCG@10, benchmarks/results/keyword_index.md)."""

from __future__ import annotations

import re
import time
import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from ..settings import DEFAULT_TYPOS, FUSION_DEPTH
from ..storage import analysis
from ..storage.keywordterms import STEMMER
from ..storage.reads import Scored
from ..storage.shardmanifest import KeywordStatistics
from ..storage.store import DocumentStore
from .bm25matrix import SCRATCH, TITLE_WEIGHT, Bm25Matrix
from .typos import Vocabulary, weighted_terms

WORD = re.compile(r"\w+")
STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "but",
        "by",
        "for",
        "if",
        "in",
        "into",
        "is",
        "it",
        "no",
        "not",
        "of",
        "on",
        "or",
        "such",
        "that",
        "the",
        "their",
        "then",
        "there",
        "these",
        "they",
        "this",
        "to",
        "was",
        "will",
        "with",
    ]
)
LISTED_ROWS = 2_000  # a filter allowing at most this many documents is listed in the query; more: read deeper
# Reading the matrix costs about 1 s a million tokens (2.5 s for WordNet's 117k glosses, 1 s for SciFact's 5k
# abstracts): a store this small has it read by its first query, a larger one by a later query once quiet.
MATRIX_AT_ONCE = 2_000
QUIET_READS = 10


def query_words(text: str) -> list[str]:
    """The words of a query, lower-cased, in order, repeats kept (BM25 weighs a word by how often the query says
    it); stopwords left out unless they are all."""
    words = [word.lower() for word in WORD.findall(analysis.analyze(text))]
    kept = [word for word in words if word not in STOPWORDS]
    return kept or words


def match_expression(text: str) -> str | None:
    """An FTS5 query matching documents with any of the words, every word a quoted string (None: no words)."""
    return any_of(query_words(text))


def any_of(words: Sequence[str]) -> str | None:
    """An FTS5 query matching documents with any of the words, each a quoted string (None: no words)."""
    return " OR ".join('"' + word.replace('"', '""') + '"' for word in words) if words else None


def query_terms(text: str, typos: int, vocabulary: Vocabulary | None) -> dict[str, float]:
    """The index terms a query text asks for, each with its weight (KeywordRetriever.terms), typos corrected
    over `vocabulary`."""
    words = query_words(text)
    stems = STEMMER.terms_of(words)
    return weighted_terms([(word, list(stems[word])) for word in words], typos, vocabulary)


@dataclass
class Cached:
    """A store's bm25 matrix, the content key its keyword queries last saw and since when, and what the last read
    of a matrix cost."""

    matrix: Bm25Matrix | None = None
    seen: tuple[int, int] | None = None
    seen_at: float = 0.0
    read_seconds: float = 0.0
    too_large: tuple[int, int] | None = None  # the content key whose matrix would be over MAX_POSTINGS
    vocabulary: tuple[tuple[int, int], Vocabulary] | None = None  # of that content key


MATRICES: weakref.WeakKeyDictionary[DocumentStore, Cached] = weakref.WeakKeyDictionary()


@dataclass
class ShardMatrix:
    """A shard's matrix scored with the whole corpus's statistics, and their vocabulary."""

    matrix: Bm25Matrix | None
    vocabulary: Vocabulary
    statistics: KeywordStatistics


SHARD_MATRICES: weakref.WeakKeyDictionary[DocumentStore, ShardMatrix] = weakref.WeakKeyDictionary()


@dataclass
class KeywordRetriever:
    store: DocumentStore
    documents: int  # in the store: how deep a filter allowing some of them reads
    typos: int = DEFAULT_TYPOS  # edits a query word may hold (typos.py; 0: exact words only)
    # each text's terms, asked again by its snippets (a retriever serves one search)
    asked: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)
    # a shard's: bm25 with the whole corpus's document frequencies, documents and average length, and typos
    # corrected over its vocabulary (None: the store's own)
    statistics: KeywordStatistics | None = None

    def top(self, texts: Sequence[str], n: int, allowed: np.ndarray | None) -> list[Scored]:
        """The n best documents of each text by bm25, among the `allowed` pks (sorted) if given."""
        matrix = self.matrix()
        if matrix is not None:
            return [matrix.top(self.terms(text), n, allowed) for text in texts]
        return [self._top(text, n, allowed) for text in texts]

    def ahead(self, texts: Sequence[str], n: int, allowed: np.ndarray | None) -> Callable[[], list[Scored]]:
        """`top`, asked now and answered when called: here computed then (a sharded index's sends its shards
        the question at once)."""
        return lambda: self.top(texts, n, allowed)

    def matching(self, text: str) -> np.ndarray:
        """The pks (sorted) of the documents holding any of the text's words: the set its ranking draws from."""
        matrix = self.matrix()
        if matrix is not None:
            return matrix.holding(list(self.terms(text)))  # typo corrections counted too
        expression = match_expression(text)
        return self.store.keyword_matches(expression) if expression else np.empty(0, dtype=np.int64)

    def terms(self, text: str) -> dict[str, float]:
        """The index terms a query text asks for, each with its weight: its words' own terms (1 each time said)
        and the corrections of a word the index lacks (typos.py)."""
        if text not in self.asked:
            self.asked[text] = query_terms(text, self.typos, self.vocabulary() if self.typos else None)
        return self.asked[text]

    def vocabulary(self) -> Vocabulary | None:
        """The keyword index's terms as the store's committed content has them (read again when it changes);
        None inside a transaction (a write's calibration searching its scratch state: its pseudo-queries are
        the documents' own words, and a vocabulary read per query would cost the write dearly)."""
        with self.store.guarded():
            key = self.store.content_version()
            if key is None:
                return None
            if self.statistics is not None:
                return self.shard_matrix().vocabulary
            cached = MATRICES.setdefault(self.store, Cached())
            if cached.vocabulary is not None and cached.vocabulary[0] == key:
                return cached.vocabulary[1]
            matrix = cached.matrix if cached.matrix is not None and cached.matrix.key == key else None
            counts = matrix.document_frequencies() if matrix is not None else self.store.keyword_vocabulary()
            cached.vocabulary = (key, Vocabulary(counts))
            return cached.vocabulary[1]

    def matrix(self) -> Bm25Matrix | None:
        """The store's bm25 matrix if its content is as when it was read; else read anew: at once for a small
        store; for a large one when a later query finds the content unchanged and has been so for QUIET_READS
        times what the last read took (a one-off query, and a store being written to, are answered by FTS5,
        rather than reading a matrix for every write)."""
        if self.statistics is not None:
            return self.shard_matrix().matrix
        with self.store.guarded():
            key = self.store.content_version()
            cached = MATRICES.setdefault(self.store, Cached())
            if key is None or (cached.matrix is not None and cached.matrix.key == key):
                return cached.matrix if key is not None else None
            now = time.monotonic()
            if cached.seen != key:
                cached.seen, cached.seen_at, cached.matrix = key, now, None
                if self.documents > MATRIX_AT_ONCE:
                    return None
            quiet = now - cached.seen_at >= QUIET_READS * cached.read_seconds
            if cached.too_large == key or (self.documents > MATRIX_AT_ONCE and not quiet):
                return None
            cached.matrix = Bm25Matrix.read(self.store)
            cached.read_seconds = time.monotonic() - now
            cached.too_large = key if cached.matrix is None else None
            return cached.matrix

    def shard_matrix(self) -> ShardMatrix:
        """A shard's matrix and vocabulary, of the whole corpus's statistics, read at once whatever its size
        (FTS5's bm25 has only the shard's) and again when its content changes."""
        statistics = self.statistics
        assert statistics is not None
        with self.store.guarded():
            key = self.store.content_version() or SCRATCH
            cached = SHARD_MATRICES.get(self.store)
            if (
                cached is None
                or cached.statistics is not statistics
                or cached.matrix is None
                or (cached.matrix.key != key)
            ):
                matrix = Bm25Matrix.read(self.store, key == SCRATCH, statistics)
                cached = ShardMatrix(matrix, Vocabulary(statistics.frequencies), statistics)
                SHARD_MATRICES[self.store] = cached
            return cached

    def _top(self, text: str, n: int, allowed: np.ndarray | None) -> Scored:
        """FTS5's ranking of the query's words; a typo's corrections ranked by their own query, their scores
        added at their weight (exact for the documents in both top lists, a lower bound beyond; the lists at
        least FUSION_DEPTH deep, so that the first n at any n up to it are the same: search.py's pages)."""
        corrections: dict[float, list[str]] = {}
        exact = set(STEMMER.stems(query_words(text)))
        for term, weight in self.terms(text).items():
            if term not in exact:
                corrections.setdefault(weight, []).append(term)
        if not corrections:
            return self._ranked(match_expression(text), n, allowed)
        depth = max(n, FUSION_DEPTH)
        scores = dict(self._ranked(match_expression(text), depth, allowed))
        for weight, terms in corrections.items():
            for pk, score in self._ranked(any_of(terms), depth, allowed):
                scores[pk] = scores.get(pk, 0.0) + weight * score
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:n]

    def _ranked(self, expression: str | None, n: int, allowed: np.ndarray | None) -> Scored:
        if expression is None or (allowed is not None and not len(allowed)):
            return []
        if allowed is None:
            return self.store.keyword_ranking(expression, n, TITLE_WEIGHT)
        if len(allowed) <= LISTED_ROWS:
            return self.store.keyword_ranking(expression, n, TITLE_WEIGHT, within=allowed)
        # Many allowed: read the ranking deeper until n of them are found or it ends (exact either way).
        depth = max(n, int(n * 2 * self.documents / len(allowed)))
        while True:
            rows = self.store.keyword_ranking(expression, depth, TITLE_WEIGHT)
            kept = [row for row, inside in zip(rows, np.isin([pk for pk, _ in rows], allowed)) if inside]
            if len(kept) >= n or len(rows) < depth:
                return kept[:n]
            depth *= 4


def plain_terms(text: str) -> dict[str, float]:
    """The index terms of a query's own words, each weighted by how often the query says it (no typo
    corrections: what a document's passages are scored by, places.py)."""
    words = query_words(text)
    stems = STEMMER.terms_of(words)
    out: dict[str, float] = {}
    for word in words:
        for term in stems[word]:
            out[term] = out.get(term, 0.0) + 1.0
    return out
