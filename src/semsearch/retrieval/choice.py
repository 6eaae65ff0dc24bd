"""How a calibration's pseudo-queries choose the default search: from each dense weight's nDCG@10 per query
(calibration.py's sweep), the mode and hybrid weight, ties going to dense, kept only where they beat the default
weight beyond noise where they drop a side."""

from __future__ import annotations

import math

import numpy as np

from ..settings import DEFAULT_ALPHA, SearchMode

TIE = 0.005  # nDCG@10 within this of the best counts as a tie
# One side alone (dropping the other) is chosen only if it beats the default weight by more than this many
# standard errors of their paired difference over the pseudo-queries: pseudo-queries that rarely find their
# documents (short Chinese sentences cut in two, unrelated sentences glued together) tie everywhere, the tie rule
# then chose dense alone, and it lost 0.36 nDCG@10 to the keyword side on Chinese five-sentence documents
# (benchmarks/results/zh-retrieval.md). A fused weight keeps both sides, so its lean to dense stays unguarded.
NOISE = 2.0


def choose(gains: dict[str, np.ndarray]) -> tuple[str, float, str]:
    """The default mode and hybrid weight from each weight's per-query gains (module doc), and by which rule:
    the best weight, ties going to dense; but one side alone only where it beats the default weight beyond
    noise, else the best fused weight that does, else the default weight."""
    sweep = {w: float(g.mean()) for w, g in gains.items()}
    mode, alpha = best_weight(sweep)
    if mode == SearchMode.HYBRID.value:
        return mode, alpha, "best"
    default = f"{DEFAULT_ALPHA:.1f}"

    def beats_default(weight: str) -> bool:
        gain = gains[weight] - gains[default]
        noise = NOISE * float(gain.std(ddof=1)) / math.sqrt(len(gain)) if len(gain) > 1 else 0.0
        return float(gain.mean()) > max(TIE, noise)

    if beats_default("1.0" if mode == SearchMode.DENSE.value else "0.0"):
        return mode, alpha, "best"
    why = f"{mode} alone did not beat hybrid {default} by {NOISE:g} standard errors"
    fused = [w for w in gains if 0 < float(w) < 1 and beats_default(w)]
    if fused:  # the largest of them within TIE of their best, as the tie rule
        best = max(sweep[w] for w in fused)
        alpha = max(float(w) for w in fused if sweep[w] >= best - TIE)
        return SearchMode.HYBRID.value, alpha, f"hybrid: {why}"
    return SearchMode.HYBRID.value, DEFAULT_ALPHA, f"default: {why}, nor did a fused weight"


def best_weight(sweep: dict[str, float]) -> tuple[str, float]:
    """The mode and hybrid weight the mean scores alone choose, ties going to dense (module doc)."""
    fused = {float(w): score for w, score in sweep.items() if 0 < float(w) < 1}
    best_fused = max(fused.values()) if fused else -math.inf
    alpha = max((w for w, s in fused.items() if s >= best_fused - TIE), default=DEFAULT_ALPHA)
    best = max(sweep.values())
    if sweep["1.0"] >= best - TIE:
        return SearchMode.DENSE.value, alpha
    if best_fused >= best - TIE:
        return SearchMode.HYBRID.value, alpha
    return SearchMode.KEYWORD.value, alpha
