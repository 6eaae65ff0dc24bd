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
DRIFT_DECIMALS = 6  # `drift` is read against limits of 0.1-0.5
NARROW = (np.float16, np.float32)  # what a fitted matrix is kept in: the first that holds its values exactly
LEAK = 2e-3  # float16's rounding mixes other directions into a whitened one by at most this (see `rounded`)


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
        self,
        spec: TransformSpec,
        in_dim: int,
        mean: np.ndarray,
        matrix: np.ndarray,
        eigenvalues: np.ndarray,
        rounding: float = 0.0,
    ):
        super().__init__(spec, in_dim)
        # float64: in float32, subtracting the mean loses the low-variance directions that whitening scales up.
        self.mean = mean.astype(np.float64)
        self.matrix = matrix.astype(np.float64)
        self.eigenvalues = eigenvalues.astype(np.float64)
        self.rounding = float(rounding)  # the drift the matrix's rounding alone makes on the fitted corpus

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
        if power is None:
            raise SettingsError(f"{spec.kind.value} is not a linear transform")
        spread = values.sum() / (stats.dim * values[keep - 1])  # of the least direction kept (see `rounded`)
        matrix = rounded(vectors_[:, :keep] * values[:keep] ** (-power / 2), spread)
        fitted = cls(replace(spec, dims=keep), stats.dim, stats.mean, matrix, values[:keep])
        fitted.rounding = fitted.unrounded_drift(stats)
        return fitted

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
        kind, 0.5 when a quarter more come from another topic). The basis comes from the matrix, kept at float16's
        values (see `rounded`), which leaves about 2e-4 on the fitted corpus itself (`rounding`, measured when
        fitted): that share is taken out, so a fit's drift is 0 and a drift is moved by at most that much."""
        if stats.count < 2:
            return None
        return round(max(0.0, self.unrounded_drift(stats) - self.rounding), DRIFT_DECIMALS)

    def unrounded_drift(self, stats: RunningStats) -> float:
        """`drift` with the rounding's share in it (unrounded to DRIFT_DECIMALS too)."""
        basis = self.matrix * self.eigenvalues ** ((self.spec.effective_power or 0.0) / 2)
        shift = stats.mean - self.mean
        moved = basis.T @ (stats.covariance() + np.outer(shift, shift)) @ basis
        return float(np.linalg.norm(moved - np.diag(self.eigenvalues)) / np.linalg.norm(self.eigenvalues))

    def arrays(self, prefix: str = "") -> dict[str, np.ndarray]:
        """The fitted arrays by name (`prefix` for a file holding other arrays too); the matrix in the narrowest
        of float16 and float32 that holds its values exactly (float16 where fitted by this release: see `fit`),
        else as it is (an older fit's float64: its index's vectors were projected with those values). The mean
        stays float64 (see `__init__`)."""
        arrays = {name: getattr(self, name) for name in ("mean", "matrix", "eigenvalues")}
        with np.errstate(over="ignore"):  # a value beyond float16's range: inf, not equal
            arrays["matrix"] = next(
                (narrow for narrow in map(self.matrix.astype, NARROW) if np.array_equal(narrow, self.matrix)),
                self.matrix,
            )
        arrays["rounding"] = np.array([self.rounding])
        return {f"{prefix}{name}": array for name, array in arrays.items()}

    @classmethod
    def from_arrays(
        cls, arrays: dict[str, np.ndarray], spec: TransformSpec, in_dim: int, prefix: str = ""
    ) -> LinearTransform:
        mean, matrix, eigenvalues = (arrays[f"{prefix}{name}"] for name in ("mean", "matrix", "eigenvalues"))
        rounding = arrays.get(f"{prefix}rounding", np.zeros(1))[0]  # none in a fit of releases before
        return cls(spec, in_dim, mean, matrix, eigenvalues, rounding=float(rounding))

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


def rounded(matrix: np.ndarray, spread: float) -> np.ndarray:
    """The fitted matrix rounded to float16's values where that is safe, else float32's; the arithmetic stays
    float64. The index's vectors are projected with exactly these values and `arrays` keeps them in 2 bytes (or
    4) with nothing lost: 0.1 MB at 384 x 128, a quarter of float64's. Rounding an eigenvector's components by a
    relative u (float16's unit roundoff, 2^-11) mixes the other directions into its whitened one by about
    u * sqrt(`spread`) of its own spread, `spread` the covariance's trace over (dims x its eigenvalue), at most
    LEAK: on the long-document sets `spread` is 1.25 at the 128th direction, 5e-4, beside the 0.01 of its spread
    that the 8-bit codes the index scans move it by (nDCG@10 unchanged: benchmarks/results/bytes.md#long-documents).
    Above a spread of 17 (directions of little variance whitened) float32's. `drift` leaves the rounding's share
    out."""
    half = np.finfo(np.float16)
    if half.eps / 2 * np.sqrt(spread) <= LEAK and np.abs(matrix).max(initial=0.0) <= half.max:
        return matrix.astype(np.float16).astype(np.float64)
    return matrix.astype(np.float32).astype(np.float64)
