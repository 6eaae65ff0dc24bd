"""ANN parameters chosen at build for a recall target, as autofaiss does: recall@10 against exact search is
measured on queries made from a sample of the corpus's own vectors, and the cheapest efSearch (hnsw), nprobe
(ivf) or nprobe and re-scored candidates (pq) that reaches the target is kept. The exact answers come at no
extra read: they are accumulated block by block while the index is filled.

A sample query is a document plus Gaussian noise shaped like the corpus (the covariance of QUERY_NOISE_ROWS of
its rows), QUERY_NOISE times a document's spread, normalised: about cosine 0.55 to its document, off the corpus
as a question is (SciFact's queries: 0.57-0.60 to their nearest document). A document itself is found
trivially (hnsw efSearch 16: 0.998 on documents, 0.869 on SciFact's queries). The midpoint of two documents,
the rule before, was optimistic for ivf and pq: its top 10 sit in the two documents' cells. Measured on
resampled SciFact (benchmarks/filter.py's data, recall@10 on all 1,109 SciFact queries at the parameters each
rule tunes for 0.95 unfiltered, 0.995 filtered; throwaway study, 1,000 sample queries):

| index, space | midpoints: tuned -> real | this rule: tuned -> real |
|---|---|---|
| ivf 1M whitened 128 (IVF4000) | nprobe 3 -> 0.888 | nprobe 11 -> 0.967 |
| ivf 1M, 6.25% of rows | nprobe 8 -> 0.910 | nprobe 438 -> 0.999 |
| ivf 200k whitened (IVF1788) | nprobe 5 -> 0.863 | nprobe 38 -> 0.973 |
| ivf 200k, 12.5% of rows | nprobe 86 -> 0.975 | nprobe 438 -> 0.998 |
| ivf 200k as encoded (384) | nprobe 11 -> 0.930 | nprobe 58 -> 0.987 |
| pq 200k whitened, 4 re-scored per result | nprobe 5 -> 0.852 | nprobe 86 -> 0.960 |
| pq 200k whitened, 8 re-scored per result | nprobe 5 -> 0.862 | nprobe 38 -> 0.970 |
| hnsw 200k whitened | efSearch 192 -> 0.987 | efSearch 192 -> 0.987 |
| hnsw 200k whitened, 12.5% | efSearch 512 -> 0.987 | efSearch 3072 -> 1.000 |
| hnsw 200k as encoded | efSearch 192 -> 0.993 | efSearch 256 -> 0.995 |

(The hnsw rows and ivf's 12.5% and as-encoded rows: the noise drawn from the covariance of 100,000 rows, which
gave the same recall as this rule's within 0.003 wherever both were measured.) Other rules measured: the noise at 1x (optimistic: ivf 200k whitened nprobe 2 ->
0.754) or 2x (pessimistic: nprobe 130 -> 0.993); means of 4 documents (ivf 1M nprobe 8 -> 0.955, but pq 200k
with 4 re-scored nprobe 26 -> 0.940, hnsw 200k whitened efSearch 384) or 3 (ivf 200k whitened nprobe 11 ->
0.928); a document left out of its own answers (trivial: ivf 0.985 at nprobe 1).

Filtered search (strategy.py) is tuned the same way at falling selectivities, 1/2, 1/4, ... of the rows (nested
pseudo-random subsets, by a hash of the row id), for FILTERED_TARGET; at each, the approximate search and the
exact one over the same rows are timed one query at a time, as a query runs, and `exact_rows` is set where
the exact one gets faster (rarer filters are scored exactly)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..settings import DEFAULT_RERANK
from .strategy import MAX_EF_SEARCH, Exact, approximate
from .vectorindex import GRAPHS, TUNED_K, VectorIndex, single_threaded

K = TUNED_K
# ivf and pq are tuned again this deep: a default query asks the index for rerank's 100 rows, 200 where
# documents are cut into passages (search.dense_documents), and nprobe tuned for the nearest 10 leaves the
# 200 nearest in lists it does not open (full SciFact, pq: recall@200 0.899 at the nprobe giving 0.96 at 10,
# and dense nDCG@10 0.668 against flat's 0.690). VectorIndex.at_depth goes between the two.
DEEP_K = 2 * DEFAULT_RERANK
# pq's candidates per result tried at DEEP_K (SciFact, nprobe 232: recall@200 0.834 at 1, 0.9765 at 4, 0.9772
# at 16)
DEEP_K_FACTORS = (2, 4)
SAMPLE_QUERIES = 200
TIMED_QUERIES = 24  # of them, timed one at a time for the exact-or-approximate crossover
MIN_LEVEL_ROWS = 1000  # below this many rows scoring them exactly is always the cheaper
EXACT_TIMED_ROWS = 1 << 17  # an exact scan of more rows is timed on this many of them, and scaled
EF_LADDER = (16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192)
K_FACTORS = (1, 2, 4, 8, 16)  # pq: candidates found per result wanted, re-scored exactly
FILTERED_K_FACTOR = 8
FILTERED_K_FACTORS = (FILTERED_K_FACTOR, 16, 32)  # pq's filtered search tries these (see `tune`)
HASH = np.uint64(0x9E3779B97F4A7C15)
QUERY_NOISE = 1.5  # a sample query's noise, in documents' spreads (see above)
QUERY_NOISE_ROWS = 1024  # rows whose deviations from their mean shape the noise
QUERY_SEED = 12
# Filtered search is promised strategy.FILTERED_RECALL (0.99) and tuned a margin above it, for queries unlike
# the sample's.
FILTERED_TARGET = 0.995


def subset(pks: np.ndarray, level: int) -> np.ndarray:
    """Membership of the pseudo-random subset of about 1 / 2**level of the rows (level 0: all); nested."""
    mixed = (np.asarray(pks, dtype=np.uint64) * HASH) >> np.uint64(40)
    return (mixed & np.uint64((1 << level) - 1)) == 0


def sample_queries(live: np.ndarray, project_rows: Callable[[np.ndarray], np.ndarray]) -> np.ndarray:
    """SAMPLE_QUERIES documents spread evenly over the rows, each plus noise with the covariance of
    QUERY_NOISE_ROWS rows (a Gaussian combination of their deviations), QUERY_NOISE times as wide (see above)."""
    docs = project_rows(live[spread(len(live), SAMPLE_QUERIES)])
    rows = project_rows(live[spread(len(live), QUERY_NOISE_ROWS)])
    deviations = rows - rows.mean(axis=0)
    weights = np.random.default_rng(QUERY_SEED).standard_normal((len(docs), len(rows)), dtype=np.float32)
    queries = docs + QUERY_NOISE * (weights @ deviations) / np.sqrt(len(rows))
    norms = np.linalg.norm(queries, axis=1, keepdims=True)
    return (queries / np.where(norms > 0, norms, 1)).astype(np.float32)


def spread(count: int, wanted: int) -> np.ndarray:
    """Up to `wanted` positions of `count` rows, evenly spread."""
    return np.unique(np.linspace(0, count - 1, min(wanted, count)).astype(np.int64))


class Truth:
    """The exact K best rows for each sample query over every row and over each nested subset, fed the
    projected blocks as the index is filled."""

    def __init__(self, queries: np.ndarray, levels: int):
        self.queries, self.levels = queries, levels
        self.scores = np.full((levels + 1, len(queries), K), -np.inf, dtype=np.float32)
        self.ids = np.full((levels + 1, len(queries), K), -1, dtype=np.int64)
        # the DEEP_K best over every row
        self.deep_scores = np.full((len(queries), DEEP_K), -np.inf, dtype=np.float32)
        self.deep_ids = np.full((len(queries), DEEP_K), -1, dtype=np.int64)

    def add(self, pks: np.ndarray, block: np.ndarray) -> None:
        scores = self.queries @ block.T  # (queries, rows)
        for level in range(self.levels + 1):
            keep = subset(pks, level)
            self.scores[level], self.ids[level] = best(
                self.scores[level], self.ids[level], scores[:, keep], pks[keep]
            )
        self.deep_scores, self.deep_ids = best(self.deep_scores, self.deep_ids, scores, pks)

    def arrays(self) -> dict[str, np.ndarray]:
        """The answers so far, for a build's checkpoint (storage/buildcheckpoint.py)."""
        return dict(scores=self.scores, ids=self.ids, deep_scores=self.deep_scores, deep_ids=self.deep_ids)

    def restore(self, arrays: dict[str, np.ndarray]) -> None:
        """The answers a checkpoint kept (the same queries: they are drawn from the rows with a fixed seed)."""
        self.scores, self.ids = arrays["scores"], arrays["ids"]
        self.deep_scores, self.deep_ids = arrays["deep_scores"], arrays["deep_ids"]

    def head(self, count: int) -> Truth:
        """The first `count` queries with their answers (the filtered levels are tuned on SAMPLE_QUERIES)."""
        part = Truth.__new__(Truth)
        part.queries, part.levels = self.queries[:count], self.levels
        part.scores, part.ids = self.scores[:, :count], self.ids[:, :count]
        part.deep_scores, part.deep_ids = self.deep_scores[:count], self.deep_ids[:count]
        return part

    def recall(self, level: int, ranked: list[list[tuple[int, float]]], depth: int = K) -> float:
        """recall@depth (K, or DEEP_K at level 0) of the answers against the exact ones."""
        hits = []
        for exact, found in zip(self.deep_ids if depth == DEEP_K else self.ids[level], ranked):
            want = {pk for pk in exact if pk >= 0}
            if want:
                hits.append(len(want & {pk for pk, _ in found[:depth]}) / len(want))
        return float(np.mean(hits)) if hits else 1.0


def best(
    scores: np.ndarray, ids: np.ndarray, more: np.ndarray, pks: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The best as many (scores, ids) per query as `scores` holds, of those and `more` (the rows `pks`)."""
    depth = scores.shape[1]
    merged = np.concatenate([scores, more], axis=1)
    ids = np.concatenate([ids, np.broadcast_to(pks, more.shape)], 1)
    if merged.shape[1] > depth:
        top = np.argpartition(-merged, depth - 1, axis=1)[:, :depth]
        merged, ids = np.take_along_axis(merged, top, 1), np.take_along_axis(ids, top, 1)
    order = np.argsort(-merged, axis=1, kind="stable")
    return np.take_along_axis(merged, order, 1), np.take_along_axis(ids, order, 1)


@dataclass
class Tuning:
    params: dict[str, Any]  # VectorIndex.params: the unfiltered search's, `exact_rows`, `filtered` levels
    recall: float  # measured recall@10 of the unfiltered search with them


def levels_for(count: int) -> int:
    """How many halvings of the rows stay at or above MIN_LEVEL_ROWS."""
    return max(0, int(np.floor(np.log2(max(count, 1) / MIN_LEVEL_ROWS))))


def tune(vectors: VectorIndex, truth: Truth, exact: Exact, target: float) -> Tuning:
    """The cheapest parameters reaching `target` unfiltered and FILTERED_TARGET at each level (see above)."""
    if vectors.kind == "flat":
        return Tuning({}, 1.0)
    if vectors.exhaustive:  # flat-sq8: exact over its codes, nothing to tune; its recall against float32's
        return Tuning({}, round(truth.recall(0, _search(exact, truth.queries, {}, None)), 4))
    runs = _runs(vectors)
    found, recall, starts = _cheapest(exact, truth, 0, target, runs, [0] * len(runs))
    params: dict[str, Any] = {**found, "exact_rows": MIN_LEVEL_ROWS, "filtered": []}
    if vectors.kind not in GRAPHS and vectors.count > DEEP_K:  # hnsw searches max(efSearch, k) deep already
        deep_runs = _runs(vectors, DEEP_K_FACTORS)
        deep, deep_recall, _ = _cheapest(
            exact, truth, 0, target, deep_runs, [0] * len(deep_runs), None, DEEP_K
        )
        params["deep"] = {"k": DEEP_K, **deep, "recall": round(deep_recall, 4)}
    live = vectors.ids()
    # pq filtered re-scores at least FILTERED_K_FACTOR candidates per result: a filter allowing more rows than
    # the level it takes parameters from has denser neighbours, which the codes rank less well; and up to 32,
    # where the codes' own ranking caps what any nprobe reaches below FILTERED_TARGET (1M rows, IVF4000,PQ32x8:
    # recall@10 0.993 at 16 per result and 1,024 lists, so every filter under half the rows was scored exactly)
    if vectors.kind == "pq":
        ends = dict(zip(K_FACTORS, starts))
        runs = _runs(vectors, FILTERED_K_FACTORS)
        starts = [ends.get(factor, 0) for factor in FILTERED_K_FACTORS]
    # on SAMPLE_QUERIES of the queries: with 500 given ones and three runs, a 1M pq build's filtered levels took
    # half an hour (each try searches every query at 10 x 32 candidates)
    truth = truth.head(SAMPLE_QUERIES)
    for level in range(1, truth.levels + 1):
        allowed = live[subset(live, level)]
        chosen, level_recall, starts = _cheapest(exact, truth, level, FILTERED_TARGET, runs, starts, allowed)
        if level_recall < FILTERED_TARGET or _timed(exact, truth, allowed) <= _timed(
            exact, truth, allowed, chosen
        ):
            params["exact_rows"] = len(allowed)  # here and below, scoring the rows exactly is the faster
            break
        params["filtered"].append(
            {"selectivity": 2.0**-level, "params": chosen, "recall": round(level_recall, 4)}
        )
    return Tuning(params, round(recall, 4))


def _runs(vectors: VectorIndex, factors: tuple[int, ...] = K_FACTORS) -> list[list[dict[str, Any]]]:
    """The settings tried, each run cheapest first: efSearch for hnsw and hnsw-sq8, nprobe for ivf, and for pq
    a run of nprobe per number of candidates re-scored (`factors`)."""
    if vectors.kind in GRAPHS:
        return [[{"efSearch": ef} for ef in EF_LADDER if ef <= MAX_EF_SEARCH]]
    nlist = int(vectors.index.nlist)
    probes = sorted({min(nlist, round(1.5**i)) for i in range(64) if 1.5 ** (i - 1) < nlist})
    if vectors.kind == "ivf":
        return [[{"nprobe": p} for p in probes]]
    return [[{"nprobe": p, "k_factor": f} for p in probes] for f in factors]


def _search(
    exact: Exact, queries: np.ndarray, params: dict[str, Any], allowed: np.ndarray | None, depth: int = K
):
    """The approximate search as strategy.py runs it (pq's candidates re-scored)."""
    return approximate(exact, queries, depth, allowed, params)


def _cheapest(
    exact: Exact,
    truth: Truth,
    level: int,
    target: float,
    runs: list[list[dict[str, Any]]],
    starts: list[int],
    allowed: np.ndarray | None = None,
    depth: int = K,
) -> tuple[dict[str, Any], float, list[int]]:
    """In each run, the first setting from its start that reaches `target` at this level (recall grows along
    a run: galloping from the start, the cheap settings first, then a bisection); of those, the fastest
    (timed), with its recall and where each run got to (a rarer level starts there). Where none reaches it,
    the best tried."""
    reached, ends, last = [], [], (runs[0][-1], -1.0)
    for run, start in zip(runs, starts):
        measured: dict[int, float] = {}

        def recall_at(at: int, run=run, measured=measured) -> float:
            if at not in measured:
                found = _search(exact, truth.queries, run[at], allowed, depth)
                measured[at] = truth.recall(level, found, depth)
            return measured[at]

        low, high, step = start, start, 1
        while recall_at(high) < target and high < len(run) - 1:
            low, high, step = high + 1, min(len(run) - 1, high + step), step * 2
        if recall_at(high) < target:
            last = max(last, (run[high], measured[high]), key=lambda pair: pair[1])
            ends.append(high)
            continue
        while low < high:  # the first setting reaching the target lies in [low, high]
            middle = (low + high) // 2
            low, high = (low, middle) if recall_at(middle) >= target else (middle + 1, high)
        reached.append((run[high], recall_at(high)))
        ends.append(high)
    if not reached:
        return last[0], last[1], ends
    if len(reached) == 1:
        return reached[0][0], reached[0][1], ends
    fastest = min(reached, key=lambda pair: _timed(exact, truth, allowed, pair[0], depth))
    return fastest[0], fastest[1], ends


def _timed(
    exact: Exact,
    truth: Truth,
    allowed: np.ndarray | None,
    params: dict[str, Any] | None = None,
    depth: int = K,
) -> float:
    """Median seconds per query, one query at a time on one thread, as a query runs: of the approximate search
    with `params`, or (None) of scoring the allowed rows exactly."""
    seconds, scale = [], 1.0
    if params is None and allowed is not None and len(allowed) > EXACT_TIMED_ROWS:
        # scoring rows exactly costs in proportion to them: timed on a spread share, scaled up (at 10 million
        # rows, timing every level's scan took most of a build's tuning)
        scale = len(allowed) / EXACT_TIMED_ROWS
        allowed = allowed[spread(len(allowed), EXACT_TIMED_ROWS)]
    for query in truth.queries[:TIMED_QUERIES, None]:
        if params is None:
            run = lambda query=query: exact.top(query, K, allowed)  # noqa: E731
        else:
            run = lambda query=query: _search(exact, query, params, allowed, depth)  # noqa: E731
        started = time.perf_counter()
        single_threaded(1, run)
        seconds.append(time.perf_counter() - started)
    return scale * float(np.median(seconds))
