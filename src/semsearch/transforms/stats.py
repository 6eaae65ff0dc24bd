"""Streaming statistics: mean and covariance updated a batch at a time in float64.

Each batch is reduced to (count, mean, comoment) and merged with Chan, Golub and LeVeque's pairwise formula,
which stays accurate where the naive sum of squares loses digits; the same formula merges two whole sets of
statistics and, run backwards, removes a batch exactly."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import SemsearchError
from ..storage.damage import brief, derived, safetensors_problem
from ..storage.packedarrays import read_arrays, write_arrays


class RunningStats:
    """count, mean and comoment (sum of outer products of deviations from the mean) of vectors seen."""

    FILE = "stats.safetensors"  # in each generation's directory

    def __init__(self, dim: int):
        self.dim = dim
        self.count = 0
        self.mean = np.zeros(dim, dtype=np.float64)
        self.comoment = np.zeros((dim, dim), dtype=np.float64)

    @classmethod
    def of(cls, vectors: np.ndarray) -> RunningStats:
        stats = cls(vectors.shape[1])
        stats.update(vectors)
        return stats

    def update(self, vectors: np.ndarray) -> None:
        """Add a batch of row vectors."""
        self._combine(*_batch_moments(vectors, self.dim), sign=1)

    def remove(self, vectors: np.ndarray) -> None:
        """Take out a batch previously added (downdate); exact up to rounding."""
        count = len(vectors)
        if count > self.count:
            raise SemsearchError(f"cannot remove {count} vectors from statistics of {self.count}")
        self._combine(*_batch_moments(vectors, self.dim), sign=-1)

    def merge(self, other: RunningStats) -> None:
        """Add another set of statistics, as if its vectors had been added here."""
        if other.dim != self.dim:
            raise SemsearchError(f"cannot merge statistics of dimension {other.dim} into {self.dim}")
        self._combine(other.count, other.mean, other.comoment, sign=1)

    def _combine(self, count: int, mean: np.ndarray, comoment: np.ndarray, *, sign: int) -> None:
        if count == 0:
            return
        if sign > 0:
            total = self.count + count
            delta = mean - self.mean
            self.comoment += comoment + np.outer(delta, delta) * (self.count * count / total)
            self.mean += delta * (count / total)
            self.count = total
            return
        remaining = self.count - count
        if remaining == 0:
            self.count, self.mean, self.comoment = 0, np.zeros_like(self.mean), np.zeros_like(self.comoment)
            return
        # Invert the merge: the remaining set's mean and comoment from the total and the removed part.
        rest_mean = (self.mean * self.count - mean * count) / remaining
        delta = mean - rest_mean
        self.comoment -= comoment + np.outer(delta, delta) * (remaining * count / self.count)
        self.mean = rest_mean
        self.count = remaining

    def covariance(self, ddof: int = 1) -> np.ndarray:
        """The sample covariance (ddof=1, as np.cov); zeros while there are too few vectors."""
        if self.count - ddof <= 0:
            return np.zeros_like(self.comoment)
        return self.comoment / (self.count - ddof)

    def save(self, path: str | Path) -> None:
        # The comoment is symmetric (sums of X'X and of outer products of one vector): its upper triangle, row
        # by row, is all of it, half the bytes (0.6 MB at 384 dims; `comoment` in files written before), and
        # packed without loss (0.52 MB: storage/packedarrays.py; files written before hold it as it is).
        upper = self.comoment[np.triu_indices(self.dim)]
        count = np.array([self.count], dtype=np.int64)
        write_arrays(Path(path), {"count": count, "mean": self.mean, "comoment_upper": upper})

    @classmethod
    def load(cls, path: str | Path) -> RunningStats:
        """Saved statistics; a file that is not whole, or does not hold statistics, is damaged."""
        path = Path(path)
        if problem := safetensors_problem(path):
            raise derived(path, problem)
        try:
            tensors = read_arrays(path)[0]
            stats = cls(len(tensors["mean"]))
            stats.count = int(tensors["count"][0])
            stats.mean = tensors["mean"].astype(np.float64)
            if "comoment" in tensors:
                stats.comoment = tensors["comoment"].astype(np.float64)
            else:
                stats.comoment = _symmetric(tensors["comoment_upper"].astype(np.float64), stats.dim)
        except Exception as error:  # safetensors raises its own kinds; any failure here means the file
            raise derived(path, f"unreadable: {brief(error)}") from None
        if stats.comoment.shape != (stats.dim, stats.dim) or stats.count < 0:
            raise derived(path, f"a comoment of shape {stats.comoment.shape} beside a mean of {stats.dim}")
        return stats


def _symmetric(upper: np.ndarray, dim: int) -> np.ndarray:
    """The dim x dim symmetric matrix whose upper triangle, row by row, is `upper`."""
    if upper.shape != (dim * (dim + 1) // 2,):
        raise ValueError(f"an upper triangle of {upper.shape} values for {dim} dims")
    matrix = np.zeros((dim, dim), dtype=np.float64)
    matrix[np.triu_indices(dim)] = upper
    return matrix + np.triu(matrix, 1).T


def _batch_moments(vectors: np.ndarray, dim: int) -> tuple[int, np.ndarray, np.ndarray]:
    batch = np.asarray(vectors, dtype=np.float64)
    if batch.ndim != 2 or batch.shape[1] != dim:
        raise SemsearchError(f"expected vectors of shape (n, {dim}), got {batch.shape}")
    if len(batch) == 0:
        return 0, np.zeros(dim), np.zeros((dim, dim))
    mean = batch.mean(axis=0)
    centred = batch - mean
    return len(batch), mean, centred.T @ centred
