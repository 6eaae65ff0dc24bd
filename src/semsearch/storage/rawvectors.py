"""The kept raw encoder vectors' file format: append-only .npy segments, one per ingest, so a refit or rerank
never re-encodes, and their readers. Segment files are written once under a temporary name and renamed
(rawspool.py writes them); the manifest says which segments belong to the index, so a crashed ingest leaves
only an unreferenced file.

A segment keeps its rows at a precision (settings.RawPrecision), recorded in the manifest's entry for it and in
the .npy header: float32; float16; or int8, each row scaled by its largest component (its scale in a
`.scale.npy` beside the segment; 388 bytes a row at 384 dims, a quarter of float32's); or int6 / int5 / int4,
the same scheme with fewer steps, each row's codes packed bit to bit into bytes (an .npy of uint8, 292 / 244 /
196 bytes a row at 384 dims with the scale). A row's codes depend on the row alone, so the same vector is
stored the same in any segment (an export read back, a compaction, a copy). What each costs rerank and refit:
benchmarks/results/raw-precision.md. Readers get float32 whatever the segment holds."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import numpy as np

from ..errors import IndexStateError
from .damage import DamagedFile, brief, size_problem

DIRECTORY = "raw"
SPOOL_PREFIX = ".spool-"  # a writer's spool in DIRECTORY (rawspool.py)
BLOCK_ROWS = 8192
# `RawVectors.read` reads rows at most READ_GAP apart in one go (24 KB at 384 dims), within READ_SPAN rows.
READ_GAP, READ_SPAN = 16, 1024

FLOAT32 = "float32"
# Rows scaled by their largest component, at this many bits a component (codes -(2^(b-1) - 1) .. 2^(b-1) - 1):
# int8 as plain int8, the narrower ones packed bit to bit (uint8 files, `packed_width` bytes a row).
SCALED_BITS = {"int8": 8, "int6": 6, "int5": 5, "int4": 4}
DTYPES: dict[str, np.dtype] = {
    FLOAT32: np.dtype("<f4"),
    "float16": np.dtype("<f2"),
    "int8": np.dtype("i1"),
    **{name: np.dtype("u1") for name, bits in SCALED_BITS.items() if bits < 8},
}


@dataclass(frozen=True)
class Segment:
    name: str
    start: int  # the first row id (pk) it holds
    count: int
    # A compacted segment lists its rows' pks in this .npy (int64, ascending); otherwise its rows are the
    # consecutive pks start .. start + count - 1.
    pks: str | None = None
    precision: str = FLOAT32  # of its rows (DTYPES); int8's scale is in the file `scale` names

    def to_json(self) -> dict:
        data = asdict(self)
        for name, before in (("pks", None), ("precision", FLOAT32)):
            if data[name] == before:
                del data[name]  # at its default: left out, so releases that do not know the field read it
        return data

    @property
    def scale(self) -> str | None:
        """int8 and the narrower scaled precisions: the file of each row's scale (float32, one per row)."""
        return self.name[:-4] + ".scale.npy" if self.precision in SCALED_BITS else None

    def width(self, dim: int) -> int:
        """Items (of `dtype`) a row of `dim` components takes in the segment's file."""
        return row_width(dim, self.precision)

    @property
    def files(self) -> list[str]:
        """The names of its files in `raw/`."""
        return [name for name in (self.name, self.pks, self.scale) if name]

    @property
    def dtype(self) -> np.dtype:
        if self.precision not in DTYPES:
            raise IndexStateError(
                f"raw segment {self.name} holds {self.precision} rows, which this release cannot read "
                f"(known: {', '.join(DTYPES)}): upgrade semsearch"
            )
        return DTYPES[self.precision]

    @classmethod
    def all_of(cls, listed: Iterable[dict]) -> list[Segment]:
        """Segments as a manifest lists them."""
        return [cls(**segment) for segment in listed]


def lost(path: Path, problem: str, documents: str | None = None) -> DamagedFile:
    """A segment that cannot be read: the raw vectors of `documents` are gone, and nothing derived holds them
    (a segment's rows are one ingest's documents; `semsearch check` names them, given the store)."""
    gone = "missing" if problem == "missing" else "lost"
    whose = documents or "the documents of one ingest (`semsearch check` names them)"
    return DamagedFile(
        path,
        problem,
        f"the raw vectors are {gone}; refit and rerank need them (queries with --rerank 0 still answer). They "
        f"are {whose}: `semsearch check --repair --drop-missing` removes them from the index, to be ingested "
        "again",
    )


def row_scales(rows: np.ndarray, bits: int = 8) -> np.ndarray:
    """Each row's step at `bits` a component: its largest magnitude is the largest code (a zero row: 1)."""
    largest = np.abs(rows).max(axis=1) / (2 ** (bits - 1) - 1)
    return np.where(largest > 0, largest, 1.0).astype("<f4")


def row_width(dim: int, precision: str) -> int:
    """Items (of its dtype) a row of `dim` components takes at `precision` (packed codes: fewer than `dim`)."""
    bits = SCALED_BITS.get(precision, 8)
    return packed_width(dim, bits) if bits < 8 else dim


def packed_width(dim: int, bits: int) -> int:
    return -(-dim * bits // 8)


def scaled_codes(rows: np.ndarray, bits: int) -> np.ndarray:
    """Rows as a scaled segment stores them: int8 codes; narrower codes offset to unsigned and packed, each
    row's `bits` x dim bits in turn (the last byte padded with zeros)."""
    codes = np.rint(rows / row_scales(rows, bits)[:, None]).astype(np.int8)
    if bits == 8:
        return codes
    unsigned = (codes + np.int8(2 ** (bits - 1) - 1)).view(np.uint8)
    planes = np.unpackbits(unsigned[:, :, None], axis=2)[:, :, 8 - bits :]  # each code's low bits, high first
    return np.packbits(planes.reshape(len(rows), -1), axis=1)


def unpacked_codes(stored: np.ndarray, dim: int, bits: int) -> np.ndarray:
    """The signed codes of packed rows (scaled_codes' inverse), as float32."""
    offset = np.float32(2 ** (bits - 1) - 1)
    if bits == 4:  # the default: two codes a byte, the first in the high half (1.4x int8's cost, not 8x)
        codes = np.empty((len(stored), 2 * stored.shape[1]), dtype=np.uint8)
        codes[:, 0::2], codes[:, 1::2] = stored >> 4, stored & 15
        return codes[:, :dim].astype(np.float32) - offset
    planes = np.unpackbits(stored, axis=1, count=dim * bits).reshape(len(stored), dim, bits)
    weights = (1 << np.arange(bits - 1, -1, -1)).astype(np.float32)
    return planes @ weights - offset


def as_kept(rows: np.ndarray, precision: str) -> np.ndarray:
    """float32 rows as a segment at `precision` gives them back (the ingest counts these in its statistics)."""
    if precision in SCALED_BITS:
        scales = row_scales(rows, SCALED_BITS[precision])[:, None]
        return np.rint(rows / scales).astype(np.int8).astype(np.float32) * scales
    return rows.astype(DTYPES[precision]).astype(np.float32)


def stored_rows(rows: np.ndarray, precision: str) -> tuple[np.ndarray, np.ndarray]:
    """float32 rows as a segment at `precision` stores them: its file's rows, and each row's scale (1 for the
    float precisions, which have none). read_rows gives back as_kept(rows), bit for bit."""
    if precision in SCALED_BITS:
        bits = SCALED_BITS[precision]
        return scaled_codes(rows, bits), row_scales(rows, bits)
    return rows.astype(DTYPES[precision]), np.ones(len(rows), "<f4")


def read_rows(stored: np.ndarray, scales: np.ndarray, dim: int, precision: str) -> np.ndarray:
    """stored_rows' rows as float32, as a reader of a segment gets them."""
    if precision not in SCALED_BITS:
        return stored.astype(np.float32, copy=False)
    bits = SCALED_BITS[precision]
    codes = unpacked_codes(stored, dim, bits) if bits < 8 else stored
    return codes.astype(np.float32, copy=False) * scales.astype(np.float32, copy=False)[:, None]


class RawVectors:
    """Read access to the segments an index references (float32 rows whatever precision a segment holds)."""

    def __init__(self, directory: Path, segments: list[Segment], dim: int, mapped: bool = True):
        self.directory = Path(directory) / DIRECTORY
        self.segments = segments
        self.dim = dim
        self.mapped = mapped  # False: `get` reads as `read` does (a write's view of the segments)
        self._maps: dict[str, np.ndarray] = {}  # segments are written once: a map stays valid
        self._pks: dict[str, np.ndarray] = {}
        self._scales: dict[str, np.ndarray] = {}

    def pks_of(self, segment: Segment) -> np.ndarray:
        """The pks of a segment's rows, in row order."""
        if segment.pks is None:
            return np.arange(segment.start, segment.start + segment.count, dtype=np.int64)
        if segment.name not in self._pks:
            path = self.directory / segment.pks
            try:
                listed = np.load(path, allow_pickle=False)
            except (OSError, ValueError, EOFError) as error:
                raise lost(path, f"unreadable: {brief(error)}") from None
            if listed.shape != (segment.count,):
                raise lost(path, f"lists {listed.shape} pks, expected {segment.count}")
            self._pks[segment.name] = listed.astype(np.int64)
        return self._pks[segment.name]

    def _decoded(self, segment: Segment, stored: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """A segment's stored rows (at positions `rows` of it) as float32."""
        if segment.scale is None:
            return read_rows(stored, np.empty(0, "<f4"), self.dim, segment.precision)
        if segment.name not in self._scales:
            path = self.directory / segment.scale
            try:
                scales = np.load(path, mmap_mode="r", allow_pickle=False)
            except (OSError, ValueError, EOFError) as error:
                raise lost(path, f"unreadable: {brief(error)}") from None
            if scales.shape != (segment.count,) or scales.dtype != np.dtype("<f4"):
                raise lost(path, f"holds {scales.dtype} {scales.shape}, expected float32 {(segment.count,)}")
            self._scales[segment.name] = scales
        return read_rows(stored, self._scales[segment.name][rows], self.dim, segment.precision)

    def problem(self, segment: Segment) -> str | None:
        """What is wrong with a segment's file, from its header and size (the rows are not read), or None."""
        path = self.directory / segment.name
        if problem := size_problem(path):
            return problem
        try:
            with open(path, "rb") as handle:
                version = np.lib.format.read_magic(handle)
                read_header = (
                    np.lib.format.read_array_header_1_0
                    if version == (1, 0)
                    else np.lib.format.read_array_header_2_0
                )
                shape, fortran, dtype = read_header(handle)
                offset = handle.tell()
        except (OSError, ValueError, EOFError) as error:
            return f"unreadable header ({brief(error)})"
        width = segment.width(self.dim)
        if shape != (segment.count, width) or fortran or dtype != segment.dtype:
            return f"holds {dtype} {shape}, expected {segment.precision} {(segment.count, width)}"
        expected, size = offset + segment.count * width * dtype.itemsize, path.stat().st_size
        if size != expected:
            return f"{'truncated' if size < expected else 'too long'}: {size} bytes, expected {expected}"
        if segment.pks is not None and not (self.directory / segment.pks).is_file():
            return f"its list of row ids {segment.pks} is missing"
        if segment.scale is not None and not (self.directory / segment.scale).is_file():
            return f"its scale {segment.scale} is missing"
        return None

    def _open(self, segment: Segment) -> np.memmap:
        path = self.directory / segment.name
        if problem := self.problem(segment):
            raise lost(path, problem)
        try:
            return np.load(path, mmap_mode="r", allow_pickle=False)
        except (OSError, ValueError, EOFError) as error:
            raise lost(path, f"unreadable: {brief(error)}") from None

    def blocks(self, rows: int = BLOCK_ROWS) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(pks, vectors) blocks over every stored row, in pk order; memory stays at one block (read, not
        memory-mapped: the pages of a map stay in the RSS until it closes)."""
        for segment in self.segments:
            path = self.directory / segment.name
            offset = self._open(segment).offset  # checks the shape, gives where the rows start
            width = segment.width(self.dim)
            with open(path, "rb") as handle:
                handle.seek(offset)
                pks = self.pks_of(segment)
                for begin in range(0, segment.count, rows):
                    count = min(rows, segment.count - begin)
                    block = np.fromfile(handle, dtype=segment.dtype, count=count * width)
                    yield (
                        pks[begin : begin + count],
                        self._decoded(segment, block.reshape(count, width), np.arange(begin, begin + count)),
                    )

    def get(self, pks: np.ndarray) -> np.ndarray:
        """Vectors for the given pks (any order). Each segment is memory-mapped once and the map kept, for
        queries (a rerank reads its rows in less time than opening the file takes); as `read` where not
        `mapped`: a kept map holds every page it touched in this process's RSS."""
        return self._gather(pks, self._mapped_rows if self.mapped else self._read_rows)

    def read(self, pks: np.ndarray) -> np.ndarray:
        """Vectors for the given pks (any order), read from the files without mapping them: for a write's
        scattered rows (an index build's sample queries, replaced rows). Through a map, each touched row
        brings a whole stretch of the file into this process's RSS (the kernel maps pages around a fault),
        and a kept map holds it: most of a segment, for a write that reads a few rows of every stretch."""
        return self._gather(pks, self._read_rows)

    def _gather(self, pks: np.ndarray, rows_of: Callable[[Segment, np.ndarray], np.ndarray]) -> np.ndarray:
        pks = np.asarray(pks, dtype=np.int64)
        out = np.empty((len(pks), self.dim), dtype=np.float32)
        found = np.zeros(len(pks), dtype=bool)
        for segment in self.segments:
            if segment.pks is None:
                inside = (pks >= segment.start) & (pks < segment.start + segment.count)
                rows = pks[inside] - segment.start
            else:
                listed = self.pks_of(segment)
                at = np.minimum(np.searchsorted(listed, pks), len(listed) - 1)
                inside = listed[at] == pks
                rows = at[inside]
            if inside.any():
                out[inside] = rows_of(segment, rows)
                found |= inside
        if not found.all():
            raise IndexStateError(f"no raw vectors for row ids {pks[~found][:5].tolist()}")
        return out

    def _mapped_rows(self, segment: Segment, rows: np.ndarray) -> np.ndarray:
        if segment.name not in self._maps:
            self._maps[segment.name] = self._open(segment)
        return self._decoded(segment, self._maps[segment.name][rows], rows)

    def _read_rows(self, segment: Segment, rows: np.ndarray) -> np.ndarray:
        """These rows of a segment by positioned reads, rows near each other (within READ_GAP) in one read."""
        offset, items = self._open(segment).offset, segment.width(self.dim)
        width = items * segment.dtype.itemsize
        order = np.argsort(rows, kind="stable")
        ordered = rows[order]
        out = np.empty((len(rows), self.dim), dtype=np.float32)
        starts = np.flatnonzero(
            (np.diff(ordered, prepend=-READ_GAP - 1) > READ_GAP)
            | (np.diff(ordered // READ_SPAN, prepend=-1) != 0)
        )
        ends = np.append(starts[1:], len(ordered))
        with open(self.directory / segment.name, "rb") as handle:
            for begin, end in zip(starts.tolist(), ends.tolist()):
                first, last = int(ordered[begin]), int(ordered[end - 1])
                data = os.pread(handle.fileno(), (last - first + 1) * width, offset + first * width)
                if len(data) != (last - first + 1) * width:
                    raise lost(self.directory / segment.name, "truncated while reading")
                span = np.frombuffer(data, dtype=segment.dtype).reshape(-1, items)
                wanted = ordered[begin:end]
                out[order[begin:end]] = self._decoded(segment, span[wanted - first], wanted)
        return out


def among(pks: np.ndarray, live: np.ndarray) -> np.ndarray:
    """Which of a block's pks are in `live` (sorted unique): a binary search each (np.isin sorts both arrays
    together on every call, `live` too, for every block of a pass)."""
    at = np.minimum(np.searchsorted(live, pks), max(len(live) - 1, 0))
    return live[at] == pks if len(live) else np.zeros(len(pks), dtype=bool)


def unreferenced(directory: Path, *segment_lists: Iterable[Segment]) -> list[Path]:
    """Files in `raw/` that none of the segment lists names: compacted-away segments and their pk lists, and
    spools of writers that were killed (call with the writer lock held, so no spool is live)."""
    named = {name for segments in segment_lists for s in segments for name in s.files}
    folder = Path(directory) / DIRECTORY
    if not folder.is_dir():
        return []
    return [
        path
        for path in folder.iterdir()
        if (path.name.startswith("seg-") and path.name not in named) or path.name.startswith(SPOOL_PREFIX)
    ]
