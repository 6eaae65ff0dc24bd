"""The recorded files (table `files`, storage/synced.py) as `serve`'s /files route looks them up: the folders
that hold a file at a relative path, and the documents it became."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .store import DocumentStore


def recorded_at(store: DocumentStore, paths: Sequence[str]) -> list[tuple[str, str, dict[str, str]]]:
    """(folder root, relative path, its documents: id -> content hash) of every recorded file at one of
    `paths` (relative, POSIX), in every folder recorded."""
    if not store.file_roots():
        return []
    rows = store.db.execute(
        "SELECT root, path, documents FROM files WHERE path IN (SELECT value FROM json_each(?)) "
        "ORDER BY root, path",
        [json.dumps(list(paths))],
    )
    return [(root, path, json.loads(documents)) for root, path, documents in rows]
