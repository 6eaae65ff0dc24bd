"""One server of several indexes and scoped keys under load: `semsearch serve --index A --index B --index C
--keys FILE` (a real process on 127.0.0.1), N keep-alive clients sending GET /indexes/{name}/search back to back,
each with one of the keys; written to benchmarks/results/tenants-load.md and tenants-load.json.

    python -m benchmarks tenants_load [--documents 1500] [--clients 64] [--seconds 30] [--max-requests 100000]

The indexes: SciFact's first `--documents` documents, a tenant each in turn among three (tests/tenantfuzz.py),
ingested as three indexes (a, b, c) with the defaults. The keys: six, two an index, each scoped to one tenant
(`where: tenant=NAME`). Client n uses key n mod 6 on its index, a query of tenantfuzz's WORDS in turn. Per index:
requests, p50, p99, errors (an answer but 200, or a broken connection) and answers holding a hit of another
tenant (each hit's metadata read)."""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote

from benchmarks.serve_load import Connection, percentile
from benchmarks.suite import DATA, OUT, REPO, command_line, current_commit, markdown_table, require

sys.path.insert(0, str(REPO / "tests"))

from tenantfuzz import TENANTS, WORDS, tenant_corpus  # noqa: E402

CLAIM = "Several indexes and scoped keys under load: 64 clients, 3 indexes, 6 keys, p50 and p99 per index, 0 errors"
SCIFACT = DATA / "scifact" / "corpus.jsonl"
INDEXES = ("a", "b", "c")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--documents", type=int, default=1500)
    parser.add_argument("--clients", type=int, default=64)
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--max-requests", type=int, default=100_000)


def scoped_keys() -> list[dict]:
    """Six keys, two an index, each confined to one tenant of it."""
    return [
        {
            "key": f"key-{index}-{tenant}-0123456789",
            "name": f"{index}-{tenant}",
            "indexes": [index],
            "where": [f"tenant={tenant}"],
            "tenant": tenant,
        }  # fmt: skip
        for n, index in enumerate(INDEXES)
        for tenant in (TENANTS[n % 3], TENANTS[(n + 1) % 3])
    ]


async def load(port: int, keys: list[dict], clients: int, seconds: float, limit: int) -> dict:
    by_index: dict[str, dict] = {name: {"latencies": [], "errors": 0, "leaks": 0} for name in INDEXES}
    deadline, sent = time.monotonic() + seconds, 0

    async def client(number: int) -> None:
        nonlocal sent
        key = keys[number % len(keys)]
        index, figures = key["indexes"][0], by_index[key["indexes"][0]]
        connection, i = Connection(port), number
        headers = f"Authorization: Bearer {key['key']}\r\n"
        while time.monotonic() < deadline and sent < limit:
            i += 1
            sent += 1
            path = f"/indexes/{index}/search?q={quote(WORDS[i % len(WORDS)])}&k=10"
            started = time.perf_counter()
            try:
                status, body = await connection.request("GET", path, headers=headers)
            except Exception:
                status, body = 0, b""
            if status != 200:
                figures["errors"] += 1
                continue
            figures["latencies"].append(time.perf_counter() - started)
            hits = json.loads(body)["hits"]
            figures["leaks"] += any(hit["metadata"].get("tenant") != key["tenant"] for hit in hits)
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    elapsed = time.monotonic() - started
    return {
        name: {
            "index": name,
            "requests": len(f["latencies"]) + f["errors"],
            "requests_per_s": round(len(f["latencies"]) / elapsed, 1),
            "p50_ms": round(1000 * percentile(f["latencies"], 0.5), 2),
            "p99_ms": round(1000 * percentile(f["latencies"], 0.99), 2),
            "errors": f["errors"],
            "answers_with_another_tenant": f["leaks"],
        }
        for name, f in by_index.items()
    }


def run(args: argparse.Namespace) -> None:
    require(SCIFACT, "SciFact")
    from semsearch import Index

    with tempfile.TemporaryDirectory(prefix="semsearch-tenants-load-") as work:
        root = Path(work)
        corpus = tenant_corpus(SCIFACT, root / "corpus.jsonl", args.documents)
        for name in INDEXES:
            with Index.create(root / name) as index:
                index.ingest(corpus)
        keys = scoped_keys()
        (root / "keys.json").write_text(
            json.dumps({"keys": [{k: v for k, v in key.items() if k != "tenant"} for key in keys]})
        )
        command = [
            sys.executable,
            "-m",
            "semsearch",
            "serve",
            "--port",
            "0",
            "--keys",
            str(root / "keys.json"),
        ]
        command += [arg for name in INDEXES for arg in ("--index", str(root / name))]
        server = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, env=os.environ)
        try:
            line = server.stderr.readline()
            port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line)[1])
            load_at = os.getloadavg()[0]
            rows = list(asyncio.run(load(port, keys, args.clients, args.seconds, args.max_requests)).values())
        finally:
            server.terminate()
            server.wait(timeout=30)
    lines = [
        "# Several indexes and scoped keys under load",
        "",
        f"`{command_line()}` (commit {current_commit()}, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; "
        f"2 shared cores, 1-minute load {load_at:.1f} before)",
        "",
        f"`semsearch serve` of 3 indexes ({args.documents} SciFact documents each, three tenants) with 6 keys, two "
        f"an index, each scoped to one tenant; {args.clients} keep-alive clients for {args.seconds:g} s, each "
        "with one key, GET /indexes/{name}/search?q=...&k=10 back to back.",
        "",
        *markdown_table(rows),
        "",
    ]
    (OUT / "tenants-load.md").write_text("\n".join(lines))
    (OUT / "tenants-load.json").write_text(
        json.dumps({"command": command_line(), "rows": rows}, indent=1) + "\n"
    )
    print("\n".join(lines))
