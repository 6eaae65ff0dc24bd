"""The errors semsearch reports to users: the CLI prints the message and exits non-zero, no traceback."""

from __future__ import annotations

from pathlib import Path


class SemsearchError(Exception):
    """Base class for errors semsearch reports to users."""


class DataError(SemsearchError):
    """Input data that cannot be used; the message names the file, line and field where there is one."""

    def __init__(
        self,
        message: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        field: str | None = None,
    ):
        self.path, self.line, self.field = path, line, field
        where = ", ".join(
            part
            for part in (
                str(path) if path is not None else "",
                f"line {line}" if line is not None else "",
                f"field {field!r}" if field is not None else "",
            )
            if part
        )
        super().__init__(f"{where}: {message}" if where else message)


class ModelError(SemsearchError):
    """The encoder model is missing or is not a usable model directory."""


class IndexStateError(SemsearchError):
    """An index directory that is missing, incomplete, or incompatible with the request."""


class SettingsError(SemsearchError):
    """Settings that contradict each other or the model (dims larger than the model's, k < 1, ...)."""
