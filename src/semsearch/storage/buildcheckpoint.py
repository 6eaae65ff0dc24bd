"""A vector index build's progress, kept in the index directory while it runs, so that a killed ingest or refit
run again takes it up where it stopped instead of training and filling the index again (at ten million rows,
most of the build's hour): the trained index once trained, then about every 1/CHECKPOINTS of the rows the index
filled so far, with the tuning's exact answers accumulated over the same rows (tuning.Truth) beside it.

A checkpoint belongs to one build, named by a key of what the build depends on (the transform's projection of
the first rows, the index type, the live rows): a build with another key clears it and starts afresh. Files are
renamed into place (the index, then the record naming it last), so a kill leaves the last complete checkpoint.
The write that publishes the build clears it, as it clears the resume cache of encoded vectors."""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .files import atomic_path, atomic_write_text

DIRECTORY = ".build"
CHECKPOINTS = 8  # fills saved per build, at most (each writes the index filled so far)


def build_key(*parts: Any) -> str:
    """The key of a build: a digest of its parts (arrays by their bytes, the rest by their repr)."""
    digest = hashlib.blake2b(digest_size=16)
    for part in parts:
        digest.update(part.tobytes() if isinstance(part, np.ndarray) else repr(part).encode())
        digest.update(b"\0")
    return digest.hexdigest()


class BuildCheckpoint:
    """The checkpoint of the build `key` in an index directory."""

    RECORD = "checkpoint.json"

    def __init__(self, index_path: Path, key: str):
        self.directory = Path(index_path) / DIRECTORY
        self.key = key
        record = self._record()
        if record.get("key") != key:  # another build's, or none: start afresh
            self.clear()
            record = {}
        self.record = record

    def _record(self) -> dict[str, Any]:
        try:
            return json.loads((self.directory / self.RECORD).read_text())
        except (OSError, ValueError):
            return {}

    @property
    def stage(self) -> str | None:
        """ "trained" or "filled" (the latter with `rows` rows in), or None: nothing kept."""
        return self.record.get("stage")

    @property
    def rows(self) -> int:
        return int(self.record.get("rows", 0))

    @property
    def index_directory(self) -> Path:
        """Where the kept index is (its writer's file inside)."""
        return self.directory / self.record["index"]

    def arrays(self) -> dict[str, np.ndarray]:
        """The arrays saved with the last fill (the tuning's exact answers so far)."""
        if not self.record.get("arrays"):
            return {}
        with np.load(self.directory / self.record["arrays"], allow_pickle=False) as saved:
            return {name: saved[name] for name in saved.files}

    def save(
        self,
        stage: str,
        write_index: Callable[[Path], None],
        rows: int = 0,
        arrays: dict[str, np.ndarray] | None = None,
    ) -> None:
        """Keep the build at `stage`: `write_index(directory)` writes the index into a new directory (atomically,
        as VectorIndex.save does); `arrays` beside it; then the record naming both, then the last ones go."""
        number = int(self.record.get("number", 0)) + 1
        index_name, arrays_name = f"index-{number}", f"arrays-{number}.npz"
        record = {"key": self.key, "stage": stage, "rows": rows, "number": number, "index": index_name}
        (self.directory / index_name).mkdir(parents=True, exist_ok=True)
        write_index(self.directory / index_name)
        if arrays:
            record["arrays"] = arrays_name
            with atomic_path(self.directory / arrays_name) as tmp, open(tmp, "wb") as out:
                # numpy's stubs match **arrays against savez's allow_pickle: bool as well as its arrays
                np.savez(out, **arrays)  # type: ignore[arg-type]
        atomic_write_text(self.directory / self.RECORD, json.dumps(record))
        if self.record.get("index"):  # the previous checkpoint's files
            shutil.rmtree(self.directory / self.record["index"], ignore_errors=True)
        if self.record.get("arrays"):
            with contextlib.suppress(FileNotFoundError):
                (self.directory / self.record["arrays"]).unlink()
        self.record = record

    def clear(self) -> None:
        clear_checkpoint(self.directory.parent)
        self.record = {}


def clear_checkpoint(index_path: Path) -> None:
    """Remove whatever build checkpoint the index directory holds (its build was published)."""
    shutil.rmtree(Path(index_path) / DIRECTORY, ignore_errors=True)
