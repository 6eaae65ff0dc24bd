"""`semsearch serve` under load, on loopback only, bounded in time and in requests:

    python -m benchmarks serve_load serve [--index DIR] [--wordnet DIR] [--clients 1,4,16,64]
                                              [--seconds 30] [--max-requests 200000] [--starts 3]

- in process: warm `Index.search` p50 / p99 on the same queries, beside GET /search at 1 client;
- cold start: `semsearch serve` from exec to listening, to the first /health and the first /search answer;
- read: N keep-alive clients (1, 4, 16, 64) sending GET /search for `--seconds` each: requests/s, p50, p99,
  errors (any answer but 200, or a broken connection);
- write: the same while another process upserts batches of documents into the index (Index.add with
  `wait`): every answer still 200; a probe reads the written documents throughout and checks each is wholly
  one revision (text and metadata agree) and never older than one seen before; at the end every write is
  there (0 lost), then the documents written are deleted (DELETE /documents?where=...), leaving the index
  as it was.

The index is the 117,791 WordNet glosses with the defaults (built with `semsearch ingest` if absent; skipped
with a message where ../shared/data/wordnet is missing). Writes benchmarks/results/serve.md and serve.json.

Part `mcp`: An MCP `search` call's latency over stdio against a warm `Index.search` (the target: at most 2x its p50
plus 5 ms), on all 117,791 WordNet glosses; written to benchmarks/results/mcp.md and mcp.json.

    python -m benchmarks serve_load mcp [--index DIR] [--wordnet DIR] [--queries 200] [--rounds 3]

Each round measures, one after the other on the same queries: `Index.search(text, k=10)` warm in this process,
and the `search` tool (k=10) called by the SDK's own client (stdio_client, ClientSession) on a `semsearch mcp`
process started once and warmed with 50 calls. The figures are medians over the rounds of each side's p50
and p99; the ratio is taken within each round (timings swing 2x here with the machine's load).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.suite import OUT, REPO, Rows, command_line

CLAIM = "`semsearch serve` under load (cold start, read, write) and an MCP call's latency, against warm Index.search"

SEMSEARCH = [sys.executable, "-m", "semsearch"]
KEY = "serve-load-benchmark-key"
PREFIX = "serve-load-"  # ids of the documents the write phase adds, then deletes


# ---- a small HTTP/1.1 keep-alive client (asyncio streams: cheap enough not to be what is measured) ---------


class Connection:
    def __init__(self, port: int):
        self.port, self.reader, self.writer = port, None, None

    async def request(
        self, method: str, path: str, body: bytes = b"", headers: str = ""
    ) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
        head = f"{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: {len(body)}\r\n{headers}\r\n"
        self.writer.write(head.encode() + body)
        try:
            raw = await self.reader.readuntil(b"\r\n\r\n")
            length = int(re.search(rb"(?i)content-length: *(\d+)", raw)[1])
            return int(raw.split(b" ", 2)[1]), await self.reader.readexactly(length)
        except Exception:
            self.close()
            raise

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else float("nan")


def summary(latencies: list[float], errors: int, seconds: float) -> dict:
    return {
        "requests": len(latencies) + errors,
        "requests_per_s": round(len(latencies) / seconds, 1),
        "p50_ms": round(1000 * percentile(latencies, 0.5), 2),
        "p99_ms": round(1000 * percentile(latencies, 0.99), 2),
        "errors": errors,
        "seconds": round(seconds, 1),
    }


async def load(port: int, clients: int, seconds: float, limit: int, paths: list[str]) -> dict:
    """`clients` connections each sending GET requests back to back until `seconds` or `limit` requests."""
    latencies: list[float] = []
    errors = 0
    deadline = time.monotonic() + seconds

    async def client(number: int) -> None:
        nonlocal errors
        connection, i = Connection(port), number * 7919
        while time.monotonic() < deadline and len(latencies) + errors < limit:
            i += 1
            started = time.perf_counter()
            try:
                status, _ = await connection.request("GET", paths[i % len(paths)])
            except Exception:
                status = 0
            if status == 200:
                latencies.append(time.perf_counter() - started)
            else:
                errors += 1
        connection.close()

    started = time.monotonic()
    await asyncio.gather(*(client(n) for n in range(clients)))
    return summary(latencies, errors, time.monotonic() - started)


# ---- the write phase: another process upserts, a probe checks what readers see ------------------------------

WRITER = """
import json, sys, time
from semsearch import Index
path, seconds, docs = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
deadline = time.monotonic() + seconds
with Index.open(path, wait=60) as index:
    revision = 0
    while revision == 0 or time.monotonic() < deadline:
        batch = [{"id": f"PREFIX{n}", "title": f"serve load {n}", "text": f"revision {revision} of load document {n}",
                  "serve_load": True, "revision": revision} for n in range(docs)]
        started = time.perf_counter()
        report = index.add(batch)
        print(json.dumps({"revision": revision, "seconds": time.perf_counter() - started,
                          "added": report.added, "replaced": report.replaced}), flush=True)
        revision += 1
""".replace("PREFIX", PREFIX)


async def probe(port: int, docs: int, stop: asyncio.Event) -> dict:
    """Reads the written documents until `stop`: each must be one revision throughout (text and metadata
    agree) and never older than the last seen of it."""
    connection, seen, reads, mixed, older = Connection(port), {}, 0, 0, 0
    while not stop.is_set():
        for n in range(docs):
            status, body = await connection.request("GET", f"/documents/{PREFIX}{n}")
            if status == 404:
                continue  # not written yet
            document = json.loads(body)["document"]
            revision = document["metadata"]["revision"]
            reads += 1
            mixed += document["text"] != f"revision {revision} of load document {n}"
            older += revision < seen.get(n, -1)
            seen[n] = revision
        await asyncio.sleep(0.2)  # a reader among the others, not a load of its own
    connection.close()
    return {"probe_reads": reads, "mixed_states": mixed, "went_back": older}


async def load_during_writes(args, port: int, clients: int, paths: list[str]) -> dict:
    writer = await asyncio.create_subprocess_exec(
        sys.executable, "-c", WRITER, str(args.index), str(args.seconds), str(args.write_docs),
        stdout=subprocess.PIPE, stderr=subprocess.PIPE,
    )  # fmt: skip
    stop = asyncio.Event()
    checking = asyncio.create_task(probe(port, args.write_docs, stop))
    result = await load(port, clients, args.seconds, args.max_requests, paths)
    out, err = await writer.communicate()
    stop.set()
    result.update(await checking)
    if writer.returncode != 0:
        raise SystemExit(f"the writer failed:\n{err.decode()}")
    batches = [json.loads(line) for line in out.decode().splitlines()]
    result["write_batches"] = len(batches)
    result["write_seconds_median"] = round(statistics.median(b["seconds"] for b in batches), 2)
    # 0 lost writes: every document holds the last revision written, and the count is right
    last, lost = batches[-1]["revision"], 0
    connection = Connection(port)
    for n in range(args.write_docs):
        status, body = await connection.request("GET", f"/documents/{PREFIX}{n}")
        lost += status != 200 or json.loads(body)["document"]["metadata"]["revision"] != last
    status, body = await connection.request("GET", "/info")
    result["documents_after"] = json.loads(body)["documents"]
    status, body = await connection.request(
        "DELETE", "/documents?where=serve_load%3Dtrue", headers=f"Authorization: Bearer {KEY}\r\n"
    )
    result["deleted_after"] = json.loads(body).get("deleted")
    connection.close()
    result["lost_writes"] = lost
    return result


# ---- the steps ----------------------------------------------------------------------------------------------


def ensure_index(args) -> None:
    if (args.index / "manifest.json").exists():
        return
    corpus = args.wordnet / "corpus.jsonl"
    if not corpus.exists():
        print(
            f"skipped: no WordNet corpus at {corpus} (../shared/data/wordnet beside the repo)",
            file=sys.stderr,
        )
        raise SystemExit(0)
    print(f"building {args.index} from {corpus} (about 4 minutes here)", file=sys.stderr)
    subprocess.run([*SEMSEARCH, "ingest", str(corpus), "--index", str(args.index), "-q"], check=True)


def queries(wordnet: Path, count: int = 400) -> list[str]:
    docs = [json.loads(line) for line in (wordnet / "corpus.jsonl").open()][::250]
    return [(d["title"] if i % 2 else " ".join(d["text"].split()[:6])) for i, d in enumerate(docs)][:count]


def in_process(args, texts: list[str]) -> dict:
    from semsearch import Index

    with Index.open(args.index) as index:
        for text in texts[:50]:
            index.search(text)
        timings = []
        for text in texts * 2:
            started = time.perf_counter()
            index.search(text)
            timings.append(time.perf_counter() - started)
        mode = str(index.default_mode.value) if hasattr(index, "default_mode") else "dense"
    return {"queries": len(timings), "p50_ms": round(1000 * percentile(timings, 0.5), 2),
            "p99_ms": round(1000 * percentile(timings, 0.99), 2), "mode": mode}  # fmt: skip


def start_server(args, workers: int = 1) -> tuple[subprocess.Popen, int, dict]:
    """`semsearch serve` on a free port; the times to listening, first /health and first /search answer."""
    import http.client

    started = time.perf_counter()
    command = [*SEMSEARCH, "serve", "--index", str(args.index), "--port", "0", "--workers", str(workers)]
    process = subprocess.Popen(
        command, env={**os.environ, "SEMSEARCH_API_KEY": KEY}, stderr=subprocess.PIPE, text=True
    )
    line = process.stderr.readline()
    port = int(re.search(r"http://127\.0\.0\.1:(\d+)/", line)[1])
    times = {"listening_s": time.perf_counter() - started}
    for name, path in (("first_health_s", "/health"), ("first_search_s", "/search?q=a+large+cat")):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        connection.request("GET", path)
        assert connection.getresponse().status == 200
        times[name] = time.perf_counter() - started
    return process, port, {k: round(v, 3) for k, v in times.items()}


def phase(run, *args) -> dict:
    load_at = os.getloadavg()[0]
    figures = asyncio.run(run(*args))
    figures["load_average_1min_before"] = round(load_at, 2)
    return figures


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    process.wait(30)


def imports_torch(pid: int) -> bool:
    return "libtorch" in Path(f"/proc/{pid}/maps").read_text()


def serve_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, default=REPO / "indexes" / "bench" / "serve-wordnet")
    parser.add_argument("--wordnet", type=Path, default=REPO.parent / "shared" / "data" / "wordnet")
    parser.add_argument("--clients", default="1,4,16,64")
    parser.add_argument("--seconds", type=float, default=30.0, help="per number of clients, per phase")
    parser.add_argument("--max-requests", type=int, default=200_000, help="per phase, at most")
    parser.add_argument("--starts", type=int, default=3, help="cold starts measured (median)")
    parser.add_argument(
        "--workers", default="1,2", help="server processes: the read phase for each, writes with the last"
    )
    parser.add_argument("--write-docs", type=int, default=20, help="documents upserted per write batch")
    parser.add_argument("--out", type=Path, default=OUT / "serve")


def serve(config: argparse.Namespace) -> Rows:
    """semsearch serve under load: cold start, read and write clients (serve.md)."""
    ensure_index(config)
    texts = queries(config.wordnet)
    paths = [f"/search?q={'+'.join(t.split())}" for t in texts]
    result = {"command": command_line(), "load_before": os.getloadavg()}
    result["write_docs"] = config.write_docs
    result["in_process"] = in_process(config, texts)
    print("in process", result["in_process"], file=sys.stderr)

    starts = []
    for _ in range(config.starts):
        process, port, times = start_server(config)
        starts.append(times)
        stop(process)
    result["cold_start"] = {key: statistics.median(s[key] for s in starts) for key in starts[0]}
    result["cold_start"]["runs"] = starts
    print("cold start", result["cold_start"], file=sys.stderr)

    clients = [int(c) for c in config.clients.split(",")]
    for workers in [int(w) for w in config.workers.split(",")]:
        process, port, _ = start_server(config, workers)
        try:
            asyncio.run(load(port, 4, 3, 10_000, paths))  # warm every worker
            time.sleep(5)  # let the other workers finish starting
            result.setdefault("read", {})[workers] = runs = {}
            for n in clients:
                runs[n] = phase(load, port, n, config.seconds, config.max_requests, paths)
                print("read", workers, n, runs[n], file=sys.stderr)
            if workers == int(config.workers.split(",")[-1]):
                result["write_workers"], result["write"] = workers, {}
                for n in clients:
                    result["write"][n] = phase(load_during_writes, config, port, n, paths)
                    print("write", workers, n, result["write"][n], file=sys.stderr)
            result.setdefault("server_imported_torch", imports_torch(process.pid))
        finally:
            stop(process)
    result["load_after"] = os.getloadavg()
    config.out.with_suffix(".json").write_text(json.dumps(result, indent=2) + "\n")
    config.out.with_suffix(".md").write_text(report(result))
    print(f"wrote {config.out}.md and .json", file=sys.stderr)
    return result


def report(r: dict) -> str:
    read, write, cold, own = r["read"], r["write"], r["cold_start"], r["in_process"]
    first = read[min(read)]
    one, top = first[min(first)], max(first)
    rows = ["| processes | clients | phase | requests/s | p50 ms | p99 ms | errors | load avg before |",
            "|---|---|---|---|---|---|---|---|"]  # fmt: skip
    runs = [(w, "read", runs) for w, runs in read.items()] + [(r["write_workers"], "with writes", write)]
    for workers, phase, figures in runs:
        for clients, f in figures.items():
            rows.append(f"| {workers} | {clients} | {phase} | {f['requests_per_s']} | {f['p50_ms']} | {f['p99_ms']} | {f['errors']} | {f['load_average_1min_before']} |")  # fmt: skip
    writes = [f"- {c} clients: {f['write_batches']} batches of upserts (median {f['write_seconds_median']} s each), "
              f"{f['probe_reads']} probe reads, {f['mixed_states']} mixed states, {f['went_back']} reads older than "
              f"one seen before, {f['lost_writes']} lost writes, {f['errors']} errors" for c, f in write.items()]  # fmt: skip
    scaling = "; ".join(
        f"{w} process{'es' if w > 1 else ''}: {f[16]['requests_per_s']} against {f[min(f)]['requests_per_s']} req/s "
        f"({f[16]['requests_per_s'] / f[min(f)]['requests_per_s']:.2f}x)" for w, f in read.items() if 16 in f
    )  # fmt: skip
    errors = sum(f["errors"] for _, _, figures in runs for f in figures.values())
    gap = one["p50_ms"] - own["p50_ms"]
    lines = [
        "# `semsearch serve` under load",
        "",
        f"Command: `{r['command']}` (loopback; 2-core machine shared with other work: 1/5/15-minute load "
        f"averages {', '.join(f'{x:.2f}' for x in r['load_before'])} before, "
        f"{', '.join(f'{x:.2f}' for x in r['load_after'])} after; each phase's own in the table).",
        "",
        f"Index: 117,791 WordNet glosses, defaults; queries in mode `{own['mode']}` (the index's default), k 10.",
        "",
        "| target | measured | met |",
        "|---|---|---|",
        f"| GET /search p50 at 1 client within 2 ms of in-process Index.search | {one['p50_ms']} ms against "
        f"{own['p50_ms']} ms ({gap:+.2f}) | {'yes' if gap <= 2 else 'no'} |",
        f"| 16 clients >= 1.5x the throughput of 1 | {scaling} | "
        f"{'yes' if any(f[16]['requests_per_s'] >= 1.5 * f[min(f)]['requests_per_s'] for f in read.values() if 16 in f) else 'no'} |",
        f"| 0 errors at {top} clients | {errors} errors in every phase | {'yes' if errors == 0 else 'no'} |",
        f"| cold start to first answer < 2 s | {cold['first_search_s']:.2f} s to the first /search, "
        f"{cold['first_health_s']:.2f} s to /health (median of {len(cold['runs'])}) | {'yes' if cold['first_search_s'] < 2 else 'no'} |",
        "",
        *rows,
        "",
        f"While another process upserts (Index.add, batches of {r['write_docs']} documents, each a new revision), "
        f"{r['write_workers']} server process(es):",
        "",
        *writes,
        "",
        f"In process: warm Index.search p50 {own['p50_ms']} ms, p99 {own['p99_ms']} ms ({own['queries']} queries). "
        f"Cold start: listening after {cold['listening_s']:.2f} s. The server process imported torch: "
        f"{r.get('server_imported_torch')}.",
        "",
    ]  # fmt: skip
    return "\n".join(lines)


SEMSEARCH = [sys.executable, "-m", "semsearch"]


def percentile_ms(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def mcp_index(index: Path, wordnet: Path, encoded: bool, sample: int = 3000) -> None:
    """The WordNet index, built once: with `encoded`, every gloss encoded (4 minutes on an idle machine); else
    the glosses with vectors drawn from a Gaussian of the mean and covariance of `sample` encoded ones (`ingest
    --vectors`: the same index, sizes and search path, queries encoded by the model, in a minute)."""
    if (index / "manifest.json").exists():
        return
    corpus = wordnet / "corpus.jsonl"
    if not corpus.exists():
        print(
            f"skipped: no WordNet corpus at {corpus} (../shared/data/wordnet beside the repo)",
            file=sys.stderr,
        )
        raise SystemExit(0)
    command = [*SEMSEARCH, "ingest", str(corpus), "--index", str(index), "-q"]
    if not encoded:
        import numpy as np

        from semsearch.encoding import resolve_model_path
        from semsearch.encoding.encoder import Encoder
        from semsearch.settings import DEFAULT_MODEL

        lines = corpus.read_text().splitlines()
        step = max(1, len(lines) // sample)
        texts = [json.loads(line)["text"] for line in lines[::step]]
        real = Encoder(resolve_model_path(None), quantize="int8").encode(texts).astype(np.float64)
        drawn = np.random.default_rng(36).multivariate_normal(real.mean(0), np.cov(real.T), len(lines))
        drawn /= np.linalg.norm(drawn, axis=1, keepdims=True)
        vectors = index.parent / f"{index.name}-vectors.npy"
        np.save(vectors, drawn.astype(np.float32), allow_pickle=False)
        command += [
            "--vectors",
            str(vectors),
            "--model",
            DEFAULT_MODEL,
        ]  # named: a model to encode mcp_queries
    print(f"building {index}: {shlex.join(command)}", file=sys.stderr)
    subprocess.run(command, check=True)


def mcp_queries(wordnet: Path, count: int) -> list[str]:
    """Titles and the first words of glosses, spread over the corpus (as benchmarks/serve_load.py asks)."""
    docs = [json.loads(line) for line in (wordnet / "corpus.jsonl").open()][::250]
    return [(d["title"] if i % 2 else " ".join(d["text"].split()[:6])) for i, d in enumerate(docs)][:count]


def timings_of(run, texts: list[str]) -> dict:
    seconds = [run(text) for text in texts]
    return {"p50_ms": 1000 * percentile_ms(seconds, 0.5), "p99_ms": 1000 * percentile_ms(seconds, 0.99)}


def mcp_in_process(index, texts: list[str]) -> dict:
    def one(text: str) -> float:
        started = time.perf_counter()
        index.search(text, k=10)
        return time.perf_counter() - started

    return timings_of(one, texts)


async def over_stdio(index_path: Path, texts: list[str], rounds: int, direct) -> list[dict]:
    from mcp import ClientSession, StdioServerParameters, stdio_client

    params = StdioServerParameters(
        command=SEMSEARCH[0], args=[*SEMSEARCH[1:], "mcp", "--index", str(index_path)], env=dict(os.environ)
    )
    results = []
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        await session.list_tools()
        for text in texts[:50]:
            await session.call_tool("search", {"query": text, "k": 10})
        for _ in range(rounds):
            seconds = []
            for text in texts:
                started = time.perf_counter()
                result = await session.call_tool("search", {"query": text, "k": 10})
                seconds.append(time.perf_counter() - started)
                assert not result.is_error, result.content
            mcp = {
                "p50_ms": 1000 * percentile_ms(seconds, 0.5),
                "p99_ms": 1000 * percentile_ms(seconds, 0.99),
            }
            local = direct(texts)
            results.append({"index_search": local, "mcp_stdio": mcp, "load_average": os.getloadavg()[0]})
            print(json.dumps(results[-1]), file=sys.stderr)
    return results


def mcp_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--index", type=Path, default=REPO / "indexes" / "bench" / "mcp-wordnet")
    parser.add_argument("--wordnet", type=Path, default=REPO.parent / "shared" / "data" / "wordnet")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=OUT / "mcp")
    parser.add_argument("--encoded", action="store_true", help="build the index by encoding every gloss")


def mcp(config: argparse.Namespace) -> Rows:
    """An MCP search call over stdio against a warm Index.search: at most 2x its p50 plus 5 ms (mcp.md)."""
    config.index.parent.mkdir(parents=True, exist_ok=True)
    mcp_index(config.index, config.wordnet, config.encoded)
    texts = mcp_queries(config.wordnet, config.queries)

    from semsearch import Index

    with Index.open(config.index) as index:
        for text in texts[:50]:
            index.search(text, k=10)
        documents, mode = len(index), index.default_mode.value
        rounds = asyncio.run(
            over_stdio(config.index, texts, config.rounds, lambda t: mcp_in_process(index, t))
        )

    def median(side: str, figure: str) -> float:
        return round(statistics.median(r[side][figure] for r in rounds), 2)

    ratios = [r["mcp_stdio"]["p50_ms"] / r["index_search"]["p50_ms"] for r in rounds]
    budgets = [2 * r["index_search"]["p50_ms"] + 5 for r in rounds]
    summary = {
        "documents": documents,
        "mode": mode,
        "queries": len(texts),
        "rounds": rounds,
        "index_search_p50_ms": median("index_search", "p50_ms"),
        "index_search_p99_ms": median("index_search", "p99_ms"),
        "mcp_stdio_p50_ms": median("mcp_stdio", "p50_ms"),
        "mcp_stdio_p99_ms": median("mcp_stdio", "p99_ms"),
        "ratio_p50": round(statistics.median(ratios), 2),
        "target_ms": round(statistics.median(budgets), 2),
        "met_in_rounds": sum(r["mcp_stdio"]["p50_ms"] <= b for r, b in zip(rounds, budgets)),
        "command": command_line(),
        "build": "every gloss encoded"
        if config.encoded
        else "the glosses' text with vectors drawn from a Gaussian "
        "of the mean and covariance of 3,000 encoded glosses (`ingest --vectors`); queries encoded by the model",
    }
    config.out.with_suffix(".json").write_text(json.dumps(summary, indent=2) + "\n")
    config.out.with_suffix(".md").write_text(mcp_report(summary))
    print(mcp_report(summary))
    return summary


def mcp_report(s: dict) -> str:
    rows = "\n".join(
        f"| {n} | {r['index_search']['p50_ms']:.2f} | {r['index_search']['p99_ms']:.2f} | "
        f"{r['mcp_stdio']['p50_ms']:.2f} | {r['mcp_stdio']['p99_ms']:.2f} | "
        f"{2 * r['index_search']['p50_ms'] + 5:.2f} | {r['load_average']:.1f} |"
        for n, r in enumerate(s["rounds"], start=1)
    )
    return f"""# MCP search latency over stdio

`{s["command"]}`

{s["documents"]:,} WordNet glosses in an index of the default settings (default mode {s["mode"]}): {s["build"]}.
{s["queries"]} queries (titles and first words of glosses), k=10, each round the same queries
through warm `Index.search` in the benchmark's process and through the `search` tool of one `semsearch mcp`
process driven by the SDK's `stdio_client` / `ClientSession` (warmed with 50 calls). Target: the MCP call's
p50 at most 2x the warm `Index.search` p50 plus 5 ms.

| round | Index.search p50 ms | p99 ms | MCP search p50 ms | p99 ms | target ms | load avg |
|---|---|---|---|---|---|---|
{rows}

Medians over the rounds: `Index.search` p50 {s["index_search_p50_ms"]} ms, MCP p50 {s["mcp_stdio_p50_ms"]} ms
(ratio {s["ratio_p50"]}x; target {s["target_ms"]} ms), met in {s["met_in_rounds"]} of {len(s["rounds"])}
rounds. The difference is the JSON-RPC round trip over two pipes, the SDK's validation of the call and result,
the arguments' JSON Schema check, and the hop to the index's own thread; the hits' JSON carries each hit's
passage (at most 1,000 characters) and metadata.
"""


PARTS = {
    "serve": (serve_arguments, serve),
    "mcp": (mcp_arguments, mcp),
}
