"""The document store: documents and their metadata in SQLite (WAL), keyed by the integer row id that the
vector index uses. Filters (`--where`) become SQL with every value, field names included, bound."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import sqlite_utils

from .documents import Document
from .errors import IndexStateError, SettingsError

OPERATORS = ("!=", "<=", ">=", "=", "<", ">")
NUMERIC_OPERATORS = ("<", "<=", ">", ">=")
COLUMN_FIELDS = {"id": "id", "title": "title"}  # fields that live in their own column, not in metadata


@dataclass(frozen=True)
class Condition:
    field: str
    operator: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Condition:
        """`genre=news`, `year>=2015`, `lang!=en`."""
        match = re.match(r"^\s*([^=!<>]+?)\s*(!=|<=|>=|=|<|>)\s*(.*?)\s*$", text)
        if not match or not match.group(1):
            raise SettingsError(f"{text!r}: expected FIELD=VALUE (or !=, <, <=, >, >=)", setting="where")
        field, operator, value = match.groups()
        if '"' in field:
            raise SettingsError(f"{text!r}: a field name cannot contain a double quote", setting="where")
        if operator in NUMERIC_OPERATORS and _number(value) is None:
            raise SettingsError(
                f"{text!r}: {operator} compares numbers, and {value!r} is not one", setting="where"
            )
        return cls(field, operator, value)


def _number(text: str) -> int | float | None:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return None


# Numbered schema migrations: migration n brings a store from user_version n - 1 to n, its statements and the
# new version number in one transaction. A store made before numbering (user_version 0, its tables present) takes
# migration 1 as a no-op (IF NOT EXISTS). Each migration ends by setting its own number.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE IF NOT EXISTS documents (
            pk INTEGER PRIMARY KEY,
            id TEXT NOT NULL UNIQUE,
            title TEXT,
            text TEXT NOT NULL,
            metadata TEXT NOT NULL DEFAULT '{}',
            hash TEXT NOT NULL
        )""",
        "CREATE TABLE IF NOT EXISTS fields (name TEXT PRIMARY KEY, documents INTEGER NOT NULL)",
        "CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value INTEGER NOT NULL)",
        "PRAGMA user_version = 1",
    ),
)
SCHEMA_VERSION = len(MIGRATIONS)


class DocumentStore:
    FILE = "documents.db"

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.db = sqlite_utils.Database(self.path)
        self.db.execute("PRAGMA busy_timeout = 30000")
        if self.db.journal_mode != "wal":
            self.db.enable_wal()
        self._migrate()

    @property
    def schema_version(self) -> int:
        return self.db.execute("PRAGMA user_version").fetchone()[0]

    def _migrate(self) -> None:
        version = self.schema_version
        if version > SCHEMA_VERSION:
            raise IndexStateError(
                f"{self.path}: written by a newer semsearch (schema {version}, this one reads up to "
                f"{SCHEMA_VERSION}); upgrade semsearch"
            )
        if version == SCHEMA_VERSION:
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

    def generation(self) -> int:
        """The index generation whose documents these are (committed with them, see index.py)."""
        row = self.db.execute("SELECT value FROM state WHERE key = 'generation'").fetchone()
        return row[0] if row else 0

    def set_generation(self, generation: int) -> None:
        self.db.conn.execute(
            "INSERT INTO state (key, value) VALUES ('generation', ?) "
            "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
            [generation],
        )

    def close(self) -> None:
        self.db.close()

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM documents").fetchone()[0]

    def all_pks(self) -> np.ndarray:
        return np.array(
            [row[0] for row in self.db.execute("SELECT pk FROM documents ORDER BY pk")], dtype=np.int64
        )

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

    def insert(self, documents: Iterable[Document], pks: Iterable[int]) -> None:
        """Insert inside the caller's transaction (see `transaction`)."""
        rows = [
            (pk, doc.id, doc.title, doc.text, json.dumps(doc.metadata, ensure_ascii=False), doc.content_hash)
            for doc, pk in zip(documents, pks)
        ]
        self.db.conn.executemany(
            "INSERT INTO documents (pk, id, title, text, metadata, hash) VALUES (?, ?, ?, ?, ?, ?)", rows
        )
        counts: dict[str, int] = {}
        for row in rows:
            for key in json.loads(row[4]):
                counts[key] = counts.get(key, 0) + 1
        self.db.conn.executemany(
            "INSERT INTO fields (name, documents) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET documents = documents + excluded.documents",
            list(counts.items()),
        )

    def delete(self, pks: Sequence[int]) -> None:
        """Delete rows inside the caller's transaction, keeping the field counts right."""
        payload = [json.dumps([int(pk) for pk in pks])]
        counts: dict[str, int] = {}
        for (metadata,) in self.db.execute(
            "SELECT metadata FROM documents WHERE pk IN (SELECT value FROM json_each(?))", payload
        ):
            for key in json.loads(metadata):
                counts[key] = counts.get(key, 0) + 1
        self.db.conn.execute("DELETE FROM documents WHERE pk IN (SELECT value FROM json_each(?))", payload)
        self.db.conn.executemany(
            "UPDATE fields SET documents = documents - ? WHERE name = ?",
            [(n, key) for key, n in counts.items()],
        )

    def transaction(self):
        """A context manager: everything inside commits together or not at all."""
        return self.db.conn

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
        """Row ids of the documents that meet every condition (AND)."""
        known = set(self.fields())
        clauses: list[str] = []
        params: dict[str, Any] = {}
        for n, condition in enumerate(conditions):
            if condition.field in COLUMN_FIELDS:
                target = COLUMN_FIELDS[condition.field]
            elif condition.field in known:
                target = f"json_extract(metadata, :field{n})"
                params[f"field{n}"] = f'$."{condition.field}"'
            else:
                listed = ", ".join(sorted(known)) or "none"
                raise SettingsError(
                    f"{condition.field}: no document has a field {condition.field!r} (fields: {listed})",
                    setting="where",
                )
            clauses.append(_comparison(target, condition, n, params))
        sql = "SELECT pk FROM documents" + (" WHERE " + " AND ".join(clauses) if clauses else "")
        return np.array([row[0] for row in self.db.execute(sql, params)], dtype=np.int64)


def _comparison(target: str, condition: Condition, n: int, params: dict[str, Any]) -> str:
    """SQL comparing `target` with the condition's value, binding the value into `params`. For `=` and
    `!=` a value that reads as a number matches both the number and the string, since JSON keeps them
    apart; `<`, `<=`, `>`, `>=` compare numbers only (SQLite ranks any text above every number)."""
    number = _number(condition.value)
    if condition.operator in NUMERIC_OPERATORS:
        params[f"value{n}"] = number
        return f"(typeof({target}) IN ('integer', 'real') AND {target} {condition.operator} :value{n})"
    params[f"value{n}"] = condition.value
    params[f"number{n}"] = condition.value if number is None else number
    if condition.operator == "=":
        return f"{target} IN (:value{n}, :number{n})"
    # Documents without the field count as different from the value.
    return f"({target} IS NULL OR {target} NOT IN (:value{n}, :number{n}))"
