"""What makes a calibration cheap (issue 38: renewing one costs at most 10% of the ingest): the sweep's ranks,
read from every weight at once, are the ranks of `fuse`'s own lists."""

from __future__ import annotations

import random

from semsearch.retrieval.search import Match, fuse
from semsearch.retrieval.sweep import CUTOFF, WEIGHTS, fused_ranks, rank_in
from semsearch.settings import Fusion


def test_sweep_ranks_are_the_ranks_of_fused_lists():
    """Random lists with shared and tied scores (few decimals): every weight's rank as `fuse` orders them."""
    draw = random.Random(0)
    found = 0
    for _ in range(600):
        pool = range(40)
        dense_pks, keyword_pks = (
            draw.sample(pool, draw.randint(0, 25)),
            draw.sample(pool, draw.randint(0, 25)),
        )
        digits = draw.choice([1, 2, 6])
        dense = [
            Match(pk, s)
            for pk, s in zip(
                dense_pks, sorted((round(draw.random(), digits) for _ in dense_pks), reverse=True)
            )
        ]
        keyword = [
            Match(pk, s)
            for pk, s in zip(
                keyword_pks, sorted((round(draw.random(), digits) for _ in keyword_pks), reverse=True)
            )
        ]
        target = draw.choice(pool)
        ranks = fused_ranks(target, dense, keyword)
        for weight, rank in zip(WEIGHTS, ranks):
            fused = (
                dense
                if weight == 1
                else keyword
                if weight == 0
                else fuse(dense, keyword, weight, Fusion.CONVEX, CUTOFF)
            )
            assert rank == rank_in(target, fused), (weight, target, dense, keyword)
            found += rank > 0
    assert found > 1000  # the targets were found, at many ranks
