"""The bench's calibrated rows: the search a corpus's own calibration (calibration.py) chooses, with a fixed
weight and with a weight per query (perquery.py), measured on the real queries beside the swept weights."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from ..index import Index
    from ..retrieval.perquery import PerQueryWeights


def calibrated(
    index: Index, rerank: int, progress: Callable[[str], None]
) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    """The search the corpus's own calibration (calibration.py) chooses, and what its row records beside the
    metrics (`calibrated`, the weight, the pseudo-queries' sweep); none where the corpus cannot be calibrated."""
    from ..operations.calibrating import calibration
    from ..retrieval.calibration import Calibration
    from ..retrieval.perquery import PerQueryWeights

    chosen = calibration(index.directory, rerank=rerank)
    if not isinstance(chosen, Calibration):
        progress(f"not calibrated: {chosen.skipped}")
        return []
    search: dict[str, Any] = {"mode": chosen.mode}
    if chosen.mode == "hybrid":
        search.update(alpha=chosen.alpha, fusion="convex")
    measured = {
        "calibrated": True,
        "alpha": chosen.alpha,
        "pseudo_queries": chosen.queries,
        "pseudo_sweep": chosen.sweep,
        "calibration_s": chosen.seconds,
    }
    weights = PerQueryWeights.from_json(chosen.per_query)
    per_query = {**measured, "weighting": "per-query", "per_query": chosen.per_query, "weights": weights}
    return [(search, measured), ({"mode": "hybrid", "fusion": "convex"}, per_query)]


def per_query_search(
    index: Index, queries: np.ndarray, texts: list[str], rerank: int, weights: PerQueryWeights
) -> list[list[FusedHit]]:
    """Each query's dense and keyword lists (FUSION_DEPTH each, as hybrid search takes them) fused at the
    weight its own lists call for (perquery.py)."""
    from ..retrieval.search import Match, fuse
    from ..settings import FUSION_DEPTH, Fusion

    sides = [
        index.search_vectors(queries, k=FUSION_DEPTH, rerank=rerank, texts=texts, mode=mode, crop=0)
        for mode in ("dense", "keyword")
    ]
    out = []
    for hits in zip(*sides):
        keys: dict[str, int] = {}  # the documents' ids as the keys fusion matches the sides' places by
        dense, keyword = [
            [Match(keys.setdefault(hit.id, len(keys)), hit.score) for hit in side] for side in hits
        ]
        ids = list(keys)
        weight = weights.weight(dense, keyword)
        found = (
            dense
            if weight == 1
            else keyword
            if weight == 0
            else fuse(dense, keyword, weight, Fusion.CONVEX, 100)
        )
        out.append(
            [FusedHit(ids[match.pk], match.score) for match in found]
        )  # 100 deep, as the bench's other rows
    return out


@dataclass(frozen=True)
class FusedHit:
    """A document's place in a fused list: what the bench's metrics read of a hit."""

    id: str
    score: float
