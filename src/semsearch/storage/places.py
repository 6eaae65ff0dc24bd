"""Stored documents given new places and metadata without new passages: a document read again that differs from
its stored version only in its metadata or where its sections sit (a table row moved down by a row inserted
above it, a Markdown section's lines shifted) keeps its passages and their vectors (pipeline.py compares
`Document.passages_hash`); its row, typed metadata, field counts, sections and passage locations are rewritten.
A mixin of DocumentStore: every statement runs inside the caller's transaction."""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

from ..documents import Document, Location, Section
from .locations import location_rows, sections_json
from .schema import META_ROWS, NEW_ROWS

if TYPE_CHECKING:
    import sqlite_utils

    from .filters import RowCache


def field_counts(metadata: Iterable[str]) -> dict[str, int]:
    """How many of these documents (their metadata JSON) hold each top-level field."""
    counts: dict[str, int] = {}
    for row in metadata:
        for key in json.loads(row):
            counts[key] = counts.get(key, 0) + 1
    return counts


class PlaceUpdates:
    """Mixed into DocumentStore (store.py), whose connection `db`, `spans` and row cache these use."""

    db: sqlite_utils.Database

    if TYPE_CHECKING:

        def spans(self, pks: Sequence[int]) -> dict[int, tuple[int, int]]: ...

        def _allowed(self) -> RowCache: ...

    def stored_documents(self, pks: Sequence[int]) -> dict[int, tuple[Document, str]]:
        """The stored documents (without vectors) and the content hash stored with each, by pk."""
        rows = self.db.execute(
            "SELECT pk, id, title, text, metadata, sections, hash FROM documents "
            "WHERE pk IN (SELECT value FROM json_each(?))",
            [json.dumps([int(pk) for pk in pks])],
        )
        return {
            pk: (
                Document(doc_id, text, title, json.loads(metadata), sections=stored_sections(sections)),
                digest,
            )
            for pk, doc_id, title, text, metadata, sections, digest in rows
        }

    def replace_places(self, documents: Sequence[Document], pks: Sequence[int]) -> None:
        """Give the stored documents at `pks` these documents' metadata, content hash and sections, and their
        passages (kept, with their spans) the locations these sections give."""
        payload = [json.dumps([int(pk) for pk in pks])]
        old = self.stored_field_counts(payload)
        spans = self.kept_spans(pks)
        self.db.conn.executemany(
            "UPDATE documents SET metadata = ?, hash = ?, sections = ? WHERE pk = ?",
            [
                (json.dumps(doc.metadata, ensure_ascii=False), doc.content_hash, sections_json(doc), pk)
                for doc, pk in zip(documents, pks)
            ],
        )
        self.db.conn.execute("DELETE FROM meta WHERE pk IN (SELECT value FROM json_each(?))", payload)
        self.db.conn.execute(META_ROWS.format(rows=NEW_ROWS), payload)
        rows = [json.dumps([pk + i for pk, parts in zip(pks, spans) for i in range(max(1, len(parts)))])]
        self.db.conn.execute("DELETE FROM locations WHERE pk IN (SELECT value FROM json_each(?))", rows)
        self.db.conn.executemany(
            "INSERT INTO locations (pk, location) VALUES (?, ?)", location_rows(documents, pks, spans)
        )
        new = field_counts(json.dumps(doc.metadata) for doc in documents)
        self.db.conn.executemany(
            "INSERT INTO fields (name, documents) VALUES (?, ?) "
            "ON CONFLICT(name) DO UPDATE SET documents = documents + excluded.documents",
            [(key, new.get(key, 0) - old.get(key, 0)) for key in sorted(set(old) | set(new))],
        )
        self._allowed().clear()

    def stored_field_counts(self, payload: list[str]) -> dict[str, int]:
        """How many of the stored documents (`payload`: their pks as one JSON list) hold each top-level field."""
        return field_counts(
            row[0]
            for row in self.db.execute(
                "SELECT metadata FROM documents WHERE pk IN (SELECT value FROM json_each(?))", payload
            )
        )

    def kept_spans(self, pks: Sequence[int]) -> list[list[tuple[int, int]]]:
        """Each document's passages as stored: their spans (none for a document of one passage)."""
        counts = dict(
            self.db.execute(
                "SELECT pk, passages FROM documents WHERE pk IN (SELECT value FROM json_each(?))",
                [json.dumps([int(pk) for pk in pks])],
            ).fetchall()
        )
        rows = [pk + i for pk in pks if counts[pk] > 1 for i in range(counts[pk])]
        found = self.spans(rows) if rows else {}
        return [[found[pk + i] for i in range(counts[pk])] if counts[pk] > 1 else [] for pk in pks]


def stored_sections(value: str | None) -> tuple[Section, ...] | None:
    if value is None:
        return None
    return tuple(Section(start, end, Location.from_json(place)) for start, end, place in json.loads(value))
