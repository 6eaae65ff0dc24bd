"""The document store: documents and their metadata in SQLite (WAL), keyed by the integer row id that the
vector index uses. Filters (`--where`) become SQL with every value, field names included, bound."""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..documents import Document
from ..errors import IndexStateError
from .analysis import register as register_analysis
from .damage import RESTORE, DamagedFile, brief, size_problem, sqlite_problem
from .filters import Condition, RowCache, check_fields, condition_sql, where_sql
from .locations import location_rows, sections_json
from .passages import PassageMap
from .places import PlaceUpdates, field_counts
from .reads import StoreReads
from .schema import META_ROWS, MIGRATIONS, NEW_ROWS, SCHEMA_VERSION
from .sqlitelib import database
from .synced import SyncedFiles

TABLES = ("documents", "fields", "state")
# SQLite's primary result codes (fixed by its C API; Python's sqlite3 names them only from 3.11 on).
SQLITE_READONLY, SQLITE_CORRUPT, SQLITE_CANTOPEN, SQLITE_NOTADB = 8, 11, 14, 26
# A writable open failing so (the file or its directory cannot be written) opens read-only instead.
UNWRITABLE = (SQLITE_READONLY, SQLITE_CANTOPEN)

# The stores open in this process, by file. A file SQLite has open is never opened by other code here: POSIX
# locks belong to the process, and closing any descriptor of the file drops SQLite's, after which another
# process's last close deletes the write-ahead log under the live connections (SQLite's "How to corrupt", 2.2).
_OPEN: dict[str, int] = {}
_OPEN_LOCK = threading.Lock()


class DocumentStore(StoreReads, SyncedFiles, PlaceUpdates):
    """`read_only`: never write (storage that cannot be written; also set when a writable open fails so).
    `create`: a missing or empty file is a new store (else it is damage: an index that has written documents
    needs them)."""

    FILE = "documents.db"

    def __init__(self, path: str | Path, *, read_only: bool = False, create: bool = True):
        self.path = Path(path)
        self.read_only = read_only
        with _OPEN_LOCK:
            if (not create or read_only) and not _OPEN.get(self._key):
                self._check_whole()
            _OPEN[self._key] = _OPEN.get(self._key, 0) + 1
        try:
            self._connect()
        except BaseException:
            self._forget()
            raise

    @property
    def _key(self) -> str:
        return os.path.realpath(self.path)

    def _forget(self) -> None:
        with _OPEN_LOCK:
            _OPEN[self._key] -= 1

    def _connect(self) -> None:
        with self.guarded():
            if not self.read_only:
                try:
                    self.db = database(register_analysis(sqlite3.connect(self.path)))
                    self.db.execute("PRAGMA busy_timeout = 30000")
                    if self.db.journal_mode != "wal":
                        self.db.enable_wal()
                    self._migrate()
                    return
                except sqlite3.OperationalError as error:
                    code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
                    if code not in UNWRITABLE or not self.path.is_file():
                        raise
                    with contextlib.suppress(AttributeError):
                        self.db.close()
                    self.read_only = True
            self.db = database(self._read_only_connection())
            self.db.execute("PRAGMA busy_timeout = 30000")
            self._check_readable()

    def _log_files(self) -> tuple[Path, Path]:
        return self.path.with_name(self.path.name + "-wal"), self.path.with_name(self.path.name + "-shm")

    def _check_whole(self) -> None:
        """The file is there and as long as its header says (a write-ahead log holding more is SQLite's to
        check as it reads)."""
        wal = self._log_files()[0]
        logged = wal.is_file() and wal.stat().st_size > 0
        if problem := size_problem(self.path) if logged else sqlite_problem(self.path):
            raise DamagedFile(self.path, problem, RESTORE)

    def _read_only_connection(self) -> sqlite3.Connection:
        """SQLite's read-only open. A store in WAL mode needs its -wal and -shm files, or a directory where
        they can be made; without either it is opened immutable, which reads the main file alone and takes no
        locks: right while nothing writes it, as nothing can here. Committed changes still in a log that
        cannot be read so are refused rather than silently missed."""
        wal, shm = self._log_files()
        immutable = not os.access(self.path.parent, os.W_OK) and not (wal.is_file() and shm.is_file())
        if immutable and wal.is_file() and wal.stat().st_size > 0:
            raise IndexStateError(
                f"{wal} holds committed changes that SQLite can read only with {shm.name} beside it or write "
                f"access to {self.path.parent}: open the index once where it can be written"
            )
        uri = self.path.resolve().as_uri() + "?mode=ro" + ("&immutable=1" if immutable else "")
        return sqlite3.connect(uri, uri=True, check_same_thread=False)

    def _check_readable(self) -> None:
        """Without migrations (nothing can be written), the schema must be one this semsearch reads."""
        self._check_version()
        tables = {row[0] for row in self.db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if missing := [table for table in TABLES if table not in tables]:
            raise DamagedFile(self.path, f"no {', '.join(missing)} table", RESTORE)

    @contextlib.contextmanager
    def guarded(self) -> Iterator[None]:
        """SQLite's errors on this file as semsearch's: a damaged file named with what restores it."""
        try:
            yield
        except sqlite3.DatabaseError as error:
            raise self.error(error) from None

    def error(self, error: sqlite3.DatabaseError) -> IndexStateError:
        code = (getattr(error, "sqlite_errorcode", None) or 0) & 0xFF
        if code in (SQLITE_CORRUPT, SQLITE_NOTADB):
            return DamagedFile(self.path, brief(error), RESTORE)
        if code == SQLITE_READONLY:
            return IndexStateError(f"{self.path.parent} is read-only: {brief(error)}")
        return IndexStateError(f"{self.path}: {brief(error)}")

    def integrity(self) -> str | None:
        """SQLite's quick check of the whole file: None when it is whole, else what is wrong."""
        with self.guarded():
            rows = [row[0] for row in self.db.execute("PRAGMA quick_check(3)")]
        return None if rows == ["ok"] else "; ".join(rows)

    @property
    def has_keywords(self) -> bool:
        """Whether the keyword index exists (a store made before it, open read-only, has none)."""
        return self.schema_version >= 3

    @property
    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _check_version(self) -> int:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise IndexStateError(
                f"{self.path}: written by a newer semsearch (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade semsearch"
            )
        return version

    def _migrate(self) -> None:
        if self._check_version() == SCHEMA_VERSION:
            return
        conn = self.db.conn
        conn.execute("BEGIN IMMEDIATE")  # another process may be migrating: take turns, then look again
        try:
            for statements in MIGRATIONS[self.schema_version :]:
                for statement in statements:
                    conn.execute(statement)
            conn.execute("COMMIT")
        except BaseException:
            conn.execute("ROLLBACK")
            raise

    def reclaim(self, share: float = 0.25, *, pack: bool = False) -> bool:
        """VACUUM when at least `share` of the file is free pages (deletes leave them): the file shrinks to its
        rows. With `pack`, VACUUM whatever is free: a first write's indexes (ids, metadata values, keywords)
        were filled in the documents' order, pages part full, and VACUUM rebuilds each in its own order (21
        bytes a WordNet gloss fewer, a second on its 54 MB; it needs the store's size again on disk while it
        runs). Outside any transaction; readers keep their snapshot meanwhile. True if it ran."""
        pages = self.db.execute("PRAGMA page_count").fetchone()[0]
        free = self.db.execute("PRAGMA freelist_count").fetchone()[0]
        if not pack and (not pages or free < share * pages or free < 16):
            return False
        self.db.execute("VACUUM")
        self.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        return True

    def generation(self) -> int:
        """The index generation whose documents these are (committed with them, see index.py)."""
        row = self.db.execute("SELECT value FROM state WHERE key = 'generation'").fetchone()
        return row[0] if row else 0

    def committed(self) -> tuple[int, int]:
        """The committed generation and its number of documents, read in one statement (one snapshot)."""
        sql = "SELECT (SELECT value FROM state WHERE key = 'generation'), (SELECT count(*) FROM documents)"
        generation, count = self.db.execute(sql).fetchone()
        return generation or 0, count

    def set_generation(self, generation: int) -> None:
        self.db.conn.execute(
            "INSERT INTO state (key, value) VALUES ('generation', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [generation],
        )

    def close(self) -> None:
        if "db" in self.__dict__ and not getattr(self, "_closed", False):
            self._closed = True
            self.db.close()
            self._forget()

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM documents").fetchone()[0]

    def all_pks(self) -> np.ndarray:
        """Every document's pk, sorted."""
        return self._pks("SELECT pk FROM documents", {})

    def vector_pks(self) -> np.ndarray:
        """Every vector row (a passage of a document), sorted: the rows of the raw vectors and the index."""
        return self.passage_pks(self.all_pks())

    def long_documents(self) -> tuple[np.ndarray, np.ndarray]:
        """The documents of more than one passage: their pks (sorted) and passage counts."""
        sql = "SELECT pk, passages FROM documents WHERE passages > 1 ORDER BY pk"
        rows = np.array(self.db.execute(sql).fetchall(), dtype=np.int64).reshape(-1, 2)
        return rows[:, 0], rows[:, 1]

    def passage_pks(self, doc_pks: np.ndarray) -> np.ndarray:
        """The vector rows of these documents (sorted unique pks), sorted."""
        return self.passages().rows_of(doc_pks)

    def passages(self) -> PassageMap:
        """Which document each vector row belongs to, cached by generation."""
        generation = self.generation()
        cached = self.__dict__.get("_passages")
        if cached is None or cached[0] != generation or self.uncommitted:
            cached = (generation, PassageMap(*self.long_documents()))
            if not self.uncommitted:
                self._passages = cached
        return cached[1]

    def spans(self, pks: Sequence[int]) -> dict[int, tuple[int, int]]:
        """The character spans of these passages (none for a document of one passage)."""
        rows = self.db.execute(
            "SELECT pk, start, end FROM passages WHERE pk IN (SELECT value FROM json_each(?))",
            [json.dumps([int(pk) for pk in pks])],
        )
        return {pk: (start, end) for pk, start, end in rows}

    def ids(self) -> set[str]:
        """Every document id in the store."""
        return {row[0] for row in self.db.execute("select id from documents")}

    def existing_ids(self, ids: Sequence[str]) -> dict[str, tuple[int, str]]:
        """id -> (pk, content hash) for those of `ids` already stored."""
        rows = self.db.execute(
            "SELECT id, pk, hash FROM documents WHERE id IN (SELECT value FROM json_each(?))",
            [json.dumps(ids)],
        )
        return {doc_id: (pk, digest) for doc_id, pk, digest in rows}

    def insert(
        self,
        documents: Iterable[Document],
        pks: Iterable[int],
        spans: Sequence[Sequence[tuple[int, int]]] | None = None,
    ) -> None:
        """Insert inside the caller's transaction (see `transaction`). `spans`: each document's passages as
        character spans (a document of n > 1 passages owns the vector rows pk .. pk + n - 1); the passages of
        a document with sections are stored with their locations."""
        documents, pks = list(documents), list(pks)
        spans = spans or [[]] * len(documents)
        metadata = [json.dumps(doc.metadata, ensure_ascii=False) for doc in documents]
        # rows made as SQLite takes them, not held as lists: a partition's rows at once raised the high-water
        # mark of Python's arenas, which a few long-lived objects then keep (benchmarks/results/files.md)
        values = (
            (pk, doc.id, doc.title, doc.text, fields, doc.content_hash, len(parts) or 1, sections_json(doc))
            for doc, pk, parts, fields in zip(documents, pks, spans, metadata)
        )
        self.db.conn.executemany(
            "INSERT INTO documents (pk, id, title, text, metadata, hash, passages, sections) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            values,
        )
        self.db.conn.executemany(
            "INSERT INTO locations (pk, location) VALUES (?, ?)", location_rows(documents, pks, spans)
        )
        self.db.conn.executemany(
            "INSERT INTO passages (pk, start, end) VALUES (?, ?, ?)",
            (
                (pk + i, start, end)
                for pk, parts in zip(pks, spans)
                if len(parts) > 1
                for i, (start, end) in enumerate(parts)
            ),
        )
        self.db.conn.execute(META_ROWS.format(rows=NEW_ROWS), [json.dumps(pks)])
        self._allowed().clear()
        counts = field_counts(metadata)
        self.db.conn.executemany(
            "INSERT INTO fields (name, documents) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET documents = documents + excluded.documents",
            list(counts.items()),
        )

    def delete(self, pks: Sequence[int]) -> None:
        """Delete rows inside the caller's transaction, keeping the field counts right."""
        payload = [json.dumps([int(pk) for pk in pks])]
        counts = self.stored_field_counts(payload)
        rows = [json.dumps(self.passage_pks(np.asarray(pks, dtype=np.int64)).tolist())]
        self.db.conn.execute("DELETE FROM passages WHERE pk IN (SELECT value FROM json_each(?))", rows)
        self.db.conn.execute("DELETE FROM locations WHERE pk IN (SELECT value FROM json_each(?))", rows)
        self.db.conn.execute("DELETE FROM documents WHERE pk IN (SELECT value FROM json_each(?))", payload)
        self.db.conn.execute("DELETE FROM meta WHERE pk IN (SELECT value FROM json_each(?))", payload)
        self._allowed().clear()
        self.db.conn.executemany(
            "UPDATE fields SET documents = documents - ? WHERE name = ?",
            [(n, key) for key, n in counts.items()],
        )

    def transaction(self) -> sqlite3.Connection:
        """A context manager: everything inside commits together or not at all."""
        return self.db.conn

    @contextlib.contextmanager
    def scratch(self, texts: dict[int, str]) -> Iterator[None]:
        """Reads inside see these documents with these texts (and the keyword index, by its triggers); undone."""
        self.db.conn.execute("SAVEPOINT scratch")
        try:
            self.db.conn.executemany(
                "UPDATE documents SET text = ? WHERE pk = ?", [(t, pk) for pk, t in texts.items()]
            )
            yield
        finally:
            self.db.conn.execute("ROLLBACK TO scratch")
            self.db.conn.execute("RELEASE scratch")

    def fields(self) -> list[str]:
        return [
            row[0] for row in self.db.execute("SELECT name FROM fields WHERE documents > 0 ORDER BY name")
        ]

    def get(self, pks: Sequence[int]) -> dict[int, dict[str, Any]]:
        """Rows for the given pks, in one query."""
        rows = self.db.execute(
            "SELECT pk, id, title, text, metadata FROM documents WHERE pk IN (SELECT value FROM json_each(?))",
            [json.dumps([int(pk) for pk in pks])],
        )
        return {
            pk: {"id": doc_id, "title": title, "text": text, "metadata": json.loads(metadata)}
            for pk, doc_id, title, text, metadata in rows
        }

    def matching_pks(self, conditions: Sequence[Condition]) -> np.ndarray:
        """Row ids (sorted) of the documents that meet every condition (AND; the language: filters.py). Each
        condition reads the typed metadata's indexes (a store of schema 1, open read-only, its JSON); the rows
        are cached by generation and condition (documents change only with the generation)."""
        conditions = list(conditions)
        check_fields(conditions, set(self.fields()))
        cache = self._allowed()
        with self.read_snapshot():
            generation = self.generation()
            parts = [
                cache.get((generation, c), functools.partial(self._matching, c, generation))
                for c in conditions
            ]
        return functools.reduce(lambda a, b: np.intersect1d(a, b, assume_unique=True), parts)

    def _matching(self, condition: Condition, generation: int) -> np.ndarray:
        if self.schema_version < 2:  # read-only and made before the typed table: the JSON, as before
            where, params = where_sql([condition], set(self.fields()))
            return self._pks("SELECT pk FROM documents" + where, params)
        sql, params, negate = condition_sql(condition)
        found = self._pks(sql, params)
        if not negate:
            return found
        every = self._allowed().get((generation, None), lambda: self._pks("SELECT pk FROM documents", {}))
        return np.setdiff1d(every, found, assume_unique=True)

    def _pks(self, sql: str, params: dict[str, Any]) -> np.ndarray:
        """The distinct pks a query returns, sorted; fetched as one string (a row per pk costs 3x more), parsed
        in C (a Python string per pk: 9 s and 600 MB more at 10 million rows, against 1.7 s)."""
        (joined,) = self.db.execute(f"SELECT group_concat(pk) FROM ({sql})", params).fetchone()
        if not joined:
            return np.empty(0, dtype=np.int64)
        return np.unique(np.fromstring(joined, dtype=np.int64, sep=","))

    def _allowed(self) -> RowCache:
        if "_row_cache" not in self.__dict__:
            self._row_cache = RowCache()
        return self._row_cache
