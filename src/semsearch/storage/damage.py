"""Damaged files: the error that names one, why it is damaged and what repairs it, and cheap checks of a file's
format from its header and size (no loading), which the loaders and `semsearch check` share.

Three kinds of file, three repairs: the documents (documents.db) and the raw vectors (raw/seg-*.npy) are the
source of truth, restored from a backup or ingested again; every file of a generation (statistics, transform,
vector index) is derived from them and rebuilt by `semsearch check --repair`."""

from __future__ import annotations

import json
import struct
from pathlib import Path

from ..errors import IndexStateError

REBUILD = "it is derived from the raw vectors and the documents: run `semsearch check --repair` to rebuild it"
RESTORE = (
    "it holds the documents, which no other file records: restore it from a backup, or re-ingest the corpus "
    "into a new index"
)
SQLITE_MAGIC = b"SQLite format 3\x00"


class DamagedFile(IndexStateError):
    """A file of an index that cannot be used as it is: `reason` says why, `repair` what brings it back."""

    def __init__(self, path: str | Path, reason: str, repair: str):
        self.path, self.reason, self.repair = Path(path), reason, repair
        super().__init__(f"{self.path} is damaged ({reason}): {repair}")


def derived(path: str | Path, reason: str) -> DamagedFile:
    """A damaged file of a generation (statistics, transform, vector index): rebuilt by a repair."""
    return DamagedFile(path, reason, REBUILD)


def brief(error: BaseException) -> str:
    """An exception's message, one short line (FAISS's run to several, with C++ signatures)."""
    text = " ".join(str(error).split()) or type(error).__name__
    if (
        "Error: '" in text and "failed: " in text
    ):  # FAISS: "Error in <signature> at <file>: Error: '<c>' failed: x"
        text = text.split("failed: ", 1)[1]
    return text if len(text) <= 160 else text[:159] + "…"


def size_problem(path: Path) -> str | None:
    """'missing' or 'empty' for a file that should hold something, else None."""
    if not path.is_file():
        return "missing"
    return "empty" if path.stat().st_size == 0 else None


def safetensors_problem(path: Path) -> str | None:
    """Why a .safetensors file is not whole (its header, then its size against the header's offsets), or None.
    Reads the header only."""
    if problem := size_problem(path):
        return problem
    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            (length,) = struct.unpack("<Q", handle.read(8).ljust(8, b"\0"))
            if length > size - 8:
                return f"truncated: {size} bytes, its header alone needs {length + 8}"
            header = json.loads(handle.read(length))
        ends = [entry["data_offsets"][1] for name, entry in header.items() if name != "__metadata__"]
    except (OSError, ValueError, KeyError, TypeError, IndexError, AttributeError) as error:
        return f"unreadable header ({brief(error)})"
    expected = 8 + length + max(ends, default=0)
    if size != expected:
        return f"{'truncated' if size < expected else 'too long'}: {size} bytes, expected {expected}"
    return None


def sqlite_problem(path: Path) -> str | None:
    """Why an SQLite database file is not whole, from its 100-byte header: not a database, or shorter than the
    pages the header counts. Only for a file without a write-ahead log holding more (a log is checked by SQLite
    as it reads); reads the header only."""
    if problem := size_problem(path):
        return problem
    size = path.stat().st_size
    try:
        with open(path, "rb") as handle:
            header = handle.read(100)
    except OSError as error:
        return f"unreadable ({brief(error)})"
    if len(header) < 100 or not header.startswith(SQLITE_MAGIC):
        return f"truncated: {size} bytes" if len(header) < 100 else "not an SQLite database"
    page_size = int.from_bytes(header[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages, changes, valid_for = (int.from_bytes(header[at : at + 4], "big") for at in (28, 24, 92))
    if pages and changes == valid_for and size < pages * page_size:  # the page count is valid (SQLite's rule)
        return f"truncated: {size} bytes of {pages * page_size}"
    return None


def json_problem(path: Path) -> str | None:
    if problem := size_problem(path):
        return problem
    try:
        json.loads(path.read_text())
    except (OSError, ValueError) as error:
        return f"unreadable ({brief(error)})"
    return None
