"""A fusion weight per query, from how sure each side is of its first hit: no fixed weight is best for every query.

A side's margin is the gap between its first and second scores over the gap between its first and tenth (scale-
free: a keyword side's bm25 and a dense side's cosine compare); the feature is the dense margin minus the keyword
margin, and the overlap of the two top-10 lists beside it decides nothing (measured: it adds no more). The
pseudo-queries of the calibration are cut into BINS groups by the feature's quantiles, and each group takes the
dense weight that ranks its targets best, unless it beats the corpus's fixed weight there by no more than TIE (a
group's best is partly its own noise). A query is weighted by the group its feature falls in."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ..settings import Fusion
from .search import Documents, Found, fuse

BINS = 3
TIE = 0.005
CUTOFF = 10
WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))


def margin(found: Found | Documents) -> float:
    """(first - second) / (first - tenth) of a side's scores; 0 with fewer than two, 1 when all tie at the top."""
    if len(found) < 2:
        return 1.0 if len(found) else 0.0
    if isinstance(found, Documents):
        scores = found.scores[:CUTOFF].tolist()
    else:
        scores = [match.score for match in found[:CUTOFF]]
    spread = scores[0] - scores[-1]
    return 0.0 if spread <= 0 else (scores[0] - scores[1]) / spread


def feature(dense: Found | Documents, keyword: Found | Documents) -> float:
    """How much surer the dense side is of its first hit than the keyword side, -1 to 1."""
    return margin(dense) - margin(keyword)


def fused(dense: Found, keyword: Found, weight: float) -> Found:
    if weight >= 1.0:
        return dense
    if weight <= 0.0:
        return keyword
    return fuse(dense, keyword, weight, Fusion.CONVEX, CUTOFF)


@dataclass(frozen=True)
class PerQueryWeights:
    edges: list[float]  # the feature's bin edges (BINS - 1 of them)
    weights: list[float]  # the dense weight of each bin
    fixed: float  # the corpus's fixed weight they were fitted beside
    sweep: dict[str, float]  # nDCG@10 of the pseudo-queries: "fixed" and "per-query"

    def weight(self, dense: Found, keyword: Found) -> float:
        return self.weights[int(np.searchsorted(self.edges, feature(dense, keyword), side="right"))]

    def rank(self, dense: Found, keyword: Found) -> Found:
        return fused(dense, keyword, self.weight(dense, keyword))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any] | None) -> PerQueryWeights | None:
        return None if not data else cls(**data)


def fit(
    dense: Sequence[Found], keyword: Sequence[Found], gain: Callable[[int, Found], float], fixed: float
) -> PerQueryWeights:
    """The bins and their weights from the pseudo-queries' rankings; `gain(i, found)` is query i's nDCG@10."""
    gains = np.array(
        [[gain(i, fused(d, k, w)) for w in WEIGHTS] for i, (d, k) in enumerate(zip(dense, keyword))]
    )
    return fitted(features(dense, keyword), gains, fixed)


def features(dense: Sequence[Found | Documents], keyword: Sequence[Found | Documents]) -> np.ndarray:
    return np.array([feature(d, k) for d, k in zip(dense, keyword)])


def fitted(features: np.ndarray, gains: np.ndarray, fixed: float) -> PerQueryWeights:
    """The bins and their weights from each query's feature and its nDCG@10 at each of WEIGHTS (a row each)."""
    edges = (
        [float(q) for q in np.quantile(features, [b / BINS for b in range(1, BINS)])] if len(features) else []
    )
    bins = np.searchsorted(edges, features, side="right")
    at_fixed = WEIGHTS.index(round(fixed, 1))
    weights = []
    for b in range(BINS):
        inside = gains[bins == b]
        if not len(inside):
            weights.append(fixed)
            continue
        means = inside.mean(axis=0)
        best = int(np.argmax(means))
        weights.append(WEIGHTS[best] if means[best] > means[at_fixed] + TIE else fixed)
    chosen = np.array([WEIGHTS.index(round(weights[b], 1)) for b in bins], dtype=np.int64)
    per_query = float(gains[np.arange(len(gains)), chosen].mean()) if len(gains) else math.nan
    sweep = {"fixed": round(float(gains[:, at_fixed].mean()), 5), "per-query": round(per_query, 5)}
    return PerQueryWeights(edges, weights, fixed, sweep)
