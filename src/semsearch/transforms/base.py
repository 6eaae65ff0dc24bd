"""What every transform is: a map of encoder vectors (n, in_dim) to index vectors (n, out_dim), fitted from
the corpus statistics (and, for a transform that trains, batches of the raw vectors), saved beside the index.

Nothing registers itself here: the package's `__init__` maps each TransformKind to its class explicitly."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import numpy as np

from ..settings import TransformKind, TransformSpec
from ..storage.packedarrays import read_arrays, write_arrays
from .stats import RunningStats

# A fresh pass over the raw vectors each call: a transform that trains streams the corpus more than once.
VectorBatches = Callable[[], Iterable[np.ndarray]]
# Called with the number of rows a transform has just worked through (the caller draws any progress bar).
Progress = Callable[[int], None]


@dataclass(frozen=True)
class FitData:
    """What a transform is fitted on: the corpus's streaming statistics and, for a transform that trains
    (flow), its raw vectors and who hears of the rows trained on."""

    stats: RunningStats
    vectors: VectorBatches | None = None
    progress: Progress | None = None

    def report(self, rows: int) -> None:
        if self.progress is not None:
            self.progress(rows)


class Transform(ABC):
    """Maps encoder vectors (n, in_dim) to index vectors (n, out_dim)."""

    kind: ClassVar[TransformKind]

    def __init__(self, spec: TransformSpec, in_dim: int):
        self.spec = spec
        self.in_dim = in_dim

    @property
    @abstractmethod
    def out_dim(self) -> int: ...

    @classmethod
    @abstractmethod
    def fit(cls, spec: TransformSpec, data: FitData) -> Transform:
        """Fit from the streaming statistics (and, for transforms that train, batches of raw vectors)."""

    @abstractmethod
    def apply(self, vectors: np.ndarray) -> np.ndarray:
        """The transformed vectors, before normalisation."""

    @abstractmethod
    def save(self, directory: Path) -> None: ...

    @classmethod
    @abstractmethod
    def load(cls, directory: Path, spec: TransformSpec, in_dim: int) -> Transform: ...

    def drift(self, stats: RunningStats) -> float | None:
        """How far the corpus described by `stats` has moved from the one this transform was fitted on
        (None where the transform has no such measure). 0 when they are the same."""
        return None

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """Transform and L2-normalise: what goes into the inner-product index."""
        return normalize_rows(self.apply(np.asarray(vectors, dtype=np.float32)))

    def project_float32(self, vectors: np.ndarray) -> np.ndarray:
        """`project` for rows scored at query time (pq's candidates, its exact filtered rows): the same
        vectors within float32 rounding, where a transform can compute them faster so."""
        return self.project(vectors)


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


def save_arrays(path: Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write named arrays to a safetensors file atomically, each packed (storage/packedarrays.py: lossless)."""
    write_arrays(path, arrays)


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays `save_arrays` wrote (or a release before: as they were written)."""
    return read_arrays(path)[0]
