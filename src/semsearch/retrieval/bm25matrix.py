"""FTS5's bm25 computed from a term-by-document matrix in numpy (as bm25s does), read out of the FTS5 index itself.

FTS5's `ORDER BY rank` calls its bm25 function on every row matching any query word: 80-100 ms for a
paragraph-long query over 117k documents (benchmarks/results/keyword-engine.md). Here each document's bm25
weight of each term, tf * (k1 + 1) / (tf + k1 * (1 - b + b * length / average length)), is computed once; a query
adds its terms' columns times their IDF and query frequency (the same sum FTS5 makes, a repeated word counted
again) and takes the best: about a millisecond.

The matrix is a cache of what the store has committed, never a second copy to keep in step: it is read from the
FTS5 index's own tokens (fts5vocab), so it needs no write of its own (read-only mounts, crash safety and the
documents' transaction stay the store's), and it is used only while the store is unchanged since it was read
(SQLite's data_version for other connections' commits, total_changes for this one's writes, never inside an open
transaction). Until then keywords.py asks FTS5 itself, which ranks the same."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from ..storage.shardmanifest import KeywordStatistics
from ..storage.store import DocumentStore

K1, B = 1.2, 0.75  # FTS5's bm25 constants
# A title's words count twice a text's (FTS5's bm25 column weights): better nDCG@10 on every query style of
# SciFact and Cranfield (benchmarks/results/keyword-engine.md).
TITLE_WEIGHT = 2.0
IDF_FLOOR = 1e-6  # FTS5 floors a term's IDF here when it is in half the rows or more
# Above this many (term, document) pairs FTS5 ranks instead: the matrix holds 12 bytes a pair (WordNet's 117,791
# glosses: 1.5 million), and reading it briefly several times that.
MAX_POSTINGS = 20_000_000
SCRATCH = (-1, -1)  # the key of a matrix read inside a transaction: no committed content's
SCORED = 4_000_000  # scores (float64, 32 MB) of several queries' rows at once (top_many)


@dataclass
class Bm25Matrix:
    """Each term's postings (document pks, bm25 weights without IDF), and each term's IDF, as FTS5 has them."""

    key: tuple[int, int]
    columns: dict[str, int]
    starts: np.ndarray  # term i's postings: pks[starts[i]:starts[i + 1]]
    pks: np.ndarray
    weights: np.ndarray
    idf: np.ndarray
    size: int  # one more than the largest pk
    tokens: int = 0  # of every document, a title's and a text's

    @classmethod
    def read(
        cls, store: DocumentStore, scratch: bool = False, statistics: KeywordStatistics | None = None
    ) -> Bm25Matrix | None:
        """The matrix of the store's committed content (None: inside a transaction, or over MAX_POSTINGS).
        `scratch`: of the content as this connection sees it inside its transaction (a calibration's scratch
        copy, store.scratch: its hundreds of queries ranked here, not by FTS5), never cached (its key SCRATCH).
        `statistics`: a shard's, scored with the whole corpus's (read whatever its size: FTS5's own bm25 cannot
        take them, so a shard is cut small enough to hold its matrix)."""
        key = SCRATCH if scratch else store.content_version()
        if key is None or (statistics is None and store.keyword_postings() > MAX_POSTINGS):
            return None
        # fts5vocab reads the FTS5 index's own tokens: every document's terms, one row per occurrence, in order
        # of term, document, column; per term, its occurrences as pk * 2 + 1 for a title's.
        return cls.of_rows(key, store.keyword_term_rows(), store.count(), statistics)

    @classmethod
    def of_rows(
        cls,
        key: tuple[int, int],
        rows: Sequence[tuple[str, int, str]],
        documents: int,
        statistics: KeywordStatistics | None = None,
    ) -> Bm25Matrix:
        """The matrix of term rows as DocumentStore.keyword_term_rows gives them, over `documents` documents;
        with `statistics`, its IDF and average length those of the whole corpus (a shard's matrix)."""
        counts = np.array([count for _, count, _ in rows], dtype=np.int64)
        coded = np.array(",".join(joined for _, _, joined in rows).split(",") if rows else [], dtype=np.int64)
        docs, in_title = coded >> 1, (coded & 1).astype(bool)
        term_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        size = int(docs.max()) + 1 if len(docs) else 1
        lengths = np.bincount(docs, minlength=size).astype(np.float64)  # tokens per document, all columns
        tokens = int(len(docs))
        average = lengths.sum() / max(documents, 1)
        if statistics is not None:
            average = float(statistics.tokens) / max(statistics.documents, 1)
        # runs of one (term, document): its term frequency, a title's occurrences weighted as FTS5's bm25 weighs
        # its column
        new = np.ones(len(docs), dtype=bool)
        new[1:] = (docs[1:] != docs[:-1]) | (term_of[1:] != term_of[:-1])
        first = np.flatnonzero(new)
        tf = np.add.reduceat(np.where(in_title, TITLE_WEIGHT, 1.0), first) if len(first) else np.zeros(0)
        pks, terms = docs[first], term_of[first]
        norm = K1 * (1 - B + B * lengths[pks] / average) if average else np.full(len(pks), K1)
        weights = tf * (K1 + 1) / (tf + norm)  # float64, as FTS5 sums
        frequency = np.bincount(terms, minlength=len(rows)).astype(np.float64)
        starts = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(frequency.astype(np.int64), out=starts[1:])
        if statistics is not None:
            known = statistics.frequencies
            documents = statistics.documents
            frequency = np.array([known.get(term, 0) for term, _, _ in rows], dtype=np.float64)
        idf = np.log((documents - frequency + 0.5) / (frequency + 0.5))
        idf[idf <= 0] = IDF_FLOOR
        columns = {term: i for i, (term, _, _) in enumerate(rows)}
        return cls(key, columns, starts, pks.astype(np.int32), weights, idf, size, tokens)

    def statistics(self, documents: int) -> KeywordStatistics:
        """What bm25 reads of this matrix's corpus of `documents` documents: their tokens, each term's
        document frequency (a sharded index's whole, scored by each shard)."""
        return KeywordStatistics(documents, self.tokens, self.document_frequencies())

    def holding(self, stems: Sequence[str] | Mapping[str, float]) -> np.ndarray:
        """The pks (sorted) of the documents holding any of the terms."""
        columns = {self.columns[stem] for stem in stems if stem in self.columns}
        parts = [self.pks[self.starts[c] : self.starts[c + 1]] for c in columns]
        if len(parts) < 2:  # a term's postings are sorted by pk already
            return parts[0].astype(np.int64) if parts else np.empty(0, dtype=np.int64)
        held = np.zeros(self.size, dtype=bool)  # a flag per pk: faster than sorting the union (np.unique)
        for part in parts:
            held[part] = True
        return np.flatnonzero(held)

    def document_frequencies(self) -> dict[str, int]:
        """Each term and how many documents hold it."""
        counts = np.diff(self.starts).tolist()
        return {term: counts[column] for term, column in self.columns.items()}

    def top(
        self, stems: Sequence[str] | Mapping[str, float], n: int, allowed: np.ndarray | None
    ) -> list[tuple[int, float]]:
        """The n best documents for the terms (repeats count again; or each term's weight), among the `allowed`
        pks if given: (pk, score) pairs, best first."""
        pks, scores = self.top_arrays(stems, n, allowed)
        return list(zip(pks.tolist(), scores.tolist()))

    def top_arrays(
        self, stems: Sequence[str] | Mapping[str, float], n: int, allowed: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """`top` as arrays of pks and scores."""
        scores = np.zeros(self.size)
        touched = np.zeros(self.size, dtype=bool)
        for column, times in self._wanted(stems):
            start, end = self.starts[column], self.starts[column + 1]
            rows = self.pks[start:end]
            scores[rows] += self.weights[start:end] * (self.idf[column] * times)
            touched[rows] = True
        return self._best(scores, touched, n, None if allowed is None else self._inside(allowed))

    def top_many(
        self, asked: Sequence[Sequence[str] | Mapping[str, float]], n: int, allowed: np.ndarray | None
    ) -> list[tuple[np.ndarray, np.ndarray]]:
        """`top_arrays` of each query's terms, every query at once (a calibration's hundreds: 0.05 CPU-s for
        STS-B's 495 against 0.12 one at a time): their score rows side by side, SCORED at most at a time, each
        row summed a term at a time in the query's order (the same float sums as `top_arrays`), a term of every
        query added in one step."""
        wanted = [self._wanted(stems) for stems in asked]
        inside = None if allowed is None else self._inside(allowed)
        block = max(1, SCORED // self.size)
        out = []
        for first in range(0, len(wanted), block):
            part = wanted[first : first + block]
            scores = np.zeros((len(part), self.size))
            touched = np.zeros((len(part), self.size), dtype=bool)
            for term in range(max(map(len, part), default=0)):
                queries = [i for i, terms in enumerate(part) if len(terms) > term]
                # one query's term holds a document once: no two additions to one cell in a step
                cells, values = self._postings(queries, [part[i][term] for i in queries])
                scores.ravel()[cells] += values
                touched.ravel()[cells] = True
            out += [self._best(row, held, n, inside) for row, held in zip(scores, touched)]
        return out

    def _postings(self, queries: list[int], terms: list[tuple[int, float]]) -> tuple[np.ndarray, np.ndarray]:
        """The cells (query row x size + pk) of each query's term's documents and their weighted bm25 weights."""
        columns = np.array([column for column, _ in terms], dtype=np.int64)
        times = np.array([times for _, times in terms], dtype=np.float64)
        begin, lengths = self.starts[columns], self.starts[columns + 1] - self.starts[columns]
        at = np.arange(lengths.sum()) + np.repeat(begin - (np.cumsum(lengths) - lengths), lengths)
        cells = np.repeat(np.array(queries, dtype=np.int64), lengths) * self.size + self.pks[at]
        return cells, self.weights[at] * np.repeat(self.idf[columns] * times, lengths)

    def _inside(self, allowed: np.ndarray) -> np.ndarray:
        """A flag per pk: whether `allowed` holds it."""
        inside = np.zeros(self.size, dtype=bool)
        inside[allowed[allowed < self.size]] = True
        return inside

    def _wanted(self, stems: Sequence[str] | Mapping[str, float]) -> list[tuple[int, float]]:
        """The terms' columns that the matrix holds and their weights (repeats counted), in the query's order."""
        weighted = stems if isinstance(stems, Mapping) else {}
        if not isinstance(stems, Mapping):
            for stem in stems:
                weighted[stem] = weighted.get(stem, 0) + 1
        return [(self.columns[stem], weight) for stem, weight in weighted.items() if stem in self.columns]

    @staticmethod
    def _best(
        scores: np.ndarray, touched: np.ndarray, n: int, inside: np.ndarray | None
    ) -> tuple[np.ndarray, np.ndarray]:
        """The n best of the documents touched (and inside), by score, ties by pk."""
        candidates = np.flatnonzero(touched if inside is None else touched & inside)
        if len(candidates) > n:  # those above the n-th score and all tied with it, so ties go by pk at any n
            values = scores[candidates]
            candidates = candidates[values >= -np.partition(-values, n - 1)[n - 1]]
        best = candidates[np.lexsort((candidates, -scores[candidates]))[:n]]  # ties: lower pk first
        return best.astype(np.int64), scores[best]
