"""Evaluation measures from well-kept libraries: trec_eval itself (through pytrec_eval) for retrieval, so
nDCG uses trec_eval's linear gain as BEIR and MTEB report it, and scipy for Spearman's rank correlation."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

import numpy as np

# What the retrieval benchmark reports, and evaluate_run's default.
RETRIEVAL_METRICS = ("ndcg@10", "recall@10", "recall@100", "mrr@10")

# Our metric names -> trec_eval's measure and the key it reports under.
_TREC_MEASURES = {
    "ndcg": ("ndcg_cut.{k}", "ndcg_cut_{k}"),
    "recall": ("recall.{k}", "recall_{k}"),
    "precision": ("P.{k}", "P_{k}"),
    "map": ("map_cut.{k}", "map_cut_{k}"),
}


def evaluate_run(
    qrels: Mapping[str, Mapping[str, int]],
    run: Mapping[str, Mapping[str, float]],
    metrics: Sequence[str] = RETRIEVAL_METRICS,
) -> dict[str, float]:
    """Mean of each metric (ndcg@k, recall@k, precision@k, map@k, mrr@k) over the judged queries.

    A judged query the run lacks counts as 0 (trec_eval's -c); a run's query without judgements is ignored.
    mrr@k is trec_eval's recip_rank on the run cut to its top k (trec_eval order: score, then id, descending)."""
    import pytrec_eval

    judged = {q: {d: int(r) for d, r in docs.items()} for q, docs in qrels.items() if docs}
    results = {q: {d: float(s) for d, s in run.get(q, {}).items()} for q in judged if run.get(q)}
    out = {}
    for name in metrics:
        match = re.fullmatch(r"(ndcg|recall|precision|map|mrr)@(\d+)", name)
        if not match:
            raise ValueError(f"unknown metric {name!r}: use ndcg@k, recall@k, precision@k, map@k or mrr@k")
        kind, k = match.group(1), int(match.group(2))
        if kind == "mrr":
            measure, key, scored = (
                "recip_rank",
                "recip_rank",
                {q: _top(docs, k) for q, docs in results.items()},
            )
        else:
            measure, key = (template.format(k=k) for template in _TREC_MEASURES[kind])
            scored = results
        per_query = pytrec_eval.RelevanceEvaluator(judged, {measure}).evaluate(scored)
        out[name] = sum(values[key] for values in per_query.values()) / len(judged)
    return out


def _top(docs: Mapping[str, float], k: int) -> dict[str, float]:
    return dict(sorted(docs.items(), key=lambda item: (item[1], item[0]), reverse=True)[:k])


def spearman(predicted: Sequence[float] | np.ndarray, gold: Sequence[float] | np.ndarray) -> float:
    """Spearman's rank correlation (ties get average ranks)."""
    from scipy.stats import spearmanr

    return float(spearmanr(np.asarray(predicted, dtype=np.float64), np.asarray(gold, dtype=np.float64))[0])
