"""The errors semsearch reports to users: the CLI prints the message and exits non-zero, no traceback.

An error about one setting names it (`setting="rerank"`): the library's message reads "rerank must be 0 or
more", and the CLI, which knows its flags, prints "--rerank must be 0 or more" (see `cli.flag_for`)."""

from __future__ import annotations

import errno
from pathlib import Path


class SemsearchError(Exception):
    """Base class for errors semsearch reports to users. `detail` is the message without the setting's name;
    `setting`, where there is one, the library's name for the setting at fault."""

    def __init__(self, message: str, *, setting: str | None = None):
        self.detail = message
        self.setting = setting
        super().__init__(f"{setting} {message}" if setting else message)

    def naming(self, name: str) -> str:
        """The message with the setting spelled as `name` (a CLI flag, a JSON field)."""
        return f"{name} {self.detail}" if self.setting else self.detail


class DataError(SemsearchError):
    """Input data that cannot be used; the message names the file, line (a table: row) and field where there
    is one."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
        setting: str | None = None,
        row: int | None = None,
    ):
        self.path, self.line, self.field, self.row = path, line, field, row
        self.reason = message  # without the place
        where = ", ".join(
            part
            for part in (
                str(path) if path is not None else "",
                f"line {line}" if line is not None else "",
                f"row {row}" if row is not None else "",
                f"field {field!r}" if field is not None else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message, setting=setting)


class ModelError(SemsearchError):
    """The encoder model is missing or is not a usable model directory."""


class IndexStateError(SemsearchError):
    """An index directory that is missing, incomplete, or incompatible with the request."""


class SettingsError(SemsearchError):
    """Settings that contradict each other or the model (dims larger than the model's, k < 1, ...)."""


class WriterBusy(IndexStateError):
    """Another process held the index's writer lock for longer than a write would wait."""


DISK_FULL = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


# How libraries that do not raise OSError report a full disk or a file-size limit (safetensors' Rust I/O errors,
# FAISS's failed fwrite, SQLite's SQLITE_FULL).
DISK_FULL_WORDS = (
    "No space left on device",
    "File too large",
    "Disk quota exceeded",
    "os error 28",
    "os error 27",
    "database or disk is full",
)


def disk_full(error: BaseException) -> bool:
    """Whether `error`, or one it was raised from, is a full disk or a file-size limit (ENOSPC, EFBIG)."""
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, OSError) and current.errno in DISK_FULL:
            return True
        if any(words in str(current) for words in DISK_FULL_WORDS):
            return True
        current = current.__cause__ or current.__context__
    return False


def os_error_message(error: BaseException) -> str:
    """One line for an OSError reaching a command or a request: a full disk (or a file-size limit) says the
    write was abandoned, which leaves the index as it was (writes publish whole generations)."""
    filename = getattr(error, "filename", None)
    where = f": {filename}" if filename else ""
    reason = getattr(error, "strerror", None) or str(error)
    if disk_full(error):
        return (
            f"no space left to write ({reason}{where}): nothing was changed; the index is as it was before this "
            "command. Free some space and run it again"
        )
    return f"{reason}{where}"
