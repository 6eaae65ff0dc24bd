"""How a calibration's pseudo-queries choose the default search: from each dense weight's nDCG@10 per query
(calibration.py's sweep), the mode and hybrid weight. Ties go to dense; one side alone (dropping the other) only
where it beats the default weight beyond noise; and the choice never lands more than TIE below the best weight
measured: where one side alone is refused, the fused weight that takes its place is one tied with the best."""

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
    the best weight, ties going to dense; one side alone only where it beats the default weight beyond noise.
    Where it does not, hybrid at a fused weight tied (within TIE) with the best fused one: the default weight
    if it is one of them (the sweep is flat there: nothing to lean on, the glued sentences' case), else the
    one nearest the refused side (a sweep that climbs toward it, but too noisily for that side alone)."""
    sweep = {w: float(g.mean()) for w, g in gains.items()}
    mode, alpha = best_weight(sweep)
    if mode == SearchMode.HYBRID.value:
        return mode, alpha, "best"
    default = f"{DEFAULT_ALPHA:.1f}"
    side = "1.0" if mode == SearchMode.DENSE.value else "0.0"
    if beats(gains[side], gains[default]):
        return mode, alpha, "best"
    why = f"{mode} alone did not beat hybrid {default} by {NOISE:g} standard errors"
    fused = {float(w): score for w, score in sweep.items() if 0 < float(w) < 1}
    best = max(fused.values())
    tied = [w for w, score in fused.items() if score >= best - TIE]
    if DEFAULT_ALPHA in tied:
        return SearchMode.HYBRID.value, DEFAULT_ALPHA, f"default: {why}, and the default ties the best fused"
    alpha = max(tied) if mode == SearchMode.DENSE.value else min(tied)
    return SearchMode.HYBRID.value, alpha, f"hybrid: {why}; the fused weight nearest it of those tied"


def beats(gains: np.ndarray, than: np.ndarray) -> bool:
    """Whether `gains` beat `than` (paired, per query) by more than TIE and NOISE standard errors."""
    gain = gains - than
    noise = NOISE * float(gain.std(ddof=1)) / math.sqrt(len(gain)) if len(gain) > 1 else 0.0
    return float(gain.mean()) > max(TIE, noise)


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
