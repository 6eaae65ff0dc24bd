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

import sqlite3
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..storage.schema import KEYWORD_TOKENIZER
from ..storage.store import DocumentStore

K1, B = 1.2, 0.75  # FTS5's bm25 constants
# A title's words count twice a text's (FTS5's bm25 column weights): better nDCG@10 on every query style of
# SciFact and Cranfield (benchmarks/results/keyword-engine.md).
TITLE_WEIGHT = 2.0
IDF_FLOOR = 1e-6  # FTS5 floors a term's IDF here when it is in half the rows or more
STEMS_CACHED = 50_000
# Above this many (term, document) pairs FTS5 ranks instead: the matrix holds 12 bytes a pair (WordNet's 117,791
# glosses: 1.5 million), and reading it briefly several times that.
MAX_POSTINGS = 20_000_000


def state_key(store: DocumentStore) -> tuple[int, int] | None:
    """What identifies the committed content the store's connection sees (None: inside a transaction)."""
    connection = store.db.conn
    if connection.in_transaction:
        return None
    return (connection.execute("PRAGMA data_version").fetchone()[0], connection.total_changes)


def postings(connection: sqlite3.Connection) -> int:
    """How many (term, document) pairs the keyword index holds (fts5vocab's per-term document counts)."""
    connection.execute(
        "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_terms USING fts5vocab(main, keywords, 'row')"
    )
    return connection.execute("SELECT coalesce(sum(doc), 0) FROM temp.keyword_terms").fetchone()[0]


class Stemmer:
    """Query words as FTS5 indexes them (its own tokenizer, in an in-memory table), remembered."""

    def __init__(self) -> None:
        self.db = sqlite3.connect(":memory:", check_same_thread=False)
        self.db.execute(f"CREATE VIRTUAL TABLE words USING fts5(word, tokenize='{KEYWORD_TOKENIZER}')")
        self.db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(words, 'instance')")
        self.cache: dict[str, tuple[str, ...]] = {}
        self.lock = threading.Lock()

    def stems(self, words: Sequence[str]) -> list[str]:
        """The index terms of the words, in order (a word may give none, or several)."""
        with self.lock:  # one thread at a time on the in-memory table and the cache
            new = [word for word in dict.fromkeys(words) if word not in self.cache]
            if new:
                if len(self.cache) + len(new) > STEMS_CACHED:
                    self.cache.clear()
                self.db.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(new))
                found: dict[int, list[tuple[int, str]]] = {}
                for term, row, offset in self.db.execute("SELECT term, doc, offset FROM tokens"):
                    found.setdefault(row, []).append((offset, term))
                self.db.execute("DELETE FROM words")
                self.db.commit()
                for row, word in enumerate(new):
                    self.cache[word] = tuple(term for _, term in sorted(found.get(row, [])))
            return [term for word in words for term in self.cache[word]]


STEMMER = Stemmer()


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

    @classmethod
    def read(cls, store: DocumentStore) -> Bm25Matrix | None:
        """The matrix of the store's committed content (None: inside a transaction, or over MAX_POSTINGS)."""
        connection = store.db.conn
        connection.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_tokens USING fts5vocab(main, keywords, 'instance')"
        )
        key = state_key(store)
        if key is None or postings(connection) > MAX_POSTINGS:
            return None
        # fts5vocab reads the FTS5 index's own tokens: every document's terms, one row per occurrence, in order
        # of term, document, column; one concatenated string per term (of pk * 2 + 1 for a title's) is 5x faster
        # to fetch than a row each.
        rows = connection.execute(
            "SELECT term, count(*), group_concat(doc * 2 + (col = 'title')) FROM temp.keyword_tokens GROUP BY term"
        ).fetchall()
        documents = connection.execute("SELECT count(*) FROM documents").fetchone()[0]
        counts = np.array([count for _, count, _ in rows], dtype=np.int64)
        coded = np.array(",".join(joined for _, _, joined in rows).split(",") if rows else [], dtype=np.int64)
        docs, in_title = coded >> 1, (coded & 1).astype(bool)
        term_of = np.repeat(np.arange(len(rows), dtype=np.int64), counts)
        size = int(docs.max()) + 1 if len(docs) else 1
        lengths = np.bincount(docs, minlength=size).astype(np.float64)  # tokens per document, all columns
        average = lengths.sum() / max(documents, 1)
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
        idf = np.log((documents - frequency + 0.5) / (frequency + 0.5))
        idf[idf <= 0] = IDF_FLOOR
        starts = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(frequency.astype(np.int64), out=starts[1:])
        columns = {term: i for i, (term, _, _) in enumerate(rows)}
        return cls(key, columns, starts, pks.astype(np.int32), weights, idf, size)

    def top(self, stems: Sequence[str], n: int, allowed: np.ndarray | None) -> list[tuple[int, float]]:
        """The n best documents for the terms (repeats count again), among the `allowed` pks if given."""
        wanted: dict[int, int] = {}
        for stem in stems:
            column = self.columns.get(stem)
            if column is not None:
                wanted[column] = wanted.get(column, 0) + 1
        if not wanted:
            return []
        scores = np.zeros(self.size)
        touched = np.zeros(self.size, dtype=bool)
        for column, times in wanted.items():
            start, end = self.starts[column], self.starts[column + 1]
            rows = self.pks[start:end]
            scores[rows] += self.weights[start:end] * (self.idf[column] * times)
            touched[rows] = True
        if allowed is not None:
            inside = np.zeros(self.size, dtype=bool)
            inside[allowed[allowed < self.size]] = True
            touched &= inside
        candidates = np.flatnonzero(touched)
        if len(candidates) > n:
            best = np.argpartition(-scores[candidates], n - 1)[:n]
            candidates = candidates[best]
        order = np.lexsort((candidates, -scores[candidates]))  # ties: lower pk first
        return [(int(pk), float(scores[pk])) for pk in candidates[order]]
