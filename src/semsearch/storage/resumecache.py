"""The vectors an ingest encoded before it was interrupted (`raw/resume.f32`, `raw/resume.keys`), so that the
ingest run again does not encode them again."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np

from .rawvectors import DIRECTORY


class ResumeCache:
    """Vectors encoded by an ingest that did not finish, keyed by a hash of the text embedded, so running
    the ingest again takes them from here instead of encoding again. Each chunk's vectors are fsynced before
    its keys, so after a crash every complete key line has its vector; a torn tail is cut off on open."""

    VECTORS, KEYS = "resume.f32", "resume.keys"

    def __init__(self, directory: Path, dim: int):
        self.directory = Path(directory) / DIRECTORY
        self.directory.mkdir(parents=True, exist_ok=True)
        self.dim = dim
        self.vectors_path = self.directory / self.VECTORS
        self.keys_path = self.directory / self.KEYS
        self.rows: dict[str, int] = {}
        self._recover()
        self._cached = (
            np.memmap(self.vectors_path, dtype="<f4", mode="r", shape=(len(self.rows), dim))
            if self.rows
            else np.empty((0, dim), dtype="<f4")
        )

    def _recover(self) -> None:
        if not self.keys_path.exists() or not self.vectors_path.exists():
            self.clear()
            return
        data = self.keys_path.read_bytes()
        complete = data[: data.rfind(b"\n") + 1]
        keys = complete.decode("ascii", errors="replace").splitlines()
        rows = min(len(keys), self.vectors_path.stat().st_size // (4 * self.dim))
        keys = keys[:rows]
        # Cut both files back to the rows that are whole in each.
        with open(self.keys_path, "r+b") as handle:
            handle.truncate(sum(len(k) + 1 for k in keys))
        with open(self.vectors_path, "r+b") as handle:
            handle.truncate(rows * 4 * self.dim)
        self.rows = {key: row for row, key in enumerate(keys)}

    def __len__(self) -> int:
        return len(self.rows)

    def lookup(self, keys: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """(found mask, vectors of the found keys in order)."""
        found = np.array([key in self.rows for key in keys], dtype=bool)
        rows = [self.rows[key] for key in keys if key in self.rows]
        return found, np.asarray(self._cached[rows], dtype=np.float32) if rows else np.empty(
            (0, self.dim), "f4"
        )

    def append(self, keys: list[str], vectors: np.ndarray) -> None:
        with open(self.vectors_path, "ab") as handle:
            handle.write(np.ascontiguousarray(vectors, dtype="<f4").tobytes())
            handle.flush()
            os.fsync(handle.fileno())
        with open(self.keys_path, "ab") as handle:
            handle.write("".join(key + "\n" for key in keys).encode("ascii"))
            handle.flush()
            os.fsync(handle.fileno())

    def clear(self) -> None:
        for path in (self.keys_path, self.vectors_path):
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
        self.rows = {}
