"""What the last calibration drew and encoded (retrieval/calibration.py), kept beside the index so that renewing
it re-encodes only texts it has not encoded before: the encoder's vector of every text it encoded, found by a
hash of the exact text, and a record of its draw (each pseudo-query's pk, character span and cut, the paragraph
each was asked as). A calibration draws by the corpus alone (retrieval/drawing.py) and never reads the record:
the cache spares encodings, it never changes what is asked, so a renewal chooses as a fresh calibration does.

The calibration takes every vector it encodes at a precision of raw vectors (storage/rawvectors.py), fresh or
cached: its targets at the index's own (int4 by default), as an ingest keeps them; its queries at int8 or finer
(calibration.QUERY_PRECISION). The cache keeps each group as a raw segment at that precision stores it (codes and
a scale a row: 196 and 388 bytes at 384 dims, not float32's 1,536): so a cached vector is exactly the one
encoding would give the calibration, and a renewal chooses as a calibration from scratch of the same draw. A
group kept at another precision is read at the one asked where it can be (float32, as releases before kept
every vector) and else ignored.

A cache, not part of the index: no generation refers to it, a backup leaves it out, and one that is absent,
damaged or made by another encoder is ignored (the calibration draws and encodes afresh, as the first one did).
A vector is used only for the very text it was made of, and the encoder gives a text the same vector whatever
it is batched with (encoding/onnx_backend.py)."""

from __future__ import annotations

import hashlib
import json
import logging
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .damage import safetensors_problem
from .manifest import IndexSettings
from .packedarrays import read_arrays, write_arrays
from .rawvectors import DTYPES, FLOAT32, read_rows, row_width, stored_rows

FILE = "calibration-cache.safetensors"
# The paragraphs' JSON, compressed, read back at most this long (a few hundred bytes each of QUERIES at most)
PARAGRAPH_BYTES = 1 << 24
# What a release before reads from the file: no vectors (it re-encodes the kept draw's texts, not failing on a
# file without its tensors)
RELEASES_BEFORE: dict[str, np.ndarray] = {
    "keys": np.zeros(0, np.int64),
    "vectors": np.zeros((0, 0), np.float32),
}
log = logging.getLogger(__name__)


def encoder_name(settings: IndexSettings) -> str:
    """What makes the cache's vectors an index's: its model and how the model runs."""
    parts = (settings.model_fingerprint, settings.quantize, settings.int8_method, settings.backend)
    return "/".join(str(part) for part in parts)


def text_key(text: str) -> int:
    """A text's 63-bit hash (blake2b), as the cache finds its vector."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@dataclass
class Kept:
    """Vectors at one precision: each text's key, its row as a raw segment stores it and the row's scale."""

    keys: np.ndarray
    codes: np.ndarray
    scales: np.ndarray


@dataclass
class CalibrationCache:
    """The pseudo-queries drawn last (`panel`: rows of pk, start, end, cut), the paragraph each was asked as
    (the words after its query; None: not asked so) and the vectors of the texts encoded for them, by precision
    (`kept`); `encoder` fills it anew with what the calibration under way uses (`reused` of them found)."""

    directory: Path  # the index's
    encoder_name: str  # the model and its settings: vectors of another encoder are never used
    panel: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    kept: dict[str, Kept] = field(default_factory=dict)
    paragraphs: list[str | None] = field(default_factory=list)  # by panel row: the words after its query
    dim: int = 0  # the vectors' (packed codes do not say it)
    reused: int = 0
    encoded: int = 0
    _used: dict[str, dict[int, tuple[np.ndarray, np.float32]]] = field(default_factory=dict)

    @property
    def keys(self) -> np.ndarray:
        """The keys of every text whose vector is kept, at any precision."""
        return np.concatenate([np.zeros(0, np.int64), *(group.keys for group in self.kept.values())])

    def encoder(
        self, encode: Callable[[Sequence[str]], np.ndarray], precision: str = FLOAT32
    ) -> Callable[[Sequence[str]], np.ndarray]:
        """`encode` at `precision` (rawvectors.as_kept's vectors), answering the texts this cache holds at it
        from it and encoding only the others."""
        group = self._at(precision)
        known = {int(key): row for row, key in enumerate(group.keys)} if group else {}
        used = self._used.setdefault(precision, {})

        def cached(texts: Sequence[str]) -> np.ndarray:
            keys = [text_key(text) for text in texts]
            missing = sorted({i for i, key in enumerate(keys) if key not in known and key not in used})
            if missing:
                fresh = np.asarray(encode([texts[i] for i in missing]), dtype=np.float32)
                self.dim = fresh.shape[1]
                codes, scales = stored_rows(fresh, precision)
                for at, i in enumerate(missing):
                    used[keys[i]] = (codes[at], scales[at])
            self.encoded += len(missing)
            for key in keys:
                if key not in used:
                    assert group is not None  # `known` is empty without a group, and the rest are in `used`
                    used[key] = (group.codes[known[key]], group.scales[known[key]])
                    self.reused += 1
            if not keys:
                return np.zeros((0, self.dim), np.float32)
            codes = np.stack([used[key][0] for key in keys])
            scales = np.array([used[key][1] for key in keys], dtype=np.float32)
            return read_rows(codes, scales, self.dim, precision)

        return cached

    def _at(self, precision: str) -> Kept | None:
        """The vectors kept at `precision`, or kept as float32 and given so (as the index would keep them)."""
        if precision in self.kept:
            return self.kept[precision]
        if FLOAT32 not in self.kept:
            return None
        group = self.kept[FLOAT32]
        return Kept(group.keys, *stored_rows(group.codes.astype(np.float32), precision))

    def kept_paragraphs(self) -> dict[tuple[int, ...], str]:
        """The words the last calibration asked after each of its pseudo-queries asked as a paragraph (the
        paragraph: the query, then these), by panel row."""
        return {
            tuple(row): words for row, words in zip(self.panel.tolist(), self.paragraphs) if words is not None
        }

    def save(self, panel: np.ndarray, paragraphs: Sequence[str] = ()) -> None:
        """Keep `panel`, the paragraph each of its rows was asked as ("": none; each begins with its row's
        query) and the vectors used since `encoder` was made (atomically; a failure only logged)."""
        panel = np.ascontiguousarray(panel, np.int64).reshape(-1, 4)
        after = words_after_queries(panel, paragraphs)
        words = zlib.compress(json.dumps(after, ensure_ascii=False).encode("utf-8"), 9)
        tensors: dict[str, np.ndarray] = {
            "panel": panel,
            "paragraphs": np.frombuffer(words, np.uint8),
            **RELEASES_BEFORE,
        }
        for precision, used in self._used.items():
            if used:
                tensors[f"{precision}.keys"] = np.fromiter(used, dtype=np.int64, count=len(used))
                tensors[f"{precision}.codes"] = np.stack([code for code, _ in used.values()])
                tensors[f"{precision}.scales"] = np.array([scale for _, scale in used.values()], np.float32)
        metadata = {"encoder": self.encoder_name, "dim": str(self.dim)}
        try:  # packed (storage/packedarrays.py), but what a release before reads and the paragraphs (deflated)
            write_arrays(self.directory / FILE, tensors, metadata, plain=(*RELEASES_BEFORE, "paragraphs"))
        except OSError as error:  # a cache: the calibration it follows stands without it
            log.warning("%s: calibration cache not written (%s)", self.directory / FILE, error)

    @classmethod
    def load(cls, path: Path, encoder_name: str) -> CalibrationCache:
        """The cache in the index directory `path`, or an empty one (none, damaged, another encoder's)."""
        file = path / FILE
        if not file.is_file() or safetensors_problem(file):
            return cls(path, encoder_name)
        try:
            parts, metadata = read_arrays(file)
            if metadata.get("encoder") != encoder_name:
                return cls(path, encoder_name)
            return cls._of(path, encoder_name, parts, metadata)
        except (OSError, ValueError, KeyError, TypeError, zlib.error) as error:
            log.warning("%s: calibration cache ignored (%s)", file, error)
            return cls(path, encoder_name)

    @classmethod
    def _of(cls, path: Path, encoder_name: str, parts: dict, metadata: dict) -> CalibrationCache:
        """The cache the file's tensors and metadata hold (a file of releases before: float32 `vectors`, the
        paragraphs whole in the metadata); an empty one where they do not agree."""
        panel = parts["panel"]
        if panel.ndim != 2 or panel.shape[1] != 4:
            return cls(path, encoder_name)
        if "paragraphs" not in parts:  # as releases before kept it
            vectors = parts["vectors"]
            kept = {FLOAT32: Kept(parts["keys"], vectors, np.ones(len(vectors), np.float32))}
            dim = vectors.shape[-1]
            whole = json.loads(metadata.get("paragraphs", "[]"))
            whole = whole if isinstance(whole, list) and len(whole) == len(panel) else []
            paragraphs = words_after_queries(panel, whole)
        else:
            dim = int(metadata["dim"])
            groups = [name[: -len(".codes")] for name in parts if name.endswith(".codes")]
            kept = {
                group: Kept(parts[f"{group}.keys"], parts[f"{group}.codes"], parts[f"{group}.scales"])
                for group in groups
            }
            inflated = zlib.decompressobj()
            paragraphs = json.loads(inflated.decompress(parts["paragraphs"].tobytes(), PARAGRAPH_BYTES))
            if inflated.unconsumed_tail:
                raise ValueError(f"paragraphs beyond {PARAGRAPH_BYTES} bytes")
        for precision, group in kept.items():
            width = row_width(dim, precision) if precision in DTYPES else -1
            if (
                not (len(group.keys) == len(group.codes) == len(group.scales))
                or group.codes.dtype != DTYPES.get(precision)
                or (len(group.codes) and group.codes.shape[1:] != (width,))
            ):
                return cls(path, encoder_name)
        if not (
            isinstance(paragraphs, list)
            and all(words is None or isinstance(words, str) for words in paragraphs)
        ):
            paragraphs = []
        paragraphs = paragraphs if len(paragraphs) == len(panel) else [None] * len(panel)
        return cls(path, encoder_name, panel, kept, paragraphs, dim)


def words_after_queries(panel: np.ndarray, paragraphs: Sequence[str]) -> list[str | None]:
    """Each paragraph without the query it begins with (a panel row's span: its length), None where the row
    was not asked as a paragraph ("")."""
    rows = panel.tolist()
    return [text[end - start :] if text else None for (_, start, end, _), text in zip(rows, paragraphs)]
