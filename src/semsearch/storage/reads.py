"""The reads other stages ask of the document store, as its methods named for what they return: keyword rankings,
the documents a keyword expression matches and the keyword index's terms (retrieval), a metadata field's typed
values (facets) and the fields' types (info), the committed content's version (the bm25 matrix's cache key), a
read snapshot and every row in order (export), what each document is whatever its pk (the calibration's
draw), the passages' locations in their files (a hit's). SQL stays in
storage/ (issue 24); every value is a bound parameter."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import sqlite_utils

Scored = list[tuple[int, float]]  # (document pk, bm25 score, higher better), best first
# pk, id, title, text, metadata (JSON), sections (JSON, None: none; stores made before them have none)
DocumentRow = tuple[int, str, str | None, str, str, str | None]
FacetRow = tuple[int, str, int | float | None, str | None]  # pk, JSON kind, number, string
RANKED = "SELECT rowid, -bm25(keywords, ?, 1.0) AS score FROM keywords WHERE keywords MATCH ?"
WITHIN = " AND rowid IN (SELECT value FROM json_each(?))"
SCALAR_KINDS = "('text', 'integer', 'real', 'true', 'false')"


class StoreReads:
    """Mixed into DocumentStore (store.py), whose connection `db` these read."""

    db: sqlite_utils.Database
    # inside `read_snapshot`: a read transaction, nothing of this connection's uncommitted
    _in_snapshot = False
    guarded: Callable[[], contextlib.AbstractContextManager[None]]
    generation: Callable[[], int]

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

    def keyword_matches(self, expression: str) -> np.ndarray:
        """The pks (sorted) of the documents a MATCH expression matches, fetched as one string."""
        sql = "SELECT group_concat(rowid) FROM keywords WHERE keywords MATCH ?"
        with self.guarded():
            (joined,) = self.db.execute(sql, [expression]).fetchone()
        return np.unique(np.array(joined.split(",") if joined else [], dtype=np.int64))

    def facet_rows(self, path: str) -> list[FacetRow]:
        """A metadata field's typed values (the `meta` table, schema 2): (pk, kind, number, string) a row per
        value, a list's members each (not the list or an object itself), in no order."""
        sql = f"SELECT pk, kind, num, str FROM meta WHERE path = ? AND kind IN {SCALAR_KINDS}"
        with self.guarded():
            return self.db.execute(sql, [path]).fetchall()

    def field_kinds(self) -> list[tuple[str, str, int]]:
        """(field path, JSON kind, how many values) for every field path of the typed metadata, in path order
        (a list is a value of kind array, its members values of their own kinds); read once per generation."""
        generation = self.generation()
        cached = self.__dict__.get("_field_kinds")
        if cached is None or cached[0] != generation:
            sql = "SELECT path, kind, count(*) FROM meta GROUP BY path, kind ORDER BY path, kind"
            with self.guarded():
                cached = self._field_kinds = (generation, self.db.execute(sql).fetchall())
        return cached[1]

    def plain_keyword_ranking(self, expression: str, limit: int) -> Scored:
        """The `limit` best documents by FTS5's own bm25 (its default weights, ties in its order)."""
        sql = "SELECT rowid, -bm25(keywords) AS score FROM keywords WHERE keywords MATCH ? ORDER BY score DESC LIMIT ?"
        with self.guarded():
            return [(int(pk), float(score)) for pk, score in self.db.execute(sql, [expression, limit])]

    @property
    def uncommitted(self) -> bool:
        """Whether this connection is inside a write's transaction: what it reads may not be committed (a read
        snapshot's content is: what a cache keyed by generation or version may keep)."""
        return self.db.conn.in_transaction and not self._in_snapshot

    def content_version(self) -> tuple[int, int] | None:
        """What identifies the committed content this connection sees: SQLite's data_version (other connections'
        commits) and total_changes (this one's writes); None inside a write's transaction (its content is not
        committed). Inside a read snapshot (`read_snapshot`) it is the snapshot's: data_version stays as the
        snapshot began while others commit."""
        if self.uncommitted:
            return None
        connection = self.db.conn
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

    def content_names(self) -> tuple[np.ndarray, list[str]]:
        """Every document's pk (sorted) and what it is whatever its pk or when it was stored: its id and content
        hash (title, text, metadata), joined by a NUL."""
        rows = self.db.execute("SELECT pk, id || char(0) || hash FROM documents ORDER BY pk").fetchall()
        return np.array([pk for pk, _ in rows], dtype=np.int64), [name for _, name in rows]

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
        self._in_snapshot = True
        try:
            yield
        finally:
            self._in_snapshot = False
            connection.execute("COMMIT")

    def _has_locations(self) -> bool:
        """Whether the store keeps sections and locations (schema 6; older ones, open read-only, do not)."""
        return self.db.execute("PRAGMA user_version").fetchone()[0] >= 6

    def locations(self, rows: Sequence[int]) -> dict[int, dict[str, object]]:
        """The locations in their files (Location.to_json()) of these vector rows, for those that have one (a
        passage of a document with sections; none in a store made before locations)."""
        if not self._has_locations():
            return {}
        found = self.db.execute(
            "SELECT pk, location FROM locations WHERE pk IN (SELECT value FROM json_each(?))",
            [json.dumps([int(row) for row in rows])],
        )
        return {pk: json.loads(location) for pk, location in found}

    def document_batches(self, size: int) -> Iterator[list[DocumentRow]]:
        """Every document's row in pk order, `size` rows at a time, read by one cursor (memory stays a batch)."""
        sections = "sections" if self._has_locations() else "NULL"
        cursor = self.db.conn.execute(
            f"SELECT pk, id, title, text, metadata, {sections} FROM documents ORDER BY pk"
        )
        while rows := cursor.fetchmany(size):
            yield rows

    def field_examples(self) -> dict[str, dict[str, Any]]:
        """Each metadata field path (nested ones dotted) with the JSON kinds of its values (a list's members
        counted as values), how many documents hold each kind and one value of it, from the typed `meta` table
        (schema 2; an older store: {}). What an agent or a page may filter on (filters.py)."""
        kinds: dict[str, dict[str, Any]] = {}
        try:
            with self.guarded():
                rows = self.db.execute(
                    "SELECT path, kind, count(DISTINCT pk) FROM meta GROUP BY path, kind ORDER BY path, kind"
                ).fetchall()
                for path, kind, documents in rows:
                    example = self.db.execute(
                        "SELECT coalesce(str, num) FROM meta WHERE path = ? AND kind = ? LIMIT 1",
                        [path, kind],
                    ).fetchone()[0]
                    kinds.setdefault(path, {})[kind] = {"documents": documents, "example": example}
        except sqlite3.OperationalError:  # no meta table: a store of schema 1, open read-only
            return {}
        return kinds
