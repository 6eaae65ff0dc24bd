"""Tenant isolation fuzzed at length, and what a scope costs a search; written to benchmarks/results/tenants.md
and tenants.json.

    python -m benchmarks tenants [--documents 1500] [--requests 20000] [--queries 200] [--rounds 3]

The index: SciFact's first `--documents` documents (the first 400 characters of each abstract), a tenant each in
turn among three (tests/tenantfuzz.py), built once in a temporary directory. The app (`create_app`, in this
process through starlette's TestClient: no socket, every route and the MCP endpoint as served) runs with a keys
file of a key per tenant scoped by `tenant=NAME` (two may write) and an admin key.

- isolation: `--requests` hostile requests of tests/tenantfuzz.py's generator (seed 0), each checked against
  the owners read from the JSONL: the faults found (holding, counting or confirming another tenant's document)
  by kind, and the answers by status;
- cost of a scope: the same `--queries` GET /search queries (k=10) in each mode sent by the acme key (its scope
  `tenant=acme` ANDed in by the server) and by the admin key with `where=tenant=acme` given by hand, interleaved
  query by query; p50 and p99 of each side per round, the ratio of p50s within each round (target 1.2x)."""

from __future__ import annotations

import argparse
import json
import os
import shlex
import statistics
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from benchmarks.suite import DATA, OUT, REPO, require

sys.path.insert(0, str(REPO / "tests"))

from tenantfuzz import ADMIN, INDEX, KEYS, MODES, WORDS, Fuzzer, bearer, keys_file, owners_of, tenant_corpus  # noqa: E402

CLAIM = "Tenant isolation fuzzed (no answer holds, counts or confirms another tenant's document) and a scope's cost"
SCIFACT = DATA / "scifact" / "corpus.jsonl"
TARGET = 1.2


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def timed(client, params: dict, headers: dict) -> float:
    started = time.perf_counter()
    response = client.get("/search", params=params, headers=headers)
    took = (time.perf_counter() - started) * 1000
    assert response.status_code == 200, response.text
    return took


def scope_cost(client, queries: list[str], rounds: int) -> list[dict]:
    rows = []
    for mode in MODES:
        for n in range(1, rounds + 1):
            scoped, by_hand = [], []
            for q in queries:
                params = {"q": q, "k": 10, "mode": mode}
                scoped.append(timed(client, params, bearer(KEYS["acme"])))
                by_hand.append(timed(client, {**params, "where": "tenant=acme"}, bearer(ADMIN)))
            rows.append(
                {
                    "mode": mode,
                    "round": n,
                    "scoped_p50": statistics.median(scoped),
                    "scoped_p99": percentile(scoped, 0.99),
                    "by_hand_p50": statistics.median(by_hand),
                    "by_hand_p99": percentile(by_hand, 0.99),
                    "ratio": statistics.median(scoped) / statistics.median(by_hand),
                }
            )
            print(json.dumps(rows[-1]), flush=True)
    return rows


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--requests", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)


def run(args: argparse.Namespace) -> None:
    require(SCIFACT, "SciFact")
    from starlette.testclient import TestClient

    from semsearch import Index
    from semsearch.server import ServerSettings, create_app

    with tempfile.TemporaryDirectory(prefix="semsearch-tenants-") as work:
        root = Path(work)
        corpus = tenant_corpus(SCIFACT, root / "corpus.jsonl", args.documents)
        started = time.perf_counter()
        with Index.create(root / INDEX) as index:
            index.ingest(corpus)
        built = time.perf_counter() - started
        settings = ServerSettings(keys_file=str(keys_file(root / "keys.json")))
        with TestClient(create_app({INDEX: partial(Index.open, root / INDEX)}, settings)) as client:
            fuzzer = Fuzzer(client, owners_of(corpus), seed=0)
            started = time.perf_counter()
            faults = fuzzer.run(args.requests)
            fuzzed = time.perf_counter() - started
            print(f"{faults.requests} requests in {fuzzed:.0f} s: {len(faults.found)} faults", flush=True)
            words = [
                *WORDS,
                *(
                    w
                    for line in corpus.read_text().splitlines()[:300]
                    for w in json.loads(line)["text"].split()[:2]
                ),
            ]
            queries = [words[n % len(words)] for n in range(args.queries)]
            rows = scope_cost(client, queries, args.rounds)
    write(args, faults, fuzzer, fuzzed, built, rows)


def write(args, faults, fuzzer, fuzzed: float, built: float, rows: list[dict]) -> None:
    command = "python -m benchmarks tenants " + shlex.join(
        [
            "--documents",
            str(args.documents),
            "--requests",
            str(args.requests),
            "--queries",
            str(args.queries),
            "--rounds",
            str(args.rounds),
        ]
    )
    load = os.getloadavg()[0]
    kinds: dict[str, int] = {}
    for line in faults.found:
        kinds[line.split()[0]] = kinds.get(line.split()[0], 0) + 1
    lines = [
        "# Tenant isolation fuzzed, and the cost of a scope",
        "",
        f"`{command}`",
        "",
        f"{args.documents:,} SciFact documents (an abstract's first 400 characters each), three tenants in turn by a "
        f"`tenant` field, one index (built in {built:.0f} s); a key per tenant scoped by `tenant=NAME` (globex and "
        "initech may write), an admin key; the app in process (starlette TestClient, every route and /mcp as served).",
        "",
        "## Isolation",
        "",
        f"{faults.requests:,} requests ({args.requests:,} generated by tests/tenantfuzz.py with seed 0, and for each "
        "naming another tenant's id a twin naming an absent id) in "
        f"{fuzzed:.0f} s; each answer checked against the owners read from the JSONL (and followed through the "
        f"generator's {fuzzer.written} adds): **{len(faults.found)} faults** "
        f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items())) or 'none'}).",
        "",
        "| status | answers |",
        "|---|---|",
        *(f"| {status} | {n:,} |" for status, n in sorted(faults.statuses.items())),
        "",
        "## A scoped search against the same filter given by hand",
        "",
        f"{args.queries} GET /search queries (k=10) per mode and round, each sent by the acme key (scope ANDed in by "
        "the server) and by the admin key with `where=tenant=acme`, interleaved. Target: scoped p50 within "
        f"{TARGET}x.",
        "",
        "| mode | round | scoped p50 ms | p99 ms | by hand p50 ms | p99 ms | ratio |",
        "|---|---|---|---|---|---|---|",
        *(
            f"| {r['mode']} | {r['round']} | {r['scoped_p50']:.2f} | {r['scoped_p99']:.2f} | {r['by_hand_p50']:.2f} "
            f"| {r['by_hand_p99']:.2f} | {r['ratio']:.3f} |"
            for r in rows
        ),
        "",
    ]
    for mode in MODES:
        ratios = [r["ratio"] for r in rows if r["mode"] == mode]
        lines.append(
            f"- {mode}: median ratio {statistics.median(ratios):.3f}x (target {TARGET}x: "
            f"{'met' if statistics.median(ratios) <= TARGET else 'missed'})"
        )
    lines += [
        "",
        f"Measured with the machine's 1-minute load average at {load:.1f} on its {os.cpu_count()} cores.",
    ]
    (OUT / "tenants.md").write_text("\n".join(lines) + "\n")
    record = {
        "command": command,
        "requests": faults.requests,
        "faults": faults.found,
        "statuses": faults.statuses,
        "rows": rows,
    }
    (OUT / "tenants.json").write_text(json.dumps(record, indent=1) + "\n")
