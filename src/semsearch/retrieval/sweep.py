"""The calibration's sweep (calibration.py): where each pseudo-query's target ranks when its dense and keyword
lists are fused at each weight of WEIGHTS, and the nDCG@10 that rank gives (one relevant document)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .search import Found, min_max

WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))  # dense weights tried: 0 keyword alone, 1 dense
CUTOFF = 10
RANKS = "0123456789a"  # a target's rank as the record keeps it: 1-9, "a" for 10, "0" beyond CUTOFF


class Target(Protocol):
    pk: int  # the document a pseudo-query should find


def sweep_weights(
    queries: Sequence[Target], dense: list[Found], keyword: list[Found]
) -> dict[str, np.ndarray]:
    """Each target's nDCG@10 at each dense weight ("0.0" keyword alone, "1.0" dense alone)."""
    return {weight: gains_of(ranks) for weight, ranks in sweep_ranks(queries, dense, keyword).items()}


def sweep_ranks(queries: Sequence[Target], dense: list[Found], keyword: list[Found]) -> dict[str, str]:
    """Each target's rank at each dense weight, a RANKS character per query (the record's `ranks`)."""
    ranks = np.array([fused_ranks(q.pk, d, k) for q, d, k in zip(queries, dense, keyword)], dtype=np.int64)
    ranks = ranks.reshape(len(queries), len(WEIGHTS))
    return {f"{w:.1f}": "".join(RANKS[r] for r in ranks[:, at]) for at, w in enumerate(WEIGHTS)}


def fused_ranks(target: int, dense: Found, keyword: Found) -> list[int]:
    """The target's rank among the first CUTOFF (0 beyond) at every weight of WEIGHTS, all at once: the ranks
    `fuse` gives (the same min-max scores and float sums, ties in its order: dense's list first), without
    building a fused list per weight (which took a third of a small corpus's calibration)."""
    pks = list(dict.fromkeys([m.pk for m in dense] + [m.pk for m in keyword]))
    if target not in pks:
        return [0] * len(WEIGHTS)
    at = {pk: i for i, pk in enumerate(pks)}
    sides = np.zeros((2, len(pks)))
    for side, found in enumerate((dense, keyword)):
        sides[side, [at[m.pk] for m in found]] = min_max([m.score for m in found])
    weights = np.array(WEIGHTS)[:, None]
    scores = weights * sides[0] + (1 - weights) * sides[1]
    mine = at[target]
    above = (scores > scores[:, mine : mine + 1]).sum(axis=1)
    before = (scores[:, :mine] == scores[:, mine : mine + 1]).sum(axis=1)
    rank = above + before + 1
    rank[-1], rank[0] = rank_in(target, dense), rank_in(target, keyword)  # one side alone: its own list
    return [int(r) if r <= CUTOFF else 0 for r in rank]


def gains_of(ranks: str) -> np.ndarray:
    """nDCG@10 with one relevant document, per query, from its rank: 1 / log2(1 + rank), 0 beyond CUTOFF."""
    at = np.array([RANKS.index(c) for c in ranks], dtype=np.float64)
    return np.where(at > 0, 1 / np.log2(1 + np.maximum(at, 1)), 0.0)


def rank_in(target: int, found: Found) -> int:
    """The target's rank among the first CUTOFF, 0 beyond."""
    for rank, match in enumerate(found[:CUTOFF], 1):
        if match.pk == target:
            return rank
    return 0
