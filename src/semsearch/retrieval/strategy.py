"""Filtered search by strategy: the k best of the rows a filter allows, as brute force over exactly those rows
ranks them in the index's own space (the transform's output), for every index type.

The rule, with m rows allowed of the n indexed (measurements: benchmarks/results/filter.md):
- m <= exact_rows: score the m rows exactly. flat and hnsw score their stored vectors in place (FAISS reads
  only those rows: 20,000 rows of 384 floats in 1.5 ms), ivf scans every inverted list with the rows as a
  selector, pq (whose codes only find candidates) projects their raw vectors. Exact by construction.
  flat-sq8 and hnsw-sq8 scan their 8-bit codes of the m rows for a shortlist, the codes' best
  max(SHORTLIST_ROWS, SHORTLIST_FACTOR x k), and score it from the raw vectors, projected: a code differs
  from its row by up to half a step a dimension, which swaps near-ties (recall@10 0.91-0.99 against the
  raw rows where their precision allows more), while the rows the raw vectors rank first lie well inside the
  codes' best 40 (at 200,000 rows of 384 dims, every query's true top 10 was in the codes' best 20).
- m > exact_rows: the approximate index with the rows as a selector (a bitmap), its efSearch / nprobe those
  tuned at build for FILTERED_RECALL at the nearest measured selectivity at or below m / n (tuning.py), pq's
  candidates (k_factor x k) and the 8-bit kinds' (CODED_K_FACTOR x k) re-scored from the raw vectors; then
  verified: a query that finds fewer than k, or for which one of a sample
  of the allowed rows spread over them scores above its k-th result (proof that one was missed), is scored
  exactly.
- exact_rows is the crossover, measured at build (tuning.py): going down the selectivities 1/2, 1/4, ..., the
  first at which scoring the allowed rows exactly takes no longer than the approximate search tuned there
  (timed one query at a time), or at which that search cannot reach its recall. flat and flat-sq8 are always
  exact (over their float32 rows, over their codes).
An index built before tuning (no `filtered` levels) scales its fixed efSearch / nprobe by (n / m) ** 0.6 (pq
re-scoring 8 candidates per result), above LEGACY_EXACT_FLOATS / dims rows."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from .vectorindex import CODED, GRAPHS, VectorIndex
from .vectorindex import ranked as listed

Ranked = list[list[tuple[int, float]]]  # per query: (pk, score), best first
FILTERED_RECALL = 0.99  # recall@10 the approximate path is tuned for, against exact filtered search
VERIFY_SAMPLE = 256  # allowed rows scored exactly to check an approximate answer
EXACT_BLOCK = 8192  # raw rows projected at once when pq scores allowed rows exactly
LEGACY_EXACT_FLOATS = 4_000_000  # untuned: exact up to this many allowed rows x dims (10,416 rows at 384)
LEGACY_SCALING = 0.6  # untuned: efSearch / nprobe grow as (n / m) ** this
LEGACY_K_FACTOR = 8  # untuned pq: candidates found per result wanted, re-scored exactly
MAX_EF_SEARCH = 8192
# flat-sq8, hnsw-sq8: the exact path re-scores the codes' best max(SHORTLIST_ROWS, SHORTLIST_FACTOR x k) rows
# from the raw vectors (the same shortlist for every k up to SHORTLIST_ROWS / SHORTLIST_FACTOR: nested so deep);
# their approximate path the graph's best CODED_K_FACTOR x k
SHORTLIST_ROWS, SHORTLIST_FACTOR, CODED_K_FACTOR = 40, 2, 4
TIE = 1e-5  # scores closer than this are ties (the same vector projected in different blocks)


@dataclass
class Exact:
    """Exact scores in the index's own space: from its stored vectors where they are the rows as kept (flat,
    hnsw, ivf), else from the raw vectors projected by the transform (`project_rows`: pks -> projected
    vectors): pq's codes and the 8-bit kinds' only find candidates."""

    vectors: VectorIndex
    project_rows: Callable[[np.ndarray], np.ndarray]

    @property
    def from_raw(self) -> bool:
        """Whether exact scores come from the raw vectors (pq, flat-sq8, hnsw-sq8), not the index's own."""
        return self.vectors.exact_source in (None, "codes")

    def vectors_of(self, pks: np.ndarray) -> np.ndarray:
        stored = None if self.from_raw else self.vectors.vectors_of(pks)
        return stored if stored is not None else self.project_rows(pks)

    def top(self, queries: np.ndarray, k: int, pks: np.ndarray) -> Ranked:
        """The exact k best of `pks` (sorted unique) for each query."""
        depth = shortlist(k)
        if self.vectors.exact_source == "codes" and len(pks) > depth:  # the codes' shortlist, re-scored
            return self.rescore(queries, self.vectors.scanned_codes(queries, depth, pks)[1], k)
        found = None if self.from_raw else self.vectors.exact(queries, k, pks)
        if found is not None:
            return found
        best_scores = np.full((len(queries), 0), -np.inf, dtype=np.float32)
        best_pks = np.empty((len(queries), 0), dtype=np.int64)
        for start in range(0, len(pks), EXACT_BLOCK):
            part = pks[start : start + EXACT_BLOCK]
            scores = queries @ self.vectors_of(part).T
            best_scores = np.concatenate([best_scores, scores], axis=1)
            best_pks = np.concatenate([best_pks, np.broadcast_to(part, scores.shape)], axis=1)
            keep = np.argsort(-best_scores, axis=1, kind="stable")[:, :k]
            best_scores = np.take_along_axis(best_scores, keep, 1)
            best_pks = np.take_along_axis(best_pks, keep, 1)
        return [list(zip(map(int, p), map(float, s))) for p, s in zip(best_pks, best_scores)]

    def rescore(self, queries: np.ndarray, found: np.ndarray, k: int) -> Ranked:
        """Candidates (ids, a row per query, -1 padding) re-scored exactly and cut to k (pq's and the 8-bit
        codes' scores are only for finding them); the vectors of every query's candidates are read at once."""
        pks, rows = np.unique(found, return_inverse=True)
        rows = rows.reshape(found.shape)
        held = pks >= 0
        vectors = self.vectors_of(pks[held]) if held.any() else np.empty((0, queries.shape[1]), np.float32)
        if not held.all():  # the padding's -1 sorts first: a row of zeros for it
            vectors = np.concatenate([np.zeros_like(vectors[:1]), vectors])
        out: Ranked = []
        for query, positions, ids in zip(queries, rows, found):
            scores = np.where(ids >= 0, vectors[positions] @ query, -np.inf)
            order = np.argsort(-scores, kind="stable")[: min(k, int(np.sum(ids >= 0)))]
            out.append(list(zip(pks[positions[order]].tolist(), scores[order].tolist())))
        return out


def unfiltered(exact: Exact, queries: np.ndarray, k: int) -> Ranked:
    """The approximate search with its tuned parameters at this depth; pq asks for k_factor x k and re-scores
    them."""
    found = unfiltered_arrays(exact.vectors, queries, k)
    if found is not None:
        return listed(*found)
    return approximate(exact, queries, k, None, exact.vectors.at_depth(exact.vectors.search_params, k))


def unfiltered_arrays(
    vectors: VectorIndex, queries: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray] | None:
    """`unfiltered` as FAISS's (scores, ids) arrays (-1 padding), where the index's own scores rank its
    candidates; None for pq, whose candidates `unfiltered` re-scores."""
    if vectors.exact_source is None:
        return None
    params = vectors.at_depth(vectors.search_params, k)
    return vectors.search_arrays(queries, k * int(params.get("k_factor", 1)), None, params)


def approximate(
    exact: Exact, queries: np.ndarray, k: int, allowed: np.ndarray | None, params: dict[str, Any]
) -> Ranked:
    """The approximate index searched with `params`; pq asks for k_factor x k and re-scores them exactly, and
    so do the 8-bit kinds with a filter (CODED_K_FACTOR x k: a filter's search is promised FILTERED_RECALL
    against the raw vectors, the unfiltered one `--recall-target` against them through its codes)."""
    coded_filter = allowed is not None and exact.vectors.kind in CODED
    factor = CODED_K_FACTOR if coded_filter else int(params.get("k_factor", 1))
    found = exact.vectors.search_arrays(queries, k * factor, allowed, params)
    if coded_filter or exact.vectors.exact_source is None:
        return exact.rescore(queries, found[1], k)
    return listed(*found)


def shortlist(k: int) -> int:
    """How many of the codes' best rows the exact path of flat-sq8 and hnsw-sq8 re-scores for k results."""
    return max(SHORTLIST_ROWS, SHORTLIST_FACTOR * k)


def plan(vectors: VectorIndex, allowed: int) -> dict[str, Any] | None:
    """The approximate search's parameters for `allowed` rows, or None: score them exactly (the rule above)."""
    count, params = vectors.count, vectors.params or {}
    if vectors.exhaustive or count == 0:
        return None
    if allowed <= params.get("exact_rows", LEGACY_EXACT_FLOATS // vectors.dim):
        return None
    selectivity = allowed / count
    levels = params.get("filtered")
    if levels is not None:  # tuned
        fitting = [level for level in levels if level["selectivity"] <= selectivity]
        if not fitting:  # rarer than any level measured: the exact path is cheaper there
            return None
        return max(fitting, key=lambda level: level["selectivity"])["params"]
    scale = (1 / selectivity) ** LEGACY_SCALING
    base = vectors.search_params
    if "efSearch" in base:
        return {"efSearch": int(min(MAX_EF_SEARCH, np.ceil(base["efSearch"] * scale)))}
    oversampled = {"k_factor": LEGACY_K_FACTOR} if vectors.kind == "pq" else {}
    return {**base, "nprobe": int(np.ceil(base["nprobe"] * scale)), **oversampled}


def nested_rows(vectors: VectorIndex, allowed: int | None, long: bool) -> float:
    """How deep the index's rows are nested for a search (unfiltered, or `allowed` rows of a filter;
    `long`: some documents have several passages): its d best rows are the first d of any deeper search up
    to this depth. Exact scoring: at any depth. hnsw unfiltered: up to its efSearch (the graph search explores
    max(efSearch, depth) nodes, the same ones at every depth up to efSearch), where documents have one
    passage each (a long document's passages are read deeper, 4x at a time). ivf and pq (nprobe grows with
    depth, pq re-scores more candidates) and a filter's approximate search (verified against its k-th
    result): 0. flat-sq8 and hnsw-sq8 filtered exactly: up to SHORTLIST_ROWS / SHORTLIST_FACTOR (the same
    shortlist re-scored at every depth up to it); unfiltered, flat-sq8's scan of its codes: at any depth."""
    if allowed is not None and vectors.kind in CODED:
        return SHORTLIST_ROWS // SHORTLIST_FACTOR if not long and plan(vectors, allowed) is None else 0
    if vectors.exhaustive:
        return np.inf
    if allowed is not None:
        return np.inf if not long and plan(vectors, allowed) is None else 0
    return vectors.search_params["efSearch"] if vectors.kind in GRAPHS and not long else 0


def filtered(exact: Exact, queries: np.ndarray, k: int, allowed: np.ndarray) -> Ranked:
    """The k best of the `allowed` rows (sorted unique pks) for each query, by the rule above."""
    params = plan(exact.vectors, len(allowed))
    if params is None:
        return exact.top(queries, k, allowed)
    ranked = approximate(exact, queries, k, allowed, exact.vectors.at_depth(params, k))
    wrong = unverified(exact, queries, k, allowed, ranked)
    if wrong:
        redone = exact.top(queries[wrong], k, allowed)
        for row, result in zip(wrong, redone):
            ranked[row] = result
    return ranked


def unverified(exact: Exact, queries: np.ndarray, k: int, allowed: np.ndarray, ranked: Ranked) -> list[int]:
    """The queries whose approximate answer is shown wrong: fewer than min(k, allowed) results, or an allowed
    row of an evenly spread sample, not among them, scoring above the k-th (a missed row that belongs)."""
    sample = allowed[np.unique(np.linspace(0, len(allowed) - 1, VERIFY_SAMPLE).astype(np.int64))]
    scores = queries @ exact.vectors_of(sample).T
    wanted, wrong = min(k, len(allowed)), []
    for row, result in enumerate(ranked):
        if len(result) < wanted:
            wrong.append(row)
            continue
        outside = ~np.isin(sample, [pk for pk, _ in result])
        if np.any(scores[row][outside] > result[-1][1] + TIE):
            wrong.append(row)
    return wrong
