"""A calibration is its corpus's, not its history's (issue 53): the same sentences ingested as one file, or as
three files and then renewed (`refit`), draw the same pseudo-queries (retrieval/drawing.py: by content, never
by pk or an earlier draw), choose the same default and answer the same top 10; the calibration cache only
spares the encoding of texts drawn before (the real model, STS-B dev's sentences)."""

from __future__ import annotations

import csv

import pytest
from conftest import shared_data, write_jsonl

from semsearch import Index
from semsearch.storage.calibrationcache import CalibrationCache, encoder_name

OPTIONS = dict(transform="none", chunk_tokens=64)
SENTENCES = 1_800  # the first part (900) calibrates; the two after it leave that calibration stale
QUERIES = 60


def sts_sentences() -> list[str]:
    with open(shared_data("stsb", "sts-dev.csv"), newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return list(dict.fromkeys(text for row in rows for text in row[5:7]))


def top_ids(index: Index, queries: list[str]) -> list[list[str]]:
    return [[hit.id for hit in hits] for hits in index.search_many(queries, k=10, crop=0)]


@pytest.mark.slow
def test_one_file_or_three_then_refit_calibrate_and_answer_the_same(tmp_path):
    sentences = sts_sentences()
    corpus = [{"_id": f"s{n}", "text": text} for n, text in enumerate(sentences[:SENTENCES])]
    queries = sentences[SENTENCES : SENTENCES + QUERIES]
    whole = Index.create(tmp_path / "whole", **OPTIONS)
    whole.ingest(write_jsonl(tmp_path / "all.jsonl", corpus))
    parts = Index.create(tmp_path / "parts", **OPTIONS)
    cuts = [0, SENTENCES // 2, 3 * SENTENCES // 4, SENTENCES]
    for n, (start, end) in enumerate(zip(cuts, cuts[1:])):
        parts.ingest(write_jsonl(tmp_path / f"part{n}.jsonl", corpus[start:end]))
        if n == 0:
            first = dict(parts.state.calibration)
            assert "skipped" not in first and first["documents"] == SENTENCES // 2
    assert parts.calibration_stale
    parts.refit()
    one, three = whole.state.calibration, parts.state.calibration
    assert three["documents"] == one["documents"] == SENTENCES and three["changed"] == 0
    assert three["reused"] > 0  # texts drawn for the first part, not encoded again
    for field in ("mode", "alpha", "rule", "sweep", "ranks", "bands", "queries", "targets"):
        assert three[field] == one[field], field
    name = encoder_name(whole.settings)
    drawn = CalibrationCache.load(whole.path, name).panel.tolist()
    assert CalibrationCache.load(parts.path, name).panel.tolist() == drawn and len(drawn) >= one["queries"]
    assert whole.query_defaults == parts.query_defaults
    assert top_ids(parts, queries) == top_ids(whole, queries)
    whole.close()
    parts.close()
