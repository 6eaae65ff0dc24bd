"""Vectors already encoded, kept by model, settings and text, when SEMSEARCH_ENCODING_CACHE names a directory
(off by default): encoding the same passage again (another index of the same corpus with other settings, a
benchmark sweep, a rebuilt or re-imported index, the test suite's many small indexes) reads its vector there
instead of running the model. A hit is the vector the model would give: a text's vector does not depend on
the texts batched with it (the int8 graph is checked per text when it is made, onnx_backend.py).

A vector is one file, its float32 bytes and their digest, named by the hash of its token ids (the model's
very input: a passage and a document truncated to the same tokens share it), below a directory
named by the hash of everything else that shapes it (the model's fingerprint, backend, weights, pooling,
normalisation, length). Files are renamed into place, so processes share a cache without a lock; they are not
fsynced (a cache need not survive a crash): a file whose digest does not match is a miss."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

ENCODING_CACHE_ENV = "SEMSEARCH_ENCODING_CACHE"
DIGEST = 8  # bytes of blake2b over the vector's bytes, after them


def _digest(data: bytes) -> bytes:
    return hashlib.blake2b(data, digest_size=DIGEST).digest()


def cache_directory_from_environment() -> Path | None:
    """The directory SEMSEARCH_ENCODING_CACHE names, or None (no cache)."""
    directory = os.environ.get(ENCODING_CACHE_ENV)
    return Path(directory).expanduser() if directory else None


class EncodingCache:
    """The vectors of one encoder's settings (`identity`), `dim` float32 numbers each."""

    def __init__(self, directory: Path, identity: str, dim: int):
        self.directory = directory / hashlib.sha256(identity.encode()).hexdigest()[:24]
        self.size = dim * 4 + DIGEST
        self.dim = dim

    def _path(self, key: bytes) -> Path:
        name = hashlib.sha256(key).hexdigest()
        return self.directory / name[:2] / name[2:]

    def get(self, keys: Sequence[bytes]) -> tuple[np.ndarray, list[int]]:
        """The kept vectors of `keys` (rows of the missing ones left zero) and the missing positions."""
        out = np.zeros((len(keys), self.dim), dtype=np.float32)
        missing = []
        for row, key in enumerate(keys):
            try:
                data = self._path(key).read_bytes()
            except OSError:
                data = b""
            if len(data) == self.size and _digest(data[:-DIGEST]) == data[-DIGEST:]:
                out[row] = np.frombuffer(data[:-DIGEST], dtype=np.float32)
            else:
                missing.append(row)
        return out, missing

    def put(self, keys: Sequence[bytes], vectors: np.ndarray) -> None:
        for key, vector in zip(keys, np.asarray(vectors, dtype=np.float32), strict=True):
            path = self._path(key)
            path.parent.mkdir(parents=True, exist_ok=True)
            temporary = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}")
            data = vector.tobytes()
            temporary.write_bytes(data + _digest(data))
            os.replace(temporary, path)
