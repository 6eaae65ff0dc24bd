"""An index cut into shards (`semsearch shard`) answers exactly as the one index it was cut from: the real model
and real FAISS over the SciFact subset, cut into 3 and 5 shards, every query's top 10 equal (ids, order,
passages, snippets, scores within 1e-5) in dense, keyword and hybrid, with a filter, page 2, facets and rerank,
for each kind whose codes are trained once; hnsw (a graph per shard) at least as near exact search as the
source. The two wrong designs are caught: bm25 with each shard's own statistics, and hybrid normalised per shard."""

from __future__ import annotations

import json
import os
import signal
import time

import numpy as np
import pytest
from conftest import SCIFACT_GROUP, command_here, copy_index

from semsearch import Index
from semsearch.sharded import ShardedIndex

pytestmark = [pytest.mark.slow, SCIFACT_GROUP]

KINDS = ("flat", "flat-sq8", "ivf", "pq")
# every kind cut into 3; into 5 the kinds whose merge differs most (codes re-scored, pq's depth; the graph built
# per shard): the suite's budget. The benchmark cuts every kind into 5 (python -m benchmarks sharding).
COUNTS = {"flat": (3,), "flat-sq8": (3, 5), "ivf": (3,), "pq": (3, 5), "hnsw": (3, 5)}
SCORE_TOLERANCE = 1e-5
QUERIES = 24  # of the subset's 40 test queries: each asked every way below, of every kind and cut
# what each kind is searched with: every mode plain, then a filter, page 2, facets and rerank
ASKED = (
    {"mode": "dense"},
    {"mode": "keyword"},
    {"mode": "hybrid"},
    {"mode": "hybrid", "where": ["kind=even"]},
    {"mode": "keyword", "where": ["year>=2010"], "offset": 10},
    {"mode": "hybrid", "offset": 10},
    {"mode": "dense", "offset": 10, "rerank": 40},
    {"mode": "hybrid", "facets": "kind,year"},
    {"mode": "keyword", "facets": "kind", "typos": 1},
)


def refitted(source, target, kind):
    copy_index(source, target)
    with Index.open(target) as index:
        if kind != index.settings.index_type:
            index.refit(index_type=kind, calibrate=False)
    return target


@pytest.fixture(scope="module")
def queries(scifact_subset):
    return list(scifact_subset[1].values())[:QUERIES]


@pytest.fixture(scope="module")
def kinds(scifact_encoded, tmp_path_factory):
    """The SciFact subset as each index kind, and each cut into its COUNTS of shards."""
    root = tmp_path_factory.mktemp("sharding")
    made = {}
    for kind in (*KINDS, "hnsw"):
        source = refitted(scifact_encoded, root / kind, kind)
        cuts = {}
        for count in COUNTS[kind]:
            out = root / f"{kind}-{count}"
            result = command_here("shard", "--index", source, "--shards", count, "--out", out, "--quiet")
            assert result.returncode == 0, result.stderr
            cuts[count] = out
        made[kind] = (source, cuts)
    return made


def same_hits(one, other) -> bool:
    """The same hits in the same order (every field a hit's JSON carries), their scores within tolerance."""
    if len(one) != len(other):
        return False
    for a, b in zip(one, other):
        if (a.id, a.row, a.title, a.text, a.passage, a.snippet, a.location) != (
            b.id,
            b.row,
            b.title,
            b.text,
            b.passage,
            b.snippet,
            b.location,
        ):
            return False
        if abs(a.score - b.score) > SCORE_TOLERANCE:
            return False
        for side in ("dense", "keyword"):
            x, y = (a.scores or {}).get(side), (b.scores or {}).get(side)
            if (x is None) != (y is None) or (x is not None and abs(x - y) > SCORE_TOLERANCE):
                return False
    return True


@pytest.mark.parametrize("kind,count", [(kind, count) for kind in KINDS for count in COUNTS[kind]])
def test_a_sharded_index_answers_as_the_one_it_was_cut_from(kinds, queries, kind, count):
    source_path, cuts = kinds[kind]
    with Index.open(source_path) as source, ShardedIndex.open(cuts[count]) as sharded:
        assert len(sharded) == len(source)
        assert sharded.query_defaults == source.query_defaults
        for asked in ASKED:
            want = source.search_many(queries, 10, crop=12, **asked)
            got = sharded.search_many(queries, 10, crop=12, **asked)
            equal = [same_hits(a, b) for a, b in zip(want, got)]
            assert all(equal), f"{asked}: {sum(equal)} of {len(equal)} top-10s equal"
            assert all(len(a) == 10 for a in want), asked  # full pages: nothing passes by being empty
            for a, b in zip(want, got):
                assert (a.facets, a.facet_stats) == (b.facets, b.facet_stats), asked


def recall_at_10(found, exact) -> float:
    return float(np.mean([len({h.id for h in f} & {h.id for h in e}) / len(e) for f, e in zip(found, exact)]))


def test_hnsw_shards_are_as_near_exact_search_as_the_source(kinds, queries):
    flat, _ = kinds["flat"]
    source_path, cuts = kinds["hnsw"]
    with Index.open(flat) as exact_index, Index.open(source_path) as source:
        vectors = source.encode(queries)
        exact = exact_index.search_vectors(vectors, 10, per_document=0)
        baseline = recall_at_10(source.search_vectors(vectors, 10, per_document=0), exact)
    for count, path in cuts.items():
        with ShardedIndex.open(path) as sharded:
            recall = recall_at_10(sharded.search_vectors(vectors, 10, per_document=0), exact)
        assert recall >= baseline, (count, recall, baseline)


def merged_by_score(results, k=10):
    """The naive merge: each shard's own answer, pooled and sorted by score."""
    pooled = [hit for shard in results for hit in shard]
    return sorted(pooled, key=lambda hit: -hit.score)[:k]


def test_the_wrong_designs_give_other_answers(kinds, queries):
    """Per-shard bm25 statistics and per-shard min-max normalisation, each shard an ordinary index searched
    alone and the answers merged by score: the test of exactness above would catch either."""
    source_path, cuts = kinds["flat"]
    shards = sorted(p for p in cuts[3].iterdir() if p.is_dir())
    with Index.open(source_path) as source:
        alpha = source.query_defaults.alpha
        checks = {"keyword": {"mode": "keyword"}, "hybrid": {"mode": "hybrid", "alpha": alpha}}
        for name, asked in checks.items():
            want = source.search_many(queries, 10, **asked)
            opened = [Index.open(path) for path in shards]
            try:
                each = [shard.search_many(queries, 10, **asked) for shard in opened]
            finally:
                for shard in opened:
                    shard.close()
            naive = [merged_by_score([answers[n] for answers in each]) for n in range(len(queries))]
            agree = sum([h.id for h in a] == [h.id for h in b] for a, b in zip(want, naive))
            assert agree < len(queries) // 2, (name, agree)
            ranked = [[h.id for h in a] == [h.id for h in b] for a, b in zip(want, naive)]
            assert not all(ranked) and not all(same_hits(a, b) for a, b in zip(want, naive)), name


def test_each_shard_is_an_ordinary_index(kinds, tmp_path):
    source_path, cuts = kinds["ivf"]
    manifest = json.loads((cuts[3] / "shards.json").read_text())
    assert [entry["name"] for entry in manifest["shards"]] == ["shard-000", "shard-001", "shard-002"]
    held: list[set[str]] = []
    with Index.open(source_path) as source:
        total = len(source)
        structure = source.state.index_structure
    for entry in manifest["shards"]:
        path = cuts[3] / entry["name"]
        assert command_here("check", "--index", path).returncode == 0
        info = command_here("info", "--index", path, "--json")
        assert info.returncode == 0, info.stderr
        assert json.loads(info.stdout)["generation"] == entry["generation"]
        assert command_here("backup", tmp_path / entry["name"], "--index", path, "--quiet").returncode == 0
        with Index.open(path) as shard:
            assert len(shard) == entry["documents"]
            assert shard.state.index_structure.split()[0] == structure.split()[0]  # the source's lists
            held.append({hit.id for hit in shard.search("cells", 50, mode="keyword")})
    assert sum(entry["documents"] for entry in manifest["shards"]) == total
    assert all(held) and sum(map(len, held)) == len(set().union(*held))  # each document in one shard


@pytest.mark.parametrize(
    "arguments, message",
    [
        (["--shards", "0"], "--shards must be a whole number of at least 1"),
        (["--shards", "100000"], "at most that many shards"),
        (["--shards", "2", "--out", "{existing}"], "already exists"),
        (["--shards", "2", "--index", "{missing}"], "does not exist"),
    ],
)
def test_bad_input_is_one_line(kinds, tmp_path, arguments, message):
    source_path, _ = kinds["flat"]
    values = {"existing": str(tmp_path), "missing": str(tmp_path / "nothing")}
    arguments = [argument.format(**values) for argument in arguments]
    base = ["--index", str(source_path), "--out", str(tmp_path / "cut")]
    result = command_here("shard", *base, *arguments)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
    assert "Traceback" not in result.stderr and len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_on_a_local_cluster_the_answers_are_the_same_and_a_lost_worker_comes_back(kinds, queries):
    pytest.importorskip("distributed")
    source_path, cuts = kinds["flat-sq8"]
    queries = queries[:8]
    with Index.open(source_path) as source, ShardedIndex.open(cuts[3], cluster=2) as sharded:
        want = source.search_many(queries, 10, mode="hybrid", crop=12)
        assert all(map(same_hits, want, sharded.search_many(queries, 10, mode="hybrid", crop=12)))
        shards = sharded.describe_shards()
        assert [shard["name"] for shard in shards] == ["shard-000", "shard-001", "shard-002"]
        pids = {shard["pid"] for shard in shards}
        assert len(pids) == 2 and os.getpid() not in pids
        assert all(shard["worker"].startswith("tcp://127.0.0.1:") for shard in shards)
        os.kill(shards[0]["pid"], signal.SIGKILL)
        started = time.monotonic()
        answered = sharded.search_many(queries, 10, mode="hybrid", crop=12)
        assert all(map(same_hits, want, answered))
        assert time.monotonic() - started < 60
        assert shards[0]["pid"] not in {shard["pid"] for shard in sharded.describe_shards()}


def test_serve_shards_answers_as_serve_index(kinds, queries):
    """`semsearch serve --shards DIR`: a real server process, its /search the source index's answer."""
    import re
    import subprocess
    import sys
    import threading

    import httpx

    source_path, cuts = kinds["flat"]
    command = [sys.executable, "-m", "semsearch", "serve", "--shards", str(cuts[3]), "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        line = process.stderr.readline()
        found = re.search(r"serving (http://127\.0\.0\.1:\d+)/", line)
        assert found, line + process.stderr.read()
        threading.Thread(target=process.stderr.read, daemon=True).start()
        with Index.open(source_path) as source, httpx.Client(base_url=found[1], timeout=60) as client:
            for q in queries[:5]:
                params = [("q", q), ("mode", "hybrid"), ("where", "kind=even"), ("facets", "year")]
                body = client.get("/search", params=params).json()
                want = source.search(q, mode="hybrid", where=["kind=even"], facets="year")
                assert [h["id"] for h in body["hits"]] == [h.id for h in want]
                assert [h["score"] for h in body["hits"]] == pytest.approx([h.score for h in want], abs=1e-5)
                assert body["facets"] == want.facets
            batch = client.post("/search/batch", json={"queries": queries[:3], "mode": "keyword"}).json()
            assert [[h["id"] for h in r["hits"]] for r in batch["results"]] == [
                [h.id for h in hits] for hits in source.search_many(queries[:3], mode="keyword")
            ]
            shards = client.get("/shards").json()
            assert [s["name"] for s in shards["shards"]] == ["shard-000", "shard-001", "shard-002"]
            assert all(s["pid"] == process.pid and s["generation"] >= 1 for s in shards["shards"])
            bad = client.get("/search", params={"q": "x", "k": "0"})
            assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_parameter"
    finally:
        process.terminate()
        process.wait(30)
