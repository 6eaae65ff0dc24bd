"""The linear transforms: `none` keeps the encoder's vectors; `whiten` is BERT-whitening generalised by a
power P: x' = (x - mu) U diag(s^(-P/2)), with U, s the eigenvectors and eigenvalues of the covariance, the
first `dims` columns kept. P=1 is full whitening, P=0 a centring rotation (`pca`), in between a partial
whitening."""

from __future__ import annotations

import logging
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import SettingsError
from ..settings import TransformKind, TransformSpec
from ..storage.damage import brief, derived, safetensors_problem
from .base import FitData, Transform, load_arrays, normalize_rows, save_arrays
from .stats import RunningStats

log = logging.getLogger(__name__)

# Eigenvalues below this fraction of the largest belong to directions the corpus does not span (the
# covariance of mean-pooled vectors has some near 1e-19; with fewer documents than dimensions most are 0).
# Whitening would blow them up into noise, so they are dropped. float32 rounding sits near 1e-15 of the top.
RANK_TOLERANCE = 1e-10
DRIFT_DECIMALS = 6  # `drift` is read against limits of 0.1-0.5; digits below these are the matrix's rounding


class IdentityTransform(Transform):
    kind = TransformKind.NONE
    FILES: tuple[str, ...] = ()  # what it saves in a generation's directory

    @property
    def out_dim(self) -> int:
        return self.in_dim

    @classmethod
    def fit(cls, spec: TransformSpec, data: FitData) -> IdentityTransform:
        return cls(spec, data.stats.dim)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32)

    def save(self, directory: Path) -> None:
        pass

    @classmethod
    def load(cls, directory: Path, spec: TransformSpec, in_dim: int) -> IdentityTransform:
        return cls(spec, in_dim)


class LinearTransform(Transform):
    """x' = (x - mean) @ matrix; pca and whiten differ only in the power applied to the eigenvalues."""

    kind = TransformKind.WHITEN  # and PCA: the registry maps both here
    FILE = "transform.safetensors"
    FILES = (FILE,)

    def __init__(
        self, spec: TransformSpec, in_dim: int, mean: np.ndarray, matrix: np.ndarray, eigenvalues: np.ndarray
    ):
        super().__init__(spec, in_dim)
        # float64: in float32, subtracting the mean loses the low-variance directions that whitening scales up.
        self.mean = mean.astype(np.float64)
        self.matrix = matrix.astype(np.float64)
        self.eigenvalues = eigenvalues.astype(np.float64)

    @property
    def out_dim(self) -> int:
        return self.matrix.shape[1]

    @classmethod
    def fit(cls, spec: TransformSpec, data: FitData) -> LinearTransform:
        stats = data.stats
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
            # Expected of a young index (fewer documents than dims: refitted as it grows); a warning otherwise.
            say = log.info if stats.count <= spec.dims else log.warning
            say("the corpus spans only %d directions; keeping %d dims, not %d", rank, rank, spec.dims)
        power = spec.effective_power
        # rounded to float32's values (a relative 6e-8; the arithmetic stays float64): `arrays` then keeps the
        # matrix in float32 with nothing lost, half its bytes (0.2 MB of 0.4 at 384 x 128)
        matrix = (vectors_[:, :keep] * values[:keep] ** (-power / 2)).astype(np.float32).astype(np.float64)
        return cls(replace(spec, dims=keep), stats.dim, stats.mean, matrix, values[:keep])

    @classmethod
    def stand_in(cls, spec: TransformSpec, in_dim: int) -> LinearTransform:
        """The encoder's vectors unchanged, for an index too young to estimate a covariance (one document, or
        documents whose vectors do not vary): its next add fits the real transform (build.young)."""
        return cls(spec, in_dim, np.zeros(in_dim), np.eye(in_dim), np.ones(in_dim))

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        return ((np.asarray(vectors, dtype=np.float64) - self.mean) @ self.matrix).astype(np.float32)

    def project_float32(self, vectors: np.ndarray) -> np.ndarray:
        """`project` in float32 (the mean subtracted first, as `apply` does): 800 SciFact rows in 1.6 ms
        against 40 ms in float64 here, and within 2e-7 of it (scores too), where pq re-scores them per query."""
        if not hasattr(self, "_float32"):
            self._float32 = (self.mean.astype(np.float32), self.matrix.astype(np.float32))
        mean, matrix = self._float32
        return normalize_rows((np.asarray(vectors, dtype=np.float32) - mean) @ matrix)

    def drift(self, stats: RunningStats) -> float | None:
        """The relative change of the corpus's second moment (about the fitted mean) within the fitted
        principal subspace: ||U'(S + dd')U - diag(s)||_F / ||s||, U and s the fitted eigenvectors and values,
        S and d the covariance and mean shift now. Mean shifts and variance changes along the directions the
        transform keeps both count; the largest directions weigh most, so the measure does not explode on
        the poorly estimated smallest ones (measured on SciFact: 0.1-0.35 for more documents of the same
        kind, 0.5 when a quarter more come from another topic). Rounded to DRIFT_DECIMALS: the basis comes from
        the matrix, kept at float32's values (see `fit`), which leaves about 3e-8 on the fitted corpus itself."""
        if stats.count < 2:
            return None
        basis = self.matrix * self.eigenvalues ** ((self.spec.effective_power or 0.0) / 2)
        shift = stats.mean - self.mean
        moved = basis.T @ (stats.covariance() + np.outer(shift, shift)) @ basis
        drift = np.linalg.norm(moved - np.diag(self.eigenvalues)) / np.linalg.norm(self.eigenvalues)
        return round(float(drift), DRIFT_DECIMALS)

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The fitted arrays by name (`prefix` for a file holding other arrays too); the matrix in float32 where
        that holds its values exactly (fitted by this release: see `fit`), else as it is (an older fit's float64:
        its index's vectors were projected with those values). The mean stays float64 (see `__init__`)."""
        arrays = {name: getattr(self, name) for name in ("mean", "matrix", "eigenvalues")}
        narrow = self.matrix.astype(np.float32)
        if np.array_equal(narrow, self.matrix):
            arrays["matrix"] = narrow
        return {f"{prefix}{name}": array for name, array in arrays.items()}

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], spec: TransformSpec, in_dim: int, prefix: str = ""
    ) -> LinearTransform:
        return cls(spec, in_dim, *(arrays[f"{prefix}{name}"] for name in ("mean", "matrix", "eigenvalues")))

    def save(self, directory: Path) -> None:
        save_arrays(Path(directory) / self.FILE, self.arrays())

    @classmethod
    def load(cls, directory: Path, spec: TransformSpec, in_dim: int) -> LinearTransform:
        """The saved transform; a file that is not whole, or not a transform of `in_dim` dims, is damaged."""
        path = Path(directory) / cls.FILE
        if problem := safetensors_problem(path):
            raise derived(path, problem)
        try:
            loaded = cls.from_arrays(load_arrays(path), spec, in_dim)
        except Exception as error:  # safetensors raises its own kinds; any failure here means the file
            raise derived(path, f"unreadable: {brief(error)}") from None
        if loaded.mean.shape != (in_dim,) or loaded.matrix.shape != (in_dim, len(loaded.eigenvalues)):
            raise derived(path, f"a transform of {loaded.matrix.shape}, for vectors of {in_dim} dims")
        return loaded
