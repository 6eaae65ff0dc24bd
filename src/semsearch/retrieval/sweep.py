"""The calibration's sweep (calibration.py): where each pseudo-query's target ranks when its dense and keyword
lists are fused at each weight of WEIGHTS, and the nDCG@10 that rank gives (one relevant document)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from .search import Documents, Found

WEIGHTS = tuple(round(0.1 * step, 1) for step in range(11))  # dense weights tried: 0 keyword alone, 1 dense
CUTOFF = 10
RANKS = "0123456789a"  # a target's rank as the record keeps it: 1-9, "a" for 10, "0" beyond CUTOFF


class Target(Protocol):
    pk: int  # the document a pseudo-query should find


def sweep_weights(
    queries: Sequence[Target], dense: Sequence[Found | Documents], keyword: Sequence[Found | Documents]
) -> dict[str, np.ndarray]:
    """Each target's nDCG@10 at each dense weight ("0.0" keyword alone, "1.0" dense alone)."""
    return {weight: gains_of(ranks) for weight, ranks in sweep_ranks(queries, dense, keyword).items()}


def sweep_ranks(
    queries: Sequence[Target], dense: Sequence[Found | Documents], keyword: Sequence[Found | Documents]
) -> dict[str, str]:
    """Each target's rank at each dense weight, a RANKS character per query (the record's `ranks`)."""
    ranks = target_ranks([q.pk for q in queries], dense, keyword)
    return {f"{w:.1f}": "".join(RANKS[r] for r in ranks[:, at]) for at, w in enumerate(WEIGHTS)}


def fused_ranks(target: int, dense: Found | Documents, keyword: Found | Documents) -> list[int]:
    """One target's ranks at every weight of WEIGHTS (target_ranks)."""
    return target_ranks([target], [dense], [keyword])[0].tolist()


def target_ranks(
    targets: Sequence[int], dense: Sequence[Found | Documents], keyword: Sequence[Found | Documents]
) -> np.ndarray:
    """Each target's rank among the first CUTOFF (0 beyond) at every weight of WEIGHTS (a row per query): the
    ranks `fuse` gives (the same min-max scores and float sums, ties in its order: the dense list's documents
    first, then the keyword list's others), every query and weight at once, without a fused list (one per
    weight and query took a third of a small corpus's calibration; one pass per query, a tenth)."""
    dense_pks, dense_scores = padded([Documents.of(found) for found in dense])
    keyword_pks, keyword_scores = padded([Documents.of(found) for found in keyword])
    targets = np.asarray(targets, dtype=np.int64)[:, None]
    # each dense document's keyword score (0 where the keyword list lacks it), and the keyword list's others
    same = (dense_pks[:, :, None] == keyword_pks[:, None, :]) & (dense_pks[:, :, None] >= 0)
    in_keyword = same.any(axis=2)
    dense_keyword = np.where(in_keyword, np.take_along_axis(keyword_scores, same.argmax(axis=2), 1), 0.0)
    others = (keyword_pks >= 0) & ~same.any(axis=1)
    # the union in fuse's order (the dense slots, then the keyword slots of the others), each side's score
    held = np.concatenate([dense_pks >= 0, others], axis=1)
    sides = (
        np.concatenate([dense_scores, np.zeros_like(keyword_scores)], axis=1),
        np.concatenate([dense_keyword, keyword_scores], axis=1),
    )
    pks = np.concatenate([dense_pks, keyword_pks], axis=1)
    mine = held & (pks == targets)
    found, at = mine.any(axis=1), mine.argmax(axis=1)
    weights = np.array(WEIGHTS)[None, :, None]
    scores = weights * sides[0][:, None, :] + (1 - weights) * sides[1][:, None, :]  # query x weight x slot
    own = np.take_along_axis(scores, at[:, None, None].repeat(len(WEIGHTS), 1), 2)
    earlier = np.arange(pks.shape[1])[None, :] < at[:, None]
    above = ((scores > own) & held[:, None, :]).sum(axis=2)
    before = ((scores == own) & (held & earlier)[:, None, :]).sum(axis=2)
    rank = above + before + 1
    # one side alone: its own list
    rank[:, -1], rank[:, 0] = list_ranks(dense_pks, targets), list_ranks(keyword_pks, targets)
    return np.where(found[:, None] & (rank <= CUTOFF), rank, 0)


def padded(found: Sequence[Documents]) -> tuple[np.ndarray, np.ndarray]:
    """Each query's pks (-1 after its last) and min-max normalised scores (search.min_max: the same float
    operations, the same values), a row per query."""
    width = max((len(documents) for documents in found), default=0) or 1  # a padding slot at least
    pks = np.full((len(found), width), -1, dtype=np.int64)
    scores = np.zeros((len(found), width))
    for row, documents in enumerate(found):
        pks[row, : len(documents)] = documents.pks
        scores[row, : len(documents)] = documents.scores
    held = pks >= 0
    low = np.where(held, scores, np.inf).min(axis=1, initial=np.inf)[:, None]
    high = np.where(held, scores, -np.inf).max(axis=1, initial=-np.inf)[:, None]
    with np.errstate(invalid="ignore", divide="ignore"):
        normalised = np.where(high == low, 1.0, (scores - low) / (high - low))
    return pks, np.where(held, normalised, 0.0)


def list_ranks(pks: np.ndarray, targets: np.ndarray) -> np.ndarray:
    """Each target's rank in its query's list (a row of pks) among the first CUTOFF, 0 beyond."""
    first = pks[:, :CUTOFF] == targets
    if not first.shape[1]:
        return np.zeros(len(pks), dtype=np.int64)
    return np.where(first.any(axis=1), first.argmax(axis=1) + 1, 0)


def gains_of(ranks: str) -> np.ndarray:
    """nDCG@10 with one relevant document, per query, from its rank: 1 / log2(1 + rank), 0 beyond CUTOFF."""
    at = np.array([RANKS.index(c) for c in ranks], dtype=np.float64)
    return np.where(at > 0, 1 / np.log2(1 + np.maximum(at, 1)), 0.0)


def rank_in(target: int, found: Found | Documents) -> int:
    """The target's rank among the first CUTOFF, 0 beyond."""
    return int(list_ranks(Documents.of(found).pks[None, :], np.array([[target]]))[0])
