"""What the last calibration drew and encoded (retrieval/calibration.py), kept beside the index so that renewing
it re-encodes only what changed: its pseudo-queries (each a document's pk, the query's character span in its
text and how it was cut), the paragraph each was asked as (retrieval/bands.py: a renewal asks a query kept the
same one, so its vector is found here too) and the encoder's vector of every text it encoded, found by a hash of
the exact text.

A cache, not part of the index: no generation refers to it, a backup leaves it out, and one that is absent,
damaged or made by another encoder is ignored (the calibration draws and encodes afresh, as the first one did).
A vector is used only for the very text it was made of, and the encoder gives a text the same vector whatever
it is batched with (encoding/onnx_backend.py), so a cached vector is the one encoding would give."""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .damage import safetensors_problem
from .files import atomic_path
from .manifest import IndexSettings

FILE = "calibration-cache.safetensors"
log = logging.getLogger(__name__)


def encoder_name(settings: IndexSettings) -> str:
    """What makes the cache's vectors an index's: its model and how the model runs."""
    parts = (settings.model_fingerprint, settings.quantize, settings.int8_method, settings.backend)
    return "/".join(str(part) for part in parts)


def text_key(text: str) -> int:
    """A text's 63-bit hash (blake2b), as the cache finds its vector."""
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8).digest(), "little") >> 1


@dataclass
class CalibrationCache:
    """The pseudo-queries drawn last (`panel`: rows of pk, start, end, cut), the paragraph each was asked as
    ("": none) and the vectors of the texts encoded for them; `encoder` fills it anew with what the calibration
    under way uses (`reused` of them found)."""

    directory: Path  # the index's
    encoder_name: str  # the model and its settings: vectors of another encoder are never used
    panel: np.ndarray = field(default_factory=lambda: np.zeros((0, 4), np.int64))
    keys: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.float32))
    paragraphs: list[str] = field(default_factory=list)  # a panel row's paragraph query, "" for none
    reused: int = 0
    encoded: int = 0
    _used: dict[int, np.ndarray] = field(default_factory=dict)

    def encoder(self, encode: Callable[[Sequence[str]], np.ndarray]) -> Callable[[Sequence[str]], np.ndarray]:
        """`encode`, answering the texts this cache holds from it and encoding only the others."""
        known = {int(key): row for row, key in enumerate(self.keys)}

        def cached(texts: Sequence[str]) -> np.ndarray:
            keys = [text_key(text) for text in texts]
            missing = sorted({i for i, key in enumerate(keys) if key not in known and key not in self._used})
            fresh = encode([texts[i] for i in missing]) if missing else None
            for at, i in enumerate(missing):
                self._used[keys[i]] = np.asarray(fresh[at], dtype=np.float32)
            self.encoded += len(missing)
            out = []
            for key in keys:
                if key not in self._used:
                    self._used[key] = self.vectors[known[key]]
                    self.reused += 1
                out.append(self._used[key])
            return np.stack(out) if out else np.zeros((0, self.vectors.shape[1]), np.float32)

        return cached

    def kept_paragraphs(self) -> dict[tuple[int, ...], str]:
        """The paragraph the last calibration asked for each of its pseudo-queries asked so, by panel row."""
        return {tuple(row): text for row, text in zip(self.panel.tolist(), self.paragraphs) if text}

    def save(self, panel: np.ndarray, paragraphs: Sequence[str] = ()) -> None:
        """Keep `panel`, its rows' `paragraphs` and the vectors used since `encoder` was made (atomically; a
        failure only logged)."""
        from safetensors.numpy import save_file

        keys = np.fromiter(self._used, dtype=np.int64, count=len(self._used))
        vectors = np.stack(list(self._used.values())) if self._used else np.zeros((0, 0), np.float32)
        tensors = {"panel": np.ascontiguousarray(panel, np.int64), "keys": keys, "vectors": vectors}
        try:
            with atomic_path(self.directory / FILE) as tmp:
                metadata = {"encoder": self.encoder_name, "paragraphs": json.dumps(list(paragraphs))}
                save_file(tensors, str(tmp), metadata=metadata)
        except OSError as error:  # a cache: the calibration it follows stands without it
            log.warning("%s: calibration cache not written (%s)", self.directory / FILE, error)

    @classmethod
    def load(cls, path: Path, encoder_name: str) -> CalibrationCache:
        """The cache in the index directory `path`, or an empty one (none, damaged, another encoder's)."""
        file = path / FILE
        if not file.is_file() or safetensors_problem(file):
            return cls(path, encoder_name)
        from safetensors import safe_open

        try:
            with safe_open(str(file), "numpy") as opened:
                metadata = opened.metadata() or {}
                if metadata.get("encoder") != encoder_name:
                    return cls(path, encoder_name)
                parts = {name: opened.get_tensor(name) for name in ("panel", "keys", "vectors")}
            paragraphs = json.loads(metadata.get("paragraphs", "[]"))  # a cache from before them: none
        except (OSError, ValueError, KeyError) as error:
            log.warning("%s: calibration cache ignored (%s)", file, error)
            return cls(path, encoder_name)
        if parts["panel"].ndim != 2 or len(parts["keys"]) != len(parts["vectors"]):
            return cls(path, encoder_name)
        if not (isinstance(paragraphs, list) and all(isinstance(text, str) for text in paragraphs)):
            paragraphs = []
        paragraphs = paragraphs if len(paragraphs) == len(parts["panel"]) else []
        return cls(path, encoder_name, parts["panel"], parts["keys"], parts["vectors"], paragraphs)
