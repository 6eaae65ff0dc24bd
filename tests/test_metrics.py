"""The metrics against cases worked out by hand."""

import math

import pytest

from semsearch.evaluation.metrics import evaluate_run, spearman


def test_ndcg_uses_trec_eval_linear_gain():
    qrels = {"q": {"a": 1, "b": 2}}
    # a (gain 1) at rank 1, b (gain 2) at rank 2; ideal order b, a.
    dcg = 1 + 2 / math.log2(3)
    ideal = 2 + 1 / math.log2(3)
    scores = evaluate_run(qrels, {"q": {"a": 0.9, "b": 0.8}}, ["ndcg@10"])
    assert scores["ndcg@10"] == pytest.approx(dcg / ideal)  # 0.8597; exponential gain would give 0.7967


def test_recall_mrr_and_cutoffs():
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    run = {"q": {f"x{i}": 1 - i / 100 for i in range(12)} | {"a": 0.995, "b": 0.5}}
    # ranking: x0, a, x1 ... x11, b  -> a at rank 2, b at rank 14
    scores = evaluate_run(qrels, run, ["recall@10", "recall@100", "mrr@10", "ndcg@10"])
    assert scores["recall@10"] == pytest.approx(1 / 4)
    assert scores["recall@100"] == pytest.approx(2 / 4)
    assert scores["mrr@10"] == pytest.approx(1 / 2)
    ideal = sum(1 / math.log2(rank + 1) for rank in range(1, 5))
    assert scores["ndcg@10"] == pytest.approx((1 / math.log2(3)) / ideal)


def test_a_judged_query_without_results_counts_as_zero_and_unjudged_ones_are_ignored():
    qrels = {"q1": {"a": 1}, "q2": {"b": 1}}
    run = {"q1": {"a": 1.0}, "unjudged": {"a": 1.0}}
    scores = evaluate_run(qrels, run, ["ndcg@10", "recall@10"])
    assert scores == {"ndcg@10": pytest.approx(0.5), "recall@10": pytest.approx(0.5)}


def test_relevance_zero_is_not_relevant():
    qrels = {"q": {"a": 0, "b": 1}}
    scores = evaluate_run(qrels, {"q": {"a": 0.9, "b": 0.1}}, ["mrr@10", "recall@10"])
    assert scores["mrr@10"] == pytest.approx(0.5)
    assert scores["recall@10"] == pytest.approx(1.0)


def test_spearman_by_hand():
    # one swapped pair among three: 1 - 6 * 2 / (3 * (9 - 1)) = 0.5
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert spearman([0.1, 0.2, 0.3, 0.4], [10, 20, 30, 40]) == pytest.approx(1.0)
    # ties get average ranks: ranks (1.5, 1.5, 3) against (1, 2, 3)
    assert spearman([1, 1, 2], [1, 2, 3]) == pytest.approx(math.sqrt(3) / 2)


def test_mrr_cut_off_at_k():
    qrels = {"q": {"a": 1}}
    run = {"q": {f"x{i:02d}": 1 - i / 100 for i in range(10)} | {"a": 0.001}}
    assert evaluate_run(qrels, run, ["mrr@10"])["mrr@10"] == 0
    assert evaluate_run(qrels, run, ["mrr@11"])["mrr@11"] == pytest.approx(1 / 11)


def test_unknown_metric_is_an_error():
    with pytest.raises(ValueError, match="unknown metric"):
        evaluate_run({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["bleu@4"])
