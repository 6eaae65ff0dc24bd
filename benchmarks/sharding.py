"""Sharded search against the one index it was cut from: WordNet glosses (the real model, real FAISS) as each
index kind, cut into shards by `semsearch shard`, every query's top 10 compared, and a query's latency one at a
time: the one index, the shards in this process, the shards on a local Dask cluster. Writes
benchmarks/results/sharding.md and sharding.json.

    python -m benchmarks sharding [--wordnet DIR] [--docs 117791] [--shards 5] [--queries 200]
        [--kinds flat,flat-sq8,ivf,pq,hnsw] [--workers 3] [--work DIR]

Each kind's share of top-10s equal to the source's (ids, order, passages, scores within 1e-5) in dense,
keyword and hybrid, with a filter (pos=noun), page 2, facets (pos) and rerank; for hnsw, whose graph is built
per shard, recall@10 of the source and of the shards against exact search (flat). Latency: the p50 and p95 of
a hybrid query (vectors encoded beforehand, so only the search is timed) on the one index, on the shards in
this process and on the cluster, alternated query by query; the scatter's own cost is the cluster's p50 less
the in-process shards'. Queries: glosses' titles (a few words each) and texts (a sentence), drawn with a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import DATA, REPO, current_commit, markdown_table, require, results_header
from semsearch import Index
from semsearch.operations.sharding import cut
from semsearch.sharded import ShardedIndex

CLAIM = "An index cut into shards answers as the one index: equal top-10s per kind and mode, and a query's latency"


TOLERANCE = 1e-5
ASKED = {
    "dense": {"mode": "dense"},
    "keyword": {"mode": "keyword"},
    "hybrid": {"mode": "hybrid"},
    "hybrid, pos=noun": {"mode": "hybrid", "where": ["pos=noun"]},
    "hybrid, page 2": {"mode": "hybrid", "offset": 10},
    "hybrid, facets pos": {"mode": "hybrid", "facets": "pos"},
    "dense, rerank 50": {"mode": "dense", "rerank": 50},
}


def same_hits(one, other) -> bool:
    if [(h.id, h.row, h.passage) for h in one] != [(h.id, h.row, h.passage) for h in other]:
        return False
    if getattr(one, "facets", None) != getattr(other, "facets", None):
        return False
    return all(abs(a.score - b.score) <= TOLERANCE for a, b in zip(one, other))


def recall(found, exact) -> float:
    return float(
        np.mean([len({h.id for h in f} & {h.id for h in e}) / max(len(e), 1) for f, e in zip(found, exact)])
    )


def timed(search, vectors, texts) -> list[float]:
    out = []
    for vector, text in zip(vectors, texts):
        started = time.perf_counter()
        search(vector, text)
        out.append((time.perf_counter() - started) * 1000)
    return out


def latency(indexes: dict, vectors: np.ndarray, texts: list[str]) -> dict[str, dict[str, float]]:
    """Each index's hybrid query times (ms), alternated query by query so that load falls on all alike."""
    times: dict[str, list[float]] = {name: [] for name in indexes}
    for vector, text in zip(vectors, texts):
        for name, index in indexes.items():
            times[name] += timed(
                lambda v, t, index=index: index.search_vectors(v[None], 10, texts=[t], mode="hybrid"),
                [vector],
                [text],
            )
    return {
        name: {"p50_ms": round(statistics.median(t), 2), "p95_ms": round(float(np.percentile(t, 95)), 2)}
        for name, t in times.items()
    }


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wordnet", type=Path, default=DATA / "wordnet")
    parser.add_argument("--docs", type=int, default=117_791)
    parser.add_argument("--shards", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--kinds", default="flat,flat-sq8,ivf,pq,hnsw")
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--work", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")


def run(args: argparse.Namespace) -> None:
    corpus = require(args.wordnet / "corpus.jsonl", "WordNet")
    work = args.work or Path(tempfile.mkdtemp(prefix="sharding-"))
    work.mkdir(parents=True, exist_ok=True)
    docs = [json.loads(line) for _, line in zip(range(args.docs), corpus.open())]
    (work / "corpus.jsonl").write_text("".join(json.dumps(doc) + "\n" for doc in docs))
    drawn = random.Random(7).sample(docs, args.queries)
    texts = [doc["title"] if n % 2 else doc["text"] for n, doc in enumerate(drawn)]

    base = work / "source"
    started = time.perf_counter()
    if not (base / "manifest.json").exists():
        shutil.rmtree(base, ignore_errors=True)
        with Index.create(base) as index:
            index.ingest(work / "corpus.jsonl")
    ingest_seconds = time.perf_counter() - started  # ~0: the work directory's source reused
    with Index.open(base) as index:
        vectors = index.encode(texts)

    rows, latencies, exact = [], {}, None
    kinds = args.kinds.split(",")
    for kind in sorted(kinds, key=lambda kind: kind != "flat"):  # flat first: hnsw's exact answers
        source = work / kind
        if not source.exists():
            shutil.copytree(base, source)
            with Index.open(source) as index:
                index.refit(index_type=kind, calibrate=False)
        out = work / f"{kind}-{args.shards}"
        shutil.rmtree(out, ignore_errors=True)
        started = time.perf_counter()
        cut(source, args.shards, out, 60.0)
        cut_seconds = time.perf_counter() - started
        with Index.open(source) as one, ShardedIndex.open(out) as sharded:
            row = {"kind": kind, "structure": one.state.index_structure, "cut_s": round(cut_seconds, 1)}
            if kind == "flat":
                exact = one.search_vectors(vectors, 10, per_document=0)
            if kind == "hnsw":
                row["recall@10 source"] = round(
                    recall(one.search_vectors(vectors, 10, per_document=0), exact), 4
                )
                found = sharded.search_vectors(vectors, 10, per_document=0)
                row["recall@10 shards"] = round(recall(found, exact), 4)
            else:
                for name, asked in ASKED.items():
                    want = one.search_vectors(vectors, 10, texts=texts, **asked)
                    got = sharded.search_vectors(vectors, 10, texts=texts, **asked)
                    row[name] = f"{sum(map(same_hits, want, got))}/{len(texts)}"
            rows.append(row)
            print(row, flush=True)
            if kind == "flat-sq8" or kind == kinds[0]:
                with ShardedIndex.open(out, cluster=args.workers) as clustered:
                    indexes = {"one index": one, "shards in process": sharded, "shards on Dask": clustered}
                    latencies = {"kind": kind, **latency(indexes, vectors, texts)}
    lines = results_header(
        "Sharded search",
        f"{args.docs:,} WordNet glosses, {args.shards} shards, {args.queries} queries, commit {current_commit()}",
        __doc__,
    )
    lines += ["## Exactness", "", *markdown_table(rows)]
    lines += ["## Hybrid latency, one query at a time", ""]
    lines += markdown_table(
        [{"searched": name, **figures} for name, figures in latencies.items() if name != "kind"]
    )
    one_p50 = latencies["one index"]["p50_ms"]
    local, dask = latencies["shards in process"]["p50_ms"], latencies["shards on Dask"]["p50_ms"]
    lines += [
        f"Kind {latencies['kind']}. Sharded on Dask at "
        f"{dask / one_p50:.2f}x the one index's p50; the scatter's own cost (Dask less in-process) "
        f"{dask - local:.1f} ms a query.",
        "",
    ]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sharding.md").write_text("\n".join(lines))
    (args.out / "sharding.json").write_text(
        json.dumps({"rows": rows, "latency": latencies, "ingest_seconds": ingest_seconds}, indent=2) + "\n"
    )
    print("\n".join(lines))
