"""The reads other stages ask of the document store, as its methods named for what they return: keyword rankings
and the keyword index's terms (retrieval), the committed content's version (the bm25 matrix's cache key), a read
snapshot and every row in order (export). SQL stays in storage/ (issue 24); every value is a bound parameter."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import sqlite_utils

Scored = list[tuple[int, float]]  # (document pk, bm25 score, higher better), best first
DocumentRow = tuple[int, str, str | None, str, str]  # pk, id, title, text, metadata (JSON)
RANKED = "SELECT rowid, -bm25(keywords, ?, 1.0) AS score FROM keywords WHERE keywords MATCH ?"
WITHIN = " AND rowid IN (SELECT value FROM json_each(?))"


class StoreReads:
    """Mixed into DocumentStore (store.py), whose connection `db` these read."""

    db: sqlite_utils.Database
    guarded: Callable[[], contextlib.AbstractContextManager[None]]

    def keyword_ranking(
        self, expression: str, limit: int, title_weight: float = 1.0, within: Sequence[int] | None = None
    ) -> Scored:
        """The `limit` best documents by FTS5's bm25 for a MATCH expression (a title's words weighing
        `title_weight`, ties by pk), among the `within` pks if given."""
        sql, params = RANKED, [title_weight, expression]
        if within is not None:
            sql, params = sql + WITHIN, [*params, json.dumps(np.asarray(within).tolist())]
        with self.guarded():
            rows = self.db.execute(sql + " ORDER BY score DESC, rowid LIMIT ?", [*params, limit])
            return [(int(pk), float(score)) for pk, score in rows]

    def plain_keyword_ranking(self, expression: str, limit: int) -> Scored:
        """The `limit` best documents by FTS5's own bm25 (its default weights, ties in its order)."""
        sql = "SELECT rowid, -bm25(keywords) AS score FROM keywords WHERE keywords MATCH ? ORDER BY score DESC LIMIT ?"
        with self.guarded():
            return [(int(pk), float(score)) for pk, score in self.db.execute(sql, [expression, limit])]

    def content_version(self) -> tuple[int, int] | None:
        """What identifies the committed content this connection sees: SQLite's data_version (other connections'
        commits) and total_changes (this one's writes); None inside a transaction."""
        connection = self.db.conn
        if connection.in_transaction:
            return None
        return (connection.execute("PRAGMA data_version").fetchone()[0], connection.total_changes)

    def keyword_postings(self) -> int:
        """How many (term, document) pairs the keyword index holds (fts5vocab's per-term document counts)."""
        connection = self.db.conn
        connection.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_terms USING fts5vocab(main, keywords, 'row')"
        )
        return connection.execute("SELECT coalesce(sum(doc), 0) FROM temp.keyword_terms").fetchone()[0]

    def keyword_vocabulary(self) -> dict[str, int]:
        """Each term of the keyword index and how many documents hold it (fts5vocab)."""
        self.keyword_postings()  # makes the vocabulary table
        return dict(self.db.conn.execute("SELECT term, doc FROM temp.keyword_terms WHERE doc > 0").fetchall())

    def keyword_term_rows(self) -> list[tuple[str, int, str]]:
        """Each term of the keyword index, in term order: (term, occurrences, the occurrences as one string of
        comma-separated `pk * 2 + 1 if in the title else 0`, in order of document then column)."""
        connection = self.db.conn
        connection.execute(
            "CREATE VIRTUAL TABLE IF NOT EXISTS temp.keyword_tokens USING fts5vocab(main, keywords, 'instance')"
        )
        # one concatenated string per term is 5x faster to fetch than a row per occurrence
        return connection.execute(
            "SELECT term, count(*), group_concat(doc * 2 + (col = 'title')) FROM temp.keyword_tokens GROUP BY term"
        ).fetchall()

    @contextlib.contextmanager
    def read_snapshot(self) -> Iterator[None]:
        """Reads inside see one committed state (the generation and the rows it names agree)."""
        connection = self.db.conn
        if connection.in_transaction:
            yield
            return
        connection.execute("BEGIN")
        try:
            yield
        finally:
            connection.execute("COMMIT")

    def document_batches(self, size: int) -> Iterator[list[DocumentRow]]:
        """Every document's row in pk order, `size` rows at a time, read by one cursor (memory stays a batch)."""
        cursor = self.db.conn.execute("SELECT pk, id, title, text, metadata FROM documents ORDER BY pk")
        while rows := cursor.fetchmany(size):
            yield rows
