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


def test_the_cache_answers_only_the_texts_it_holds_and_ignores_what_is_not_its_own(tmp_path):
    """storage/calibrationcache.py with a deterministic stand-in encoder (the cache is storage, not the model):
    a text it holds is answered with its vector, any other encoded; another encoder's or a damaged file is
    ignored; what it keeps is the draw and the vectors the last calibration used."""
    import numpy as np

    from semsearch.storage.calibrationcache import FILE, CalibrationCache

    asked: list[str] = []

    def encode(texts):
        asked.extend(texts)
        return np.array([[len(t), sum(map(ord, t))] for t in texts], dtype=np.float32)

    first = CalibrationCache.load(tmp_path, "model-a")
    cached = first.encoder(encode)
    np.testing.assert_array_equal(cached(["alpha", "beta"]), encode(["alpha", "beta"]))
    first.save(np.array([[3, 0, 5, 0]]))
    asked.clear()

    again = CalibrationCache.load(tmp_path, "model-a")
    assert again.panel.tolist() == [[3, 0, 5, 0]]
    vectors = again.encoder(encode)(["beta", "gamma", "beta"])
    np.testing.assert_array_equal(vectors, encode(["beta", "gamma", "beta"])[[0, 1, 0]])
    assert asked[:1] == ["gamma"] and (again.reused, again.encoded) == (1, 1)  # "beta" from the file, once
    again.save(np.zeros((0, 4), np.int64))
    assert CalibrationCache.load(tmp_path, "model-a").keys.size == 2  # the texts this calibration used

    assert CalibrationCache.load(tmp_path, "model-b").keys.size == 0  # another encoder's vectors: never
    (tmp_path / FILE).write_bytes((tmp_path / FILE).read_bytes()[:-7])  # cut short
    assert CalibrationCache.load(tmp_path, "model-a").keys.size == 0
