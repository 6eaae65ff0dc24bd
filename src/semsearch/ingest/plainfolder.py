"""A stand-in folder source for sync's own development: text and Markdown files, one document each, walked
without hidden files. Replaced by the directory source of ingest/sources/ when that lands."""

from __future__ import annotations

import datetime
import os
from collections.abc import Iterator
from pathlib import Path

from ..documents import Document
from ..errors import DataError

SUFFIXES = {".md": "markdown", ".markdown": "markdown", ".txt": "text"}


class PlainFolder:
    def __init__(self, root: str | Path):
        self.root = Path(root).resolve()

    def files(self) -> Iterator[tuple[str, Path]]:
        for top, dirs, names in os.walk(self.root):
            dirs[:] = sorted(d for d in dirs if not d.startswith("."))
            for name in sorted(names):
                path = Path(top) / name
                if not name.startswith(".") and path.suffix.lower() in SUFFIXES:
                    yield path.relative_to(self.root).as_posix(), path

    def read(self, relative: str, path: Path) -> list[Document]:
        try:
            text = path.read_text(encoding="utf-8")
            status = path.stat()
        except (OSError, UnicodeDecodeError) as error:
            raise DataError(f"cannot read: {error}", path=path) from None
        if not text.strip():
            return []
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")), path.name)
        modified = datetime.datetime.fromtimestamp(status.st_mtime, datetime.timezone.utc)
        metadata = {
            "path": relative,
            "type": SUFFIXES[path.suffix.lower()],
            "size": status.st_size,
            "modified": modified.isoformat(timespec="seconds"),
        }
        return [Document(relative, text, title, metadata)]
