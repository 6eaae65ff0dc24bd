"""Transforms: from the corpus statistics, a map of encoder vectors to the vectors that are indexed.

`none` keeps the encoder's vectors; `pca` and `whiten` are linear (linear.py); `flow` is BERT-flow, a
normalizing flow trained on the raw vectors (flow.py). Every transform's output is L2-normalised by
`project`, so the index's inner product is cosine.

Each kind maps to "module:Class", imported the first time that kind is asked for: the flow imports torch,
which a search on a whitened index never needs."""

from __future__ import annotations

import importlib
from pathlib import Path

from ..settings import DRIFT_LIMIT, TransformKind, TransformSpec
from .base import FitData, Progress, Transform, VectorBatches, normalize_rows
from .linear import RANK_TOLERANCE, IdentityTransform, LinearTransform
from .stats import RunningStats

__all__ = [
    "DRIFT_LIMIT",
    "RANK_TOLERANCE",
    "FitData",
    "IdentityTransform",
    "LinearTransform",
    "Progress",
    "Transform",
    "TransformKind",
    "TransformSpec",
    "VectorBatches",
    "fit_transform",
    "implementation",
    "load_transform",
    "normalize_rows",
]

REGISTRY: dict[TransformKind, str] = {
    TransformKind.NONE: "linear:IdentityTransform",
    TransformKind.PCA: "linear:LinearTransform",
    TransformKind.WHITEN: "linear:LinearTransform",
    TransformKind.FLOW: "flow:FlowTransform",
}


def implementation(kind: TransformKind | str) -> type[Transform]:
    """The class of a transform kind, its module imported on first use."""
    module, _, name = REGISTRY[TransformKind.parse(kind, "transform")].partition(":")
    return getattr(importlib.import_module(f"{__name__}.{module}"), name)


def fit_transform(
    spec: TransformSpec,
    stats: RunningStats,
    vectors: VectorBatches | None = None,
    progress: Progress | None = None,
) -> Transform:
    """Fit the transform `spec` asks for. `vectors` (fresh batches of raw vectors each call) is needed by
    the flow, which trains on them; `progress(rows)` then counts rows trained on, summing to
    `spec.epochs * stats.count` over the fit."""
    return implementation(spec.kind).fit(spec, FitData(stats, vectors, progress))


def load_transform(directory: Path, spec: TransformSpec, in_dim: int) -> Transform:
    return implementation(spec.kind).load(directory, spec, in_dim)
