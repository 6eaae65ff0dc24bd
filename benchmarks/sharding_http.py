"""Sharded search through HTTP: `semsearch serve --index SRC` against `semsearch serve --shards DIR` (shards in
its process) and `serve --shards DIR --local-cluster N` (shards on a local Dask cluster), real server processes,
a hybrid GET /search one at a time, alternated query by query. Writes benchmarks/results/sharding-http.md.

    python -m benchmarks sharding_http --index SRC --shards DIR [--workers 3] [--queries 200]
        [--wordnet DIR]

The p50 and p95 of a hybrid query's round trip (the server encodes the query; the client reuses one connection),
each server warmed by 20 queries first; the sharded servers' p50 as a multiple of the one index's (the target:
at most 3x with 3 shards), and the scatter's own cost: the cluster's p50 less the in-process shards'. Queries:
WordNet glosses' titles and texts, drawn with a seed.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import numpy as np

from benchmarks.suite import DATA, REPO, current_commit, markdown_table, results_header

CLAIM = (
    "Sharded search through HTTP: a hybrid query's p50 on shards (in process, on Dask) against the one index"
)
WARM = 20


def started(arguments: list[str]) -> tuple[subprocess.Popen, str]:
    command = [sys.executable, "-m", "semsearch", "serve", "--port", "0", *arguments]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    while True:
        line = process.stderr.readline()
        if not line:
            raise SystemExit(f"{' '.join(command)} did not start")
        if found := re.search(r"serving (http://127\.0\.0\.1:\d+)/", line):
            threading.Thread(target=process.stderr.read, daemon=True).start()
            return process, found[1]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--shards", type=Path, required=True)
    parser.add_argument("--workers", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--wordnet", type=Path, default=DATA / "wordnet")
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "results")


def run(args: argparse.Namespace) -> None:
    docs = [json.loads(line) for _, line in zip(range(20_000), (args.wordnet / "corpus.jsonl").open())]
    drawn = random.Random(11).sample(docs, args.queries + WARM)
    texts = [doc["title"] if n % 2 else doc["text"] for n, doc in enumerate(drawn)]
    servers = {
        "serve --index": ["--index", str(args.index)],
        "serve --shards (in process)": ["--shards", str(args.shards)],
        f"serve --shards --local-cluster {args.workers}": [
            "--shards",
            str(args.shards),
            "--local-cluster",
            str(args.workers),
        ],
    }
    running = {name: started(arguments) for name, arguments in servers.items()}
    times: dict[str, list[float]] = {name: [] for name in servers}
    try:
        clients = {name: httpx.Client(base_url=url, timeout=120) for name, (_, url) in running.items()}
        for n, text in enumerate(texts):
            for name, client in clients.items():
                begun = time.perf_counter()
                response = client.get("/search", params={"q": text, "mode": "hybrid", "k": 10})
                took = (time.perf_counter() - begun) * 1000
                assert response.status_code == 200, response.text
                if n >= WARM:
                    times[name].append(took)
        answers = {name: client.get("/shards").json() for name, client in clients.items() if "shards" in name}
    finally:
        for process, _ in running.values():
            process.terminate()
            process.wait(60)
    rows = [
        {
            "server": name,
            "p50_ms": round(statistics.median(t), 2),
            "p95_ms": round(float(np.percentile(t, 95)), 2),
        }
        for name, t in times.items()
    ]
    one = rows[0]["p50_ms"]
    for row in rows:
        row["x one index"] = round(row["p50_ms"] / one, 2)
    shards = len(next(iter(answers.values()))["shards"])
    lines = results_header(
        "Sharded search through HTTP",
        f"{shards} shards, {args.queries} queries, commit {current_commit()}",
        __doc__,
    )
    lines += markdown_table(rows)
    scatter = rows[2]["p50_ms"] - rows[1]["p50_ms"]
    lines += [f"The scatter's own cost (cluster less in process, p50): {scatter:.1f} ms a query.", ""]
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "sharding-http.md").write_text("\n".join(lines))
    print("\n".join(lines))
