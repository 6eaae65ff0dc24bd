"""Isotropy figures: how narrow a cone the encoder's vectors fill, and what the transform made of it.

Both sides describe vector rows, which are passages (a document cut in several has a row each):

- `raw`: the encoder's vectors as kept. Their running sums (stats.RunningStats: count, mean, comoment) give
  every figure exactly when the rows are unit vectors (the encoder normalises, as the bundled model does):
  sum_{i!=j} x_i.x_j = |sum x|^2 - n, and sum_{i!=j} (x_i.x_j)^2 = ||X'X||_F^2 - n with X'X = comoment + n m m'.
  Rows that are not unit (a model that does not normalise, vectors made elsewhere) are cosines only once
  normalised, which the sums do not give: those figures come from a sample (below), normalised.
- `transformed`: the indexed vectors, the transform's output normalised again row by row. The normalisation
  is not linear, so no figure follows from the covariance: they are measured on the live rows projected, all of
  them up to SAMPLE_ROWS, else a uniform sample of SAMPLE_ROWS drawn with SAMPLE_SEED (the same rows each time
  for the same corpus).

Each side: mean_cosine and sd_cosine of distinct pairs, mean_norm (norm of the mean unit vector), effective_rank
(exp of the entropy of the covariance eigenvalues, normalised to sum 1: the dimension count of an isotropic
space, 1 for a line) and top1_variance (the first eigenvalue's share), and the first SPECTRUM_POINTS shares."""

from __future__ import annotations

from typing import Any

import numpy as np

from .base import Transform, normalize_rows
from .stats import RunningStats

SAMPLE_ROWS = 10_000
SAMPLE_SEED = 0
SPECTRUM_POINTS = 64  # eigenvalue shares kept in the manifest (for the server's panel); `inspect` draws all
UNIT_TOLERANCE = 1e-3  # rows whose norms all lie this close to 1 count as unit vectors


def sample_rows(live: np.ndarray, limit: int = SAMPLE_ROWS, seed: int = SAMPLE_SEED) -> np.ndarray:
    """The live rows the sampled figures are measured on: all of them up to `limit`, else a fixed sample."""
    if len(live) <= limit:
        return np.asarray(live)
    return np.sort(np.random.default_rng(seed).choice(np.asarray(live), limit, replace=False))


def figures(stats: RunningStats, transform: Transform | None, sample: np.ndarray) -> dict[str, Any]:
    """The isotropy object of a corpus: `stats` of all its raw rows, `sample` some of those rows (see
    sample_rows), `transform` what the index applies (None: no transformed side)."""
    sample = np.asarray(sample, dtype=np.float64)
    rows = stats.count
    sampled = _sampled(len(sample), rows)
    if _unit(stats, sample):
        raw = _from_moments(stats.count, stats.mean, stats.comoment)
        raw["method"] = f"exact: all {rows} passages, from the running sums"
    else:
        raw = _from_unit_rows(normalize_rows(sample).astype(np.float64))
        raw["method"] = f"{sampled}, normalised"
    result: dict[str, Any] = {"over": "passages", "rows": rows, "raw": raw}
    if transform is not None and len(sample):
        transformed = _from_unit_rows(transform.project(sample).astype(np.float64))
        transformed["method"] = sampled
        result["transformed"] = transformed
    return result


def spectrum(covariance: np.ndarray) -> np.ndarray:
    """Eigenvalues of a covariance, largest first, as shares of their sum (negative rounding clipped)."""
    values = np.clip(np.linalg.eigvalsh(covariance)[::-1], 0.0, None)
    total = values.sum()
    return values / total if total > 0 else values


def effective_rank(shares: np.ndarray) -> float:
    positive = shares[shares > 0]
    return float(np.exp(-np.sum(positive * np.log(positive)))) if len(positive) else 0.0


def unit_covariance(unit_rows: np.ndarray) -> np.ndarray:
    """The covariance (ddof 1) of rows, as RunningStats would give it."""
    return RunningStats.of(unit_rows).covariance()


def _sampled(size: int, rows: int) -> str:
    if size >= rows:
        return f"all {rows} passages"
    return f"a sample of {size} of {rows} passages (seed {SAMPLE_SEED})"


def _unit(stats: RunningStats, sample: np.ndarray) -> bool:
    """Whether the rows are unit vectors: every sampled one, and on average all (the sums' mean square norm)."""
    if stats.count == 0 or not len(sample):
        return False
    mean_square = (np.trace(stats.comoment) + stats.count * stats.mean @ stats.mean) / stats.count
    norms = np.linalg.norm(sample, axis=1)
    return bool(np.all(np.abs(norms - 1) < UNIT_TOLERANCE) and abs(mean_square - 1) < UNIT_TOLERANCE)


def _from_unit_rows(unit: np.ndarray) -> dict[str, Any]:
    if len(unit) == 0:
        return _from_moments(0, np.zeros(unit.shape[1]), np.zeros((unit.shape[1],) * 2))
    stats = RunningStats.of(unit)
    return _from_moments(stats.count, stats.mean, stats.comoment)


def _from_moments(count: int, mean: np.ndarray, comoment: np.ndarray) -> dict[str, Any]:
    """The figures of `count` unit vectors with this mean and comoment (sum of centred outer products)."""
    if count < 2:
        return {
            "mean_cosine": None,
            "sd_cosine": None,
            "mean_norm": None,
            "effective_rank": None,
            "top1_variance": None,
            "spectrum": [],
        }
    total = mean * count
    pairs = count * (count - 1)
    mean_cosine = (total @ total - count) / pairs
    gram = comoment + count * np.outer(mean, mean)  # X'X
    mean_square = (np.sum(gram * gram) - count) / pairs
    shares = spectrum(comoment / (count - 1))
    return {
        "mean_cosine": round(float(mean_cosine), 6),
        "sd_cosine": round(float(np.sqrt(max(mean_square - mean_cosine**2, 0.0))), 6),
        "mean_norm": round(float(np.linalg.norm(mean)), 6),
        "effective_rank": round(effective_rank(shares), 3),
        "top1_variance": round(float(shares[0]), 6),
        "spectrum": [float(f"{share:.4g}") for share in shares[:SPECTRUM_POINTS]],
    }


def measure(stats: RunningStats, transform: Transform | None, raw: Any, live: np.ndarray) -> dict[str, Any]:
    """The isotropy object of an index's live rows: `raw` its RawVectors (read without mapping: a write's
    scattered rows), `live` the sorted pks of its rows."""
    rows = sample_rows(live)
    sample = raw.read(rows) if len(rows) else np.zeros((0, stats.dim), dtype=np.float32)
    return figures(stats, transform, sample)
