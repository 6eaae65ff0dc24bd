"""Query words as the keyword index makes them terms: FTS5's own tokenizer (schema.KEYWORD_TOKENIZER, porter
stemming) run on them in a private in-memory table, so a query's terms are the index's exactly. It holds only
query words, never the store's data; it lives here because it is SQL and must follow the index's tokenizer."""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Sequence

from .schema import KEYWORD_TOKENIZER

STEMS_CACHED = 50_000


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
        known = self.terms_of(words)
        return [term for word in words for term in known[word]]

    def terms_of(self, words: Sequence[str]) -> dict[str, tuple[str, ...]]:
        """Each of the words and its index terms."""
        with self.lock:  # one thread at a time on the in-memory table and the cache
            new = [word for word in dict.fromkeys(words) if word not in self.cache]
            if new:
                if len(self.cache) + len(new) > STEMS_CACHED:
                    self.cache.clear()
                    new = list(dict.fromkeys(words))  # the words cached before are gone too
                self.db.executemany("INSERT INTO words (rowid, word) VALUES (?, ?)", enumerate(new))
                found: dict[int, list[tuple[int, str]]] = {}
                for term, row, offset in self.db.execute("SELECT term, doc, offset FROM tokens"):
                    found.setdefault(row, []).append((offset, term))
                self.db.execute("DELETE FROM words")
                self.db.commit()
                for row, word in enumerate(new):
                    self.cache[word] = tuple(term for _, term in sorted(found.get(row, [])))
            return {word: self.cache[word] for word in words}


STEMMER = Stemmer()


def term_rows(texts: Sequence[tuple[int, str | None, str]]) -> list[tuple[str, int, str]]:
    """The terms of these (pk, title, text) rows as the keyword index would hold them were each a document, in
    the form of DocumentStore.keyword_term_rows (term, occurrences, each occurrence as `pk * 2 + 1 if in the
    title else 0`): FTS5's own tokenizer in a private in-memory table (a calibration's passages, ranked as
    places: retrieval/calibration_places.py)."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(f"CREATE VIRTUAL TABLE texts USING fts5(title, text, tokenize='{KEYWORD_TOKENIZER}')")
        db.execute("CREATE VIRTUAL TABLE tokens USING fts5vocab(texts, 'instance')")
        db.executemany("INSERT INTO texts (rowid, title, text) VALUES (?, ?, ?)", texts)
        return db.execute(
            "SELECT term, count(*), group_concat(doc * 2 + (col = 'title')) FROM tokens GROUP BY term"
        ).fetchall()
    finally:
        db.close()
