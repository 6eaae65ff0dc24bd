"""The spool of raw vectors an ingest or a compaction writes as they come (`raw/.spool-*`, float32 rows),
turned into a segment (rawvectors.py's format) when the write finishes. A first ingest's spool outlives a crash:
its resume points (ingest/resume.py) keep the rows spooled up to them, and the ingest run again takes them up."""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

import numpy as np

from ..errors import IndexStateError
from .files import atomic_path
from .rawvectors import (
    BLOCK_ROWS,
    DIRECTORY,
    FLOAT32,
    SCALED_BITS,
    SPOOL_PREFIX,
    RawVectors,
    Segment,
    as_kept,
    row_scales,
    scaled_codes,
)

COPY_BUFFER = 1 << 20  # bytes a copy between files holds at once


class SegmentWriter:
    """Spools vectors to disk as they are encoded (float32); `finish` turns them into an .npy segment at
    `precision` (the scaled precisions: a first pass over the spool writes each row's scale)."""

    def __init__(
        self, directory: Path, start: int, dim: int, precision: str = FLOAT32, kept_rows: int | None = None
    ):
        """`kept_rows`: the spool outlives this process (a first ingest's resume points, ingest/resume.py): it
        has a name of its own, and its first `kept_rows` rows, written by an interrupted run, are kept; where
        that run had turned its spool into the segment already, the segment's first `kept_rows` rows are (a
        row's codes depend on the row alone: they are the ones its spool would give again)."""
        self.directory = Path(directory) / DIRECTORY
        self.directory.mkdir(parents=True, exist_ok=True)
        self.start, self.dim, self.count = start, dim, 0
        self.precision = precision
        Segment("", 0, 0, precision=precision).dtype  # noqa: B018 (refuses an unknown precision now)
        owner = os.getpid() if kept_rows is None else "resumable"
        self.spool_path = self.directory / f"{SPOOL_PREFIX}{start:012d}-{owner}"
        self.finished: Segment | None = None  # the segment an interrupted run finished, its head kept
        self.kept = 0  # of its rows
        self.spool: BinaryIO
        if kept_rows and not self.spool_path.exists():
            self.finished, self.kept = self._finished_segment(kept_rows), kept_rows
            self.spool, self.count = open(self.spool_path, "wb"), kept_rows  # noqa: SIM115
        elif kept_rows:
            self.spool = self._kept_spool(kept_rows * dim * 4)
            self.count = kept_rows
        else:
            self.spool = open(self.spool_path, "wb")  # noqa: SIM115 (closed in finish/discard)

    def _kept_spool(self, kept_bytes: int) -> BinaryIO:
        """The interrupted run's spool cut back to its last resume point (the rows after it are written
        again); a spool missing or shorter than the point cannot resume: an error (the ingest's partial
        directory is then removed, ingest/first.building)."""
        size = self.spool_path.stat().st_size
        if size < kept_bytes:
            self._cannot_resume(f"{size:,} bytes, {kept_bytes:,} needed")
        spool = open(self.spool_path, "r+b")  # noqa: SIM115 (closed in finish/discard/close)
        spool.truncate(kept_bytes)
        spool.seek(0, os.SEEK_END)
        return spool

    def append(self, vectors: np.ndarray) -> None:
        vectors = np.ascontiguousarray(vectors, dtype="<f4")
        if vectors.ndim != 2 or vectors.shape[1] != self.dim:
            raise IndexStateError(f"raw vectors of shape {vectors.shape} do not fit dim {self.dim}")
        self.spool.write(vectors.tobytes())
        self.count += len(vectors)

    def sync(self) -> int:
        """The rows spooled so far, on disk (flushed and fsynced): how many."""
        self.spool.flush()
        os.fsync(self.spool.fileno())
        return self.count

    def _cannot_resume(self, found: str) -> None:
        raise IndexStateError(
            f"{self.spool_path}: the raw vectors of the last resume point are {found}; "
            "the partial ingest is removed, run the ingest again to start afresh"
        )

    def _finished_segment(self, rows: int) -> Segment:
        """The segment this spool became in an interrupted run (finish), of `rows` rows or more, whole."""
        segment = Segment(f"seg-{self.start:012d}.npy", self.start, 0, None, self.precision)
        try:
            counts = {len(np.load(self.directory / name, mmap_mode="r")) for name in segment.files}
        except (OSError, ValueError):
            counts = set()
        if len(counts) != 1 or (count := counts.pop()) < rows:
            self._cannot_resume(f"missing (no spool, no segment of {rows:,} rows)")
        return Segment(segment.name, self.start, count, None, self.precision)

    def _same_as_finished(self) -> bool:
        """The rows spooled again after the kept head are the ones the finished segment holds after it."""
        if self.finished is None or self.count != self.finished.count:
            return False
        kept = RawVectors(self.directory.parent, [self.finished], self.dim, mapped=True)
        pks = np.arange(self.start + self.kept, self.start + self.count)
        return all(
            np.array_equal(kept.read(pks[at : at + len(block)]), as_kept(block, self.precision))
            for at, block in zip(range(0, len(pks), BLOCK_ROWS), self._spooled())
        )

    def finish(self, name: str | None = None, pks: np.ndarray | None = None) -> Segment | None:
        """The spooled rows as a segment file (`pks`: the rows' pks, for a compacted segment)."""
        self.spool.close()
        if self._same_as_finished():
            self.discard()
            return self.finished
        if self.count == 0:
            self.discard()
            return None
        name = name or f"seg-{self.start:012d}.npy"
        pks_file = name[:-4] + ".pks.npy"
        segment = Segment(name, self.start, self.count, None if pks is None else pks_file, self.precision)
        if pks is not None:
            with atomic_path(self.directory / pks_file) as tmp, open(tmp, "wb") as out:
                np.save(out, np.asarray(pks, dtype="<i8"), allow_pickle=False)
        encode = None
        if segment.scale is not None:
            bits = SCALED_BITS[self.precision]
            with atomic_path(self.directory / segment.scale) as tmp, open(tmp, "wb") as out:
                header = {"descr": "<f4", "fortran_order": False, "shape": (self.count,)}
                np.lib.format.write_array_header_1_0(out, header)
                self._copy_head(segment.scale, 4, out)
                for block in self._spooled():
                    out.write(row_scales(block, bits).tobytes())
            encode = lambda block: scaled_codes(block, bits)  # noqa: E731
        elif self.precision != FLOAT32:
            encode = lambda block: block.astype(segment.dtype)  # noqa: E731
        # An .npy is a header and the raw rows: write the header, then copy the spool through a small buffer,
        # converted a block at a time (a memory map of either file would count every page in this process's RSS).
        with atomic_path(self.directory / segment.name) as tmp, open(tmp, "wb") as out:
            shape = (self.count, segment.width(self.dim))
            header = {"descr": segment.dtype.str, "fortran_order": False, "shape": shape}
            np.lib.format.write_array_header_1_0(out, header)
            self._copy_head(segment.name, segment.width(self.dim) * segment.dtype.itemsize, out)
            if encode is None:
                with open(self.spool_path, "rb") as spool:
                    shutil.copyfileobj(spool, out, COPY_BUFFER)
            else:
                for block in self._spooled():
                    out.write(np.ascontiguousarray(encode(block)).tobytes())
        self.discard()
        return segment

    def _copy_head(self, name: str, row_bytes: int, out: BinaryIO) -> None:
        """The kept head of the finished segment's file `name` (same name in a new segment), copied to `out`."""
        if not self.kept:
            return
        path = self.directory / name
        with open(path, "rb") as finished:
            finished.seek(np.load(path, mmap_mode="r").offset)  # past the .npy header, to the rows
            left = self.kept * row_bytes
            while left:
                left -= out.write(finished.read(min(left, COPY_BUFFER)))

    def _spooled(self) -> Iterator[np.ndarray]:
        with open(self.spool_path, "rb") as spool:
            while len(block := np.fromfile(spool, dtype="<f4", count=BLOCK_ROWS * self.dim)):
                yield block.reshape(-1, self.dim)

    def close(self) -> None:
        """Stop writing, keeping the spool (a first ingest's resume points read it again)."""
        self.spool.close()

    def discard(self) -> None:
        self.spool.close()
        with contextlib.suppress(FileNotFoundError):
            self.spool_path.unlink()
