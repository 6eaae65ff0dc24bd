"""The files a folder's ingest has read (table `files`, schema 5): for each, its size, modification time and
content hash when read, and the documents it became, so the next ingest of the folder reads again only the
files whose size or time moved, and encodes only those whose content did (ingest/sync.py)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import sqlite_utils

# A time this value marks a file read so soon after its last change that another change within the same tick
# of the file system's clock would leave size and time as they were: the next scan reads it again to be sure.
UNSURE_TIME = -1


@dataclass(frozen=True)
class FileRecord:
    path: str  # relative to the folder's root, POSIX separators
    size: int
    mtime_ns: int  # UNSURE_TIME: read again next time
    hash: str  # of the file's bytes
    documents: dict[str, str] = field(default_factory=dict)  # id -> the content hash stored with it
    # how its text was extracted (ocr.Extraction.key: OCR mode, engine, languages; '' where no setting matters)
    extraction: str = ""


class SyncedFiles:
    """Mixed into DocumentStore (store.py), whose connection `db` these read and write."""

    db: sqlite_utils.Database

    def recorded_files(self, root: str) -> dict[str, FileRecord]:
        """The files recorded under this folder root, by relative path (none in a store made before the table)."""
        if not self._has_files_table():
            return {}
        rows = self.db.execute(
            "SELECT path, size, mtime_ns, hash, documents, extraction FROM files WHERE root = ?", [root]
        ).fetchall()
        return {
            path: FileRecord(path, size, mtime_ns, digest, json.loads(documents), extraction)
            for path, size, mtime_ns, digest, documents, extraction in rows
        }

    def record_files(self, root: str, records: Sequence[FileRecord], forget: Sequence[str] = ()) -> None:
        """Record these files under the root (replacing what was recorded of them) and forget those paths,
        in one transaction of its own."""
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO files (root, path, size, mtime_ns, hash, documents, extraction) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                [
                    (
                        root,
                        r.path,
                        r.size,
                        r.mtime_ns,
                        r.hash,
                        json.dumps(r.documents, ensure_ascii=False),
                        r.extraction,
                    )
                    for r in records
                ],
            )
            self.db.conn.executemany(
                "DELETE FROM files WHERE root = ? AND path = ?", [(root, path) for path in forget]
            )

    def file_roots(self) -> list[str]:
        """Every folder root that has files recorded."""
        if not self._has_files_table():
            return []
        return [row[0] for row in self.db.execute("SELECT DISTINCT root FROM files ORDER BY root")]

    def _has_files_table(self) -> bool:
        found = self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'files'")
        return found.fetchone() is not None
