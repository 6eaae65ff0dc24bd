"""Transforms: from the corpus statistics, a map of encoder vectors to the vectors that are indexed.

`whiten` is BERT-whitening generalised by a power P: x' = (x - mu) U diag(s^(-P/2)), with U, s the
eigenvectors and eigenvalues of the covariance, the first `dims` columns kept. P=1 is full whitening, P=0
a centring rotation (`pca`), in between a partial whitening. `none` keeps the encoder's vectors. Every
transform's output is L2-normalised by `project`, so the index's inner product is cosine."""

from __future__ import annotations

import logging
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path
from typing import ClassVar

import numpy as np

from .errors import SettingsError
from .stats import RunningStats

log = logging.getLogger(__name__)

# Above this drift (see LinearTransform.drift) an ingest advises a refit, and `--refit auto` does one.
DRIFT_LIMIT = 0.25

# Eigenvalues below this fraction of the largest belong to directions the corpus does not span (the
# covariance of mean-pooled vectors has some near 1e-19; with fewer documents than dimensions most are 0).
# Whitening would blow them up into noise, so they are dropped. float32 rounding sits near 1e-15 of the top.
RANK_TOLERANCE = 1e-10


class TransformKind(str, Enum):
    NONE = "none"
    PCA = "pca"
    WHITEN = "whiten"
    FLOW = "flow"


@dataclass(frozen=True)
class TransformSpec:
    """What the user asks for; `power` None means the kind's own (1 for whiten, 0 for pca).

    `epochs` and `seed` are the flow's training settings (ignored by the linear transforms)."""

    kind: TransformKind = TransformKind.WHITEN
    dims: int | None = None
    power: float | None = None
    epochs: int = 1
    seed: int = 0

    def __post_init__(self):
        object.__setattr__(self, "kind", TransformKind(self.kind))
        if self.dims is not None and self.dims < 1:
            raise SettingsError(f"--dims must be at least 1, got {self.dims}")
        if self.power is not None and not 0 <= self.power <= 1:
            raise SettingsError(f"--power must be between 0 and 1, got {self.power}")
        if self.kind is TransformKind.NONE and self.dims is not None:
            raise SettingsError("--dims needs a transform that reduces dimensions (pca, whiten or flow)")
        if self.kind is TransformKind.PCA and self.power not in (None, 0):
            raise SettingsError(f"pca is whitening with power 0; use --transform whiten --power {self.power}")
        if self.epochs < 1:
            raise SettingsError(f"--flow-epochs must be at least 1, got {self.epochs}")
        if self.kind in (TransformKind.NONE, TransformKind.FLOW) and self.power is not None:
            raise SettingsError(f"--power applies to whiten, not {self.kind.value}")

    @property
    def effective_power(self) -> float | None:
        if self.kind is TransformKind.WHITEN:
            return 1.0 if self.power is None else float(self.power)
        return 0.0 if self.kind is TransformKind.PCA else None

    def check_against(self, model_dim: int) -> None:
        if self.dims is not None and self.dims > model_dim:
            raise SettingsError(f"--dims {self.dims} is larger than the model's dimension {model_dim}")


VectorBatches = Callable[[], Iterable[np.ndarray]]


class Transform(ABC):
    """Maps encoder vectors (n, in_dim) to index vectors (n, out_dim)."""

    kind: ClassVar[TransformKind]
    registry: ClassVar[dict[TransformKind, type[Transform]]] = {}

    def __init__(self, spec: TransformSpec, in_dim: int):
        self.spec = spec
        self.in_dim = in_dim

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        for kind in getattr(cls, "kinds", (cls.kind,)):
            Transform.registry[kind] = cls

    @property
    @abstractmethod
    def out_dim(self) -> int: ...

    @classmethod
    @abstractmethod
    def fit(cls, spec: TransformSpec, stats: RunningStats, vectors: VectorBatches | None = None) -> Transform:
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


def fit_transform(
    spec: TransformSpec, stats: RunningStats, vectors: VectorBatches | None = None
) -> Transform:
    return _implementation(spec.kind).fit(spec, stats, vectors)


def load_transform(directory: Path, spec: TransformSpec, in_dim: int) -> Transform:
    return _implementation(spec.kind).load(directory, spec, in_dim)


def _implementation(kind: TransformKind) -> type[Transform]:
    if kind is TransformKind.FLOW:
        from . import flow  # noqa: F401  (registers FlowTransform; imports torch only when asked for)
    return Transform.registry[kind]


def normalize_rows(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    return (vectors / np.maximum(norms, 1e-12)).astype(np.float32, copy=False)


class IdentityTransform(Transform):
    kind = TransformKind.NONE

    @property
    def out_dim(self) -> int:
        return self.in_dim

    @classmethod
    def fit(cls, spec, stats, vectors=None):
        return cls(spec, stats.dim)

    def apply(self, vectors):
        return np.asarray(vectors, dtype=np.float32)

    def save(self, directory):
        pass

    @classmethod
    def load(cls, directory, spec, in_dim):
        return cls(spec, in_dim)


class LinearTransform(Transform):
    """x' = (x - mean) @ matrix; pca and whiten differ only in the power applied to the eigenvalues."""

    kinds = (TransformKind.PCA, TransformKind.WHITEN)
    kind = TransformKind.WHITEN
    FILE = "transform.safetensors"

    def __init__(self, spec, in_dim, mean: np.ndarray, matrix: np.ndarray, eigenvalues: np.ndarray):
        super().__init__(spec, in_dim)
        # float64: in float32, subtracting the mean loses the low-variance directions that whitening scales up.
        self.mean = mean.astype(np.float64)
        self.matrix = matrix.astype(np.float64)
        self.eigenvalues = eigenvalues.astype(np.float64)

    @property
    def out_dim(self) -> int:
        return self.matrix.shape[1]

    @classmethod
    def fit(cls, spec, stats, vectors=None):
        if stats.count < 2:
            raise SettingsError(f"{spec.kind.value} needs at least 2 documents to estimate a covariance")
        values, vectors_ = np.linalg.eigh(stats.covariance())
        order = np.argsort(values)[::-1]
        values, vectors_ = values[order], vectors_[:, order]
        rank = int(np.sum(values > values[0] * RANK_TOLERANCE)) if values[0] > 0 else 0
        if rank == 0:
            raise SettingsError("the documents' vectors do not vary: nothing to fit a transform on")
        keep = rank if spec.dims is None else min(spec.dims, rank)
        if spec.dims is not None and spec.dims > rank:
            log.warning("the corpus spans only %d directions; keeping %d dims, not %d", rank, rank, spec.dims)
        power = spec.effective_power
        matrix = vectors_[:, :keep] * values[:keep] ** (-power / 2)
        return cls(replace(spec, dims=keep), stats.dim, stats.mean, matrix, values[:keep])

    def apply(self, vectors):
        return ((np.asarray(vectors, dtype=np.float64) - self.mean) @ self.matrix).astype(np.float32)

    def drift(self, stats):
        """The relative change of the corpus's second moment (about the fitted mean) within the fitted
        principal subspace: ||U'(S + dd')U - diag(s)||_F / ||s||, U and s the fitted eigenvectors and values,
        S and d the covariance and mean shift now. Mean shifts and variance changes along the directions the
        transform keeps both count; the largest directions weigh most, so the measure does not explode on
        the poorly estimated smallest ones (measured on SciFact: 0.1-0.35 for more documents of the same
        kind, 0.5 when a quarter more come from another topic)."""
        if stats.count < 2:
            return None
        basis = self.matrix * self.eigenvalues ** ((self.spec.effective_power or 0.0) / 2)
        shift = stats.mean - self.mean
        moved = basis.T @ (stats.covariance() + np.outer(shift, shift)) @ basis
        return float(np.linalg.norm(moved - np.diag(self.eigenvalues)) / np.linalg.norm(self.eigenvalues))

    def save(self, directory):
        from safetensors.numpy import save_file

        from .storage import atomic_path

        with atomic_path(Path(directory) / self.FILE) as tmp:
            arrays = {"mean": self.mean, "matrix": self.matrix, "eigenvalues": self.eigenvalues}
            # safetensors writes the raw buffer: a Fortran-ordered array (eigh returns those) would transpose.
            save_file({name: np.ascontiguousarray(a) for name, a in arrays.items()}, str(tmp))

    @classmethod
    def load(cls, directory, spec, in_dim):
        from safetensors.numpy import load_file

        tensors = load_file(str(Path(directory) / cls.FILE))
        return cls(spec, in_dim, tensors["mean"], tensors["matrix"], tensors["eigenvalues"])
