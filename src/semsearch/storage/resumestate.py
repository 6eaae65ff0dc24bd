"""A first ingest's resume points in its store (ingest/resume.py): their counts as rows of the state table,
named with a prefix, committed with the documents they count."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence

from .store import DocumentStore

PREFIX = "resume_"


def counts(store: DocumentStore, names: Sequence[str]) -> dict[str, int]:
    """The committed counts of the last point (empty: no point yet)."""
    rows = store.db.execute(
        "SELECT key, value FROM state WHERE key IN (SELECT value FROM json_each(?))",
        [_names(PREFIX + name for name in names)],
    )
    return {key[len(PREFIX) :]: value for key, value in rows}


def commit_point(store: DocumentStore, values: dict[str, int]) -> None:
    """Commit what the write stored so far together with these counts; the write goes on in a new transaction."""
    store.db.conn.executemany(
        "INSERT INTO state (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value",
        [(PREFIX + name, value) for name, value in values.items()],
    )
    store.db.conn.commit()


def forget(store: DocumentStore) -> None:
    """Inside the write's transaction: the points' counts go (the write that publishes the index)."""
    store.db.conn.execute("DELETE FROM state WHERE substr(key, 1, ?) = ?", [len(PREFIX), PREFIX])


def _names(names: Iterable[str]) -> str:
    return json.dumps(list(names))


def stored_before(store: DocumentStore) -> int:
    """The documents the last point committed (0: none): an unpublished first ingest's store holds them."""
    return counts(store, ["documents"]).get("documents", 0)
