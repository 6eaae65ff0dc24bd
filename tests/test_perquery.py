"""Weights per query (retrieval/perquery.py): the feature, the fit on pseudo-queries' rankings, and cropping
(retrieval/cropping.py) where a document has too few sentences for the inverse cloze."""

from __future__ import annotations

import numpy as np
import pytest

from semsearch.retrieval.cropping import CROP_WORDS, crop
from semsearch.retrieval.perquery import PerQueryWeights, feature, fit, margin
from semsearch.retrieval.search import Match


def _found(pks, scores):
    return [Match(pk, score) for pk, score in zip(pks, scores)]


SURE = [10.0, 5.0, 4.9, 4.8, 4.7, 4.6, 4.5, 4.4, 4.3, 4.2]  # first hit far ahead
UNSURE = [5.0, 4.99, 4.98, 4.97, 4.96, 4.95, 4.94, 4.93, 4.92, 4.91]


def test_margin_and_feature_are_scale_free():
    assert margin(_found(range(10), SURE)) == pytest.approx(5.0 / 5.8)
    assert margin(_found(range(10), [100 * s for s in SURE])) == pytest.approx(
        margin(_found(range(10), SURE))
    )
    assert feature(_found(range(10), SURE), _found(range(10), UNSURE)) > 0.7
    assert margin([]) == 0.0 and margin(_found([1], [3.0])) == 1.0


def test_the_fit_follows_the_side_that_is_sure_and_keeps_the_fixed_weight_elsewhere():
    """Queries whose dense side is sure have their target first there and nowhere on the keyword side; those
    whose keyword side is sure, the reverse; the rest are found alike by both."""
    rng = np.random.default_rng(0)
    dense, keyword, targets = [], [], []
    for n in range(90):
        target = 1000 + n
        others = [int(x) for x in rng.choice(900, 18, replace=False)]
        kind = n % 3
        dense_pks = [target] + others[:9] if kind != 1 else others[:9] + [target]
        keyword_pks = [target] + others[9:] if kind != 0 else others[9:] + [target]
        dense.append(_found(dense_pks, SURE if kind == 0 else UNSURE))
        keyword.append(_found(keyword_pks, SURE if kind == 1 else UNSURE))
        targets.append(target)

    def gain(i, found):
        return next((1 / np.log2(1 + r) for r, m in enumerate(found[:10], 1) if m.pk == targets[i]), 0.0)

    weights = fit(dense, keyword, gain, fixed=0.5)
    assert weights.weight(dense[1], keyword[1]) <= 0.1  # keyword sure: keyword's weight
    assert weights.weight(dense[2], keyword[2]) == 0.5  # no better weight: the fixed one
    assert all(weights.rank(d, k)[0].pk == t for d, k, t in zip(dense, keyword, targets))
    assert weights.sweep["per-query"] == 1.0 > weights.sweep["fixed"]
    assert PerQueryWeights.from_json(weights.to_json()) == weights


def test_a_short_document_gives_a_cropped_span_and_a_too_short_one_none():
    text = "a young animal of the horse family that has not yet reached its adult size"
    query, rest, (start, end) = crop(text, np.random.default_rng(3))
    assert text[start:end] == query and len(query.split()) == max(CROP_WORDS[0], len(text.split()) // 3)
    assert " ".join(rest.split()) == " ".join((text[:start] + " " + text[end:]).split())
    assert crop("a horse", np.random.default_rng(3)) is None
