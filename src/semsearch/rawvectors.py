"""The kept raw encoder vectors: append-only .npy segments, one per ingest, so a refit or rerank never
re-encodes. Segment files are written once under a temporary name and renamed; the manifest says which
segments belong to the index, so a crashed ingest leaves only an unreferenced file."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from .errors import IndexStateError
from .storage import atomic_path

DIRECTORY = "raw"
BLOCK_ROWS = 8192
COPY_BUFFER = 1 << 20


@dataclass(frozen=True)
class Segment:
    name: str
    start: int  # the first row id (pk) it holds; rows are consecutive pks
    count: int

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def all_of(cls, listed: Iterable[dict]) -> list[Segment]:
        """Segments as a manifest lists them."""
        return [cls(**segment) for segment in listed]


class SegmentWriter:
    """Spools vectors to disk as they are encoded; `finish` turns them into an .npy segment."""

    def __init__(self, directory: Path, start: int, dim: int):
        self.directory = Path(directory) / DIRECTORY
        self.directory.mkdir(parents=True, exist_ok=True)
        self.start, self.dim, self.count = start, dim, 0
        self.spool_path = self.directory / f".spool-{start:012d}-{os.getpid()}"
        self.spool = open(self.spool_path, "wb")  # noqa: SIM115 (closed in finish/discard)

    def append(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise IndexStateError(f"raw vectors of shape {vectors.shape} do not fit dim {self.dim}")
        self.spool.write(vectors.tobytes())
        self.count += len(vectors)

    def finish(self) -> Segment | None:
        self.spool.close()
        if self.count == 0:
            self.discard()
            return None
        segment = Segment(f"seg-{self.start:012d}.npy", self.start, self.count)
        # An .npy is a header and the raw rows: write the header, then copy the spool through a small buffer
        # (a memory map of either file would count every page in this process's RSS).
        with atomic_path(self.directory / segment.name) as tmp, open(tmp, "wb") as out:
            header = {"descr": "<f4", "fortran_order": False, "shape": (self.count, self.dim)}
            np.lib.format.write_array_header_1_0(out, header)
            with open(self.spool_path, "rb") as spool:
                shutil.copyfileobj(spool, out, COPY_BUFFER)
        self.discard()
        return segment

    def discard(self) -> None:
        self.spool.close()
        with contextlib.suppress(FileNotFoundError):
            self.spool_path.unlink()


class RawVectors:
    """Read access to the segments an index references."""

    def __init__(self, directory: Path, segments: list[Segment], dim: int):
        self.directory = Path(directory) / DIRECTORY
        self.segments = segments
        self.dim = dim
        self._maps: dict[str, np.ndarray] = {}  # segments are written once: a map stays valid

    def _open(self, segment: Segment) -> np.ndarray:
        path = self.directory / segment.name
        try:
            array = np.load(path, mmap_mode="r", allow_pickle=False)
        except FileNotFoundError:
            raise IndexStateError(
                f"{path}: the raw vectors are missing; refit and rerank need them (the index still answers "
                "queries without --rerank; ingest the corpus into a new index to get them back)"
            ) from None
        except (OSError, ValueError) as error:
            raise IndexStateError(f"{path}: raw vectors unreadable ({error})") from None
        if array.shape != (segment.count, self.dim):
            raise IndexStateError(f"{path}: shape {array.shape}, expected {(segment.count, self.dim)}")
        return array

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(pks, vectors) blocks over every stored row, in pk order; memory stays at one block (read, not
        memory-mapped: the pages of a map stay in the RSS until it closes)."""
        for segment in self.segments:
            path = self.directory / segment.name
            offset = self._open(segment).offset  # checks the shape, gives where the rows start
            with open(path, "rb") as handle:
                handle.seek(offset)
                for begin in range(0, segment.count, rows):
                    count = min(rows, segment.count - begin)
                    block = np.fromfile(handle, dtype="<f4", count=count * self.dim).reshape(count, self.dim)
                    yield (
                        np.arange(segment.start + begin, segment.start + begin + count, dtype=np.int64),
                        block.astype(np.float32, copy=False),
                    )

    def get(self, pks: np.ndarray) -> np.ndarray:
        """Vectors for the given pks (any order)."""
        pks = np.asarray(pks, dtype=np.int64)
        out = np.empty((len(pks), self.dim), dtype=np.float32)
        found = np.zeros(len(pks), dtype=bool)
        for segment in self.segments:
            inside = (pks >= segment.start) & (pks < segment.start + segment.count)
            if inside.any():
                # Mapped once per segment and kept: a query's rerank reads 100 rows, and opening the
                # file for each took 1.4 ms of its 7.
                if segment.name not in self._maps:
                    self._maps[segment.name] = self._open(segment)
                out[inside] = self._maps[segment.name][pks[inside] - segment.start]
                found |= inside
        if not found.all():
            raise IndexStateError(f"no raw vectors for row ids {pks[~found][:5].tolist()}")
        return out


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
