"""Scale-out: `semsearch ingest` on a local Dask cluster of 1 and 2 worker processes against the
in-process ingest of the same WordNet glosses, whole processes, alternated rounds; the driver's peak RSS at three
corpus sizes beside the vector index it builds; and, from the measured rates, what 10M and 100M documents cost
on N machines. Writes benchmarks/results/distributed.md and distributed.json.

    python -m benchmarks distributed [--wordnet DIR] [--docs 20000] [--large 60000] [--largest 117791]
                                               [--rounds 3]
    python -m benchmarks distributed --shard-add [--shard-docs 500000] [--shard-source 20000]
                                               [--shard-types ivf] [--rounds 2]

--shard-add measures only the ivf / pq index filled on the workers (a section of its own in the results, which
the other runs keep): --shard-source WordNet glosses encoded once, resampled with noise to --shard-docs vectors,
ingested with `--vectors --index-type T` in this process and on `--workers 2`, alternated rounds; the build's
phases timed inside the ingest process (its functions wrapped), the driver's peak RSS, the index files compared.

Needs ../shared/data/wordnet/corpus.jsonl (skips with a message where it is absent) and the dask extra. Timing
needs a quiet machine: the 1-minute load average is recorded before and after each run.
"""

from __future__ import annotations

import argparse
import atexit
import json
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.suite import OUT, REPO, Rows, command_line, require
from semsearch.ingest.pipeline import CHUNK_DOCS

WORDNET = REPO.parent / "shared" / "data" / "wordnet"
SEMSEARCH = [sys.executable, "-m", "semsearch"]
# `semsearch ingest` with its encoder on one thread, as a worker's task runs it: the fair baseline for one worker
# process. (taskset is not: ONNX Runtime pins its own threads to every core, and ran at 166% CPU under
# `taskset -c 0`.)
ONE_THREAD = [
    sys.executable,
    "-c",
    "import sys; from semsearch.encoding import Encoder; Encoder.threads = 1; "
    "from semsearch.cli import main; sys.argv[0] = 'semsearch'; main()",
]
# `semsearch ingest` with the build's phases timed: seconds inside build.build_vectors and the functions it calls,
# summed over the run, printed as a `phases:` JSON line on stderr as the process ends.
TIMED_PHASES = [
    sys.executable,
    "-c",
    """
import json, sys, time
from semsearch.ingest import build
from semsearch.ingest import distributed
from semsearch.retrieval import tuning
from semsearch.retrieval import vectorindex
from semsearch.cli import main

CLAIM = "Ingest on a Dask cluster of 1 and 2 workers against in-process, the driver's memory, and 10M-100M projections"

spent = {}

def timed(owner, name, phase):
    inner = getattr(owner, name)
    def wrapper(*args, **kwargs):
        started = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            spent[phase] = spent.get(phase, 0.0) + time.perf_counter() - started
    setattr(owner, name, wrapper)

timed(build, "build_vectors", "build")
timed(vectorindex.VectorIndex, "train", "train")
timed(distributed.Executor, "add_blocks", "fill")  # here: project, add, truth block by block
timed(distributed.DaskExecutor, "add_blocks", "fill")  # cluster: project, truth, send, merge
timed(vectorindex.VectorIndex, "add", "add on the driver")
merger = vectorindex.VectorIndex.merger
def timed_merger(self):  # the merge of each shard's lists, a function the merger returns
    merge = merger(self)
    def timed_merge(lists):
        started = time.perf_counter()
        merge(lists)
        spent["merge"] = spent.get("merge", 0.0) + time.perf_counter() - started
    return timed_merge
vectorindex.VectorIndex.merger = timed_merger
timed(tuning.Truth, "add", "truth")
timed(tuning, "tune", "tune")
sys.argv[0] = "semsearch"
try:
    main()
finally:
    print("phases: " + json.dumps(spent), file=sys.stderr)
""",
]
SHARD_SECTION = "## IVF and PQ filled on the workers"
VARIANTS = {  # name: (the command, extra arguments)
    "in-process": (SEMSEARCH, []),
    "in-process, one encoder thread": (ONE_THREAD, []),
    "1 worker": (SEMSEARCH, ["--workers", "1"]),
    "2 workers": (SEMSEARCH, ["--workers", "2"]),
}
RSS_VARIANTS = {
    "2 workers (the driver)": ["--workers", "2"],
    "2 workers (the driver), pq index": ["--workers", "2", "--index-type", "pq"],
    "in-process": [],
}


SETTLE_SECONDS = 3  # between runs: the last one's processes gone, its dirty pages written


def load() -> float:
    return os.getloadavg()[0]


def hwm_mib(pid: int) -> float | None:
    """The peak RSS of one process (VmHWM: its own, not its children's, as ru_maxrss would add)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def ingest(corpus: Path, index: Path, extra: list[str], env: dict, program: list[str] = SEMSEARCH) -> dict:
    """One whole `semsearch ingest` process: wall seconds, the seconds the ingest itself reports (from opening
    the index to publishing: no interpreter or cluster start), the driver's peak RSS, load before and after."""
    command = [*program, "ingest", str(corpus), "--index", str(index), *extra]
    os.sync()  # the last run's writes reach the disk now, not during this one
    time.sleep(SETTLE_SECONDS)
    before, peak = load(), 0.0
    with tempfile.TemporaryFile("w+") as log:  # a pipe left unread would fill and stop the process
        started = time.perf_counter()
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=log, text=True, env=env)
        while process.poll() is None:
            peak = max(peak, hwm_mib(process.pid) or 0.0)
            time.sleep(0.1)
        seconds = time.perf_counter() - started
        log.seek(0)
        stderr = log.read()
    if process.returncode != 0:
        raise SystemExit(f"{shlex.join(command)} failed:\n{stderr}")
    reported = re.search(r"in ([\d.]+) s \(([\d.]+) docs/s\)", stderr)
    phases = re.search(r"^phases: (.*)$", stderr, re.MULTILINE)  # TIMED_PHASES
    return {
        "seconds": round(seconds, 2),
        "ingest_seconds": float(reported.group(1)) if reported else None,
        "driver_peak_rss_mib": round(peak, 1),
        "load": [round(before, 2), round(load(), 2)],
        **({"phases": json.loads(phases.group(1))} if phases else {}),
    }


def raw_vectors(index: Path) -> bytes:
    from semsearch import Index

    with Index.open(index) as opened:
        return np.concatenate([block for _, block in opened.raw.blocks()]).tobytes()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--wordnet", type=Path, default=WORDNET)
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--large", type=int, default=60_000, help="the second size for the driver's RSS")
    parser.add_argument("--largest", type=int, default=117_791, help="the third size (all of WordNet)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--shard-add", action="store_true", help="only the ivf / pq fill on the workers")
    parser.add_argument("--shard-docs", type=int, default=500_000, help="vectors ingested with --shard-add")
    parser.add_argument("--shard-source", type=int, default=20_000, help="glosses encoded, then resampled")
    parser.add_argument("--shard-types", default="ivf", help="index types measured, comma-separated")


def run(config: argparse.Namespace) -> Rows:
    source = require(config.wordnet / "corpus.jsonl", "WordNet corpus")
    try:
        import distributed  # noqa: F401
    except ImportError:
        print("skipped: the dask extra is not installed (pip install 'semsearch[dask]')", file=sys.stderr)
        return
    scratch = Path(tempfile.mkdtemp(prefix="semsearch-distributed-"))
    atexit.register(shutil.rmtree, scratch, True)  # GBs of indexes (2-3 GB one of 1M vectors)
    env = {**os.environ, "SEMSEARCH_CACHE": str(scratch / "cache")}
    lines = source.read_text().splitlines(keepends=True)
    if config.shard_add:
        shard_add(config, lines, scratch, env)
        return
    corpus = scratch / "corpus.jsonl"
    corpus.write_text("".join(lines[: config.docs]))

    # Warm-up: the model exported once into the cache, files in the page cache.
    ingest(corpus, scratch / "warm", [], env)
    runs: dict[str, list[dict]] = {name: [] for name in VARIANTS}
    for round_ in range(config.rounds):  # alternated: each round runs every variant once
        for name, (program, extra) in VARIANTS.items():
            index = scratch / f"{name.replace(' ', '-').replace(',', '')}-{round_}"
            runs[name].append(ingest(corpus, index, extra, env, program))
            print(name, runs[name][-1], file=sys.stderr, flush=True)
    identical = raw_vectors(scratch / "in-process-0") == raw_vectors(scratch / "2-workers-0")

    # The driver alone: the same documents with their vectors given (nothing encoded): merge, write, build.
    from semsearch import Index

    with Index.open(scratch / "2-workers-0") as index:
        vectors = np.concatenate([b for _, b in index.raw.blocks()])
    np.save(scratch / "vectors.npy", vectors)
    driver = [
        ingest(corpus, scratch / f"vectors-{r}", ["--vectors", str(scratch / "vectors.npy")], env)
        for r in range(config.rounds)
    ]
    # Peak RSS at growing sizes: the cluster's driver (default index, and pq, whose index is small), and the
    # in-process ingest; beside each, the bytes of the vector index it built, which it holds at the end.
    rss: dict[str, dict[int, dict]] = {name: {} for name in RSS_VARIANTS}
    for size in sorted({config.docs, config.large, min(config.largest, len(lines))}):
        jsonl = scratch / f"rss-{size}.jsonl"
        jsonl.write_text("".join(lines[:size]))
        for name, extra in RSS_VARIANTS.items():
            index = scratch / f"rss-{size}-{name.replace(' ', '-').replace(',', '')}"
            run = ingest(jsonl, index, extra, env)
            rss[name][size] = {
                "peak_rss_mib": run["driver_peak_rss_mib"],
                "index_mib": round(
                    (sorted(index.glob("gen-*"))[-1] / "vectors.faiss").stat().st_size / 2**20, 1
                ),
                "seconds": run["seconds"],
                "load": run["load"],
            }
            print(name, size, rss[name][size], file=sys.stderr, flush=True)
            shutil.rmtree(index)
    records = [json.loads(line) for line in lines[: config.docs]]
    text_bytes = sum(len(d["text"].encode()) + len((d.get("title") or "").encode()) for d in records)
    result = summarise(config, runs, driver, rss, identical, text_bytes / len(records))
    OUT.mkdir(parents=True, exist_ok=True)
    kept = {k: v for k, v in previous_json().items() if k == "shard_add"}  # --shard-add's section stays
    (OUT / "distributed.json").write_text(json.dumps({**result, **kept}, indent=2) + "\n")
    (OUT / "distributed.md").write_text(report(result) + shard_section_kept())
    print((OUT / "distributed.md").read_text())
    return result


def summarise(args, runs, driver, rss, identical, text_bytes_per_doc) -> dict:
    docs = args.docs
    median = {name: statistics.median(r["seconds"] for r in found) for name, found in runs.items()}
    rate = {name: round(docs / seconds, 1) for name, seconds in median.items()}
    inside = {name: statistics.median(r["ingest_seconds"] for r in found) for name, found in runs.items()}
    steady = {name: round(docs / seconds, 1) for name, seconds in inside.items()}
    driver_rate = round(docs / statistics.median(r["ingest_seconds"] for r in driver), 1)
    loads = [value for found in runs.values() for r in found for value in r["load"]]
    return {
        "command": command_line(),
        "docs": docs,
        "rounds": args.rounds,
        "cores": os.cpu_count(),
        "runs": runs,
        "median_seconds": median,
        "docs_per_second": rate,
        "median_ingest_seconds": inside,
        "ingest_docs_per_second": steady,
        "two_over_one_worker": round(rate["2 workers"] / rate["1 worker"], 3),
        "overhead_one_worker_vs_in_process_one_thread": round(
            rate["in-process, one encoder thread"] / rate["1 worker"] - 1, 3
        ),
        "overhead_one_worker_vs_in_process": round(rate["in-process"] / rate["1 worker"] - 1, 3),
        "driver_only_docs_per_second": driver_rate,
        "driver_only_runs": driver,
        "driver_peak_rss_mib": rss,
        "raw_vectors_identical_in_process_vs_2_workers": identical,
        "load_average_1min": {"min": round(min(loads), 2), "max": round(max(loads), 2)},
        "text_bytes_per_doc": round(text_bytes_per_doc, 1),
        "projection": projection(steady, driver_rate, text_bytes_per_doc),
    }


# Per document on the wire: the text to the worker; back, its raw vector (384 float32), its resume key (32
# bytes), and its share of the partition's statistics (a 384 x 384 float64 comoment per partition).
VECTOR_BYTES, KEY_BYTES, STATS_BYTES = 384 * 4, 32, (384 * 384 + 384) * 8 / CHUNK_DOCS
HNSW_1M_SECONDS = 128  # a refit to hnsw at 1M documents (scale.md); n log n beyond


def projection(rate: dict, driver_rate: float, text_bytes: float) -> list[dict]:
    """What 10M and 100M documents cost on N machines of this machine's 2 cores (2 worker processes each): the
    measured per-process rate times the processes, capped by the driver's measured rate; the index build
    scaled from 1M; the bytes each way."""
    per_process = rate["2 workers"] / 2  # what one worker process on one core gives, both busy
    rows = []
    for docs in (10_000_000, 100_000_000):
        build = HNSW_1M_SECONDS * (docs / 1e6) * np.log(docs) / np.log(1e6)
        for machines in (1, 4, 16, 64):
            encode = docs / min(per_process * 2 * machines, driver_rate)
            rows.append(
                {
                    "docs": docs,
                    "machines": machines,
                    "encode_hours": round(encode / 3600, 2),
                    "driver_bound": per_process * 2 * machines > driver_rate,
                    "build_hours": round(build / 3600, 2),
                    "to_workers_gb": round(docs * text_bytes / 1e9, 1),
                    "from_workers_gb": round(docs * (VECTOR_BYTES + KEY_BYTES + STATS_BYTES) / 1e9, 1),
                }
            )
    return rows


def rss_growth(found: dict) -> dict[str, float]:
    """Bytes a document that the peak RSS and the index file grew from the smallest to the largest size."""
    small, large = sorted(found, key=int)[0], sorted(found, key=int)[-1]
    documents = int(large) - int(small)
    return {
        key: (found[large][field] - found[small][field]) * 2**20 / documents
        for key, field in (("rss", "peak_rss_mib"), ("index", "index_mib"))
    }


def report(r: dict) -> str:
    rate, med, steady = r["docs_per_second"], r["median_seconds"], r["ingest_docs_per_second"]
    sizes = sorted({n for found in r["driver_peak_rss_mib"].values() for n in found}, key=int)
    growth = {name: rss_growth(found) for name, found in r["driver_peak_rss_mib"].items()}
    lines = [
        "# Scale-out: ingest on a Dask cluster",
        "",
        f"Command: `{r['command']}`. First {r['docs']:,} WordNet glosses, whole `semsearch ingest` processes "
        f"(defaults: int8 ONNX encoder, whiten P=0.5 to 128 dims, flat index), {r['rounds']} alternated rounds, "
        f"medians, each run begun {SETTLE_SECONDS} s after the last one's writes were synced to disk; "
        f"{r['cores']} cores; 1-minute load average during the runs "
        f"{r['load_average_1min']['min']}-{r['load_average_1min']['max']} (others share this machine).",
        "",
        "| variant | median s, whole process | docs/s | docs/s as the ingest reports it (no process or cluster start) |",
        "|---|---|---|---|",
        *[f"| {name} | {med[name]:.1f} | {rate[name]:.1f} | {steady[name]:.1f} |" for name in rate],
        "",
        f"- **2 workers / 1 worker: {r['two_over_one_worker']:.2f}x** (target >= 1.6x). Each worker process "
        "encodes on one core (a task per Dask thread). Two cores of this machine give no encoder much more: the "
        f"in-process ingest on two encoder threads is {rate['in-process'] / rate['in-process, one encoder thread']:.2f}x "
        "its one-thread run, and 2 workers are "
        f"{rate['2 workers'] / rate['in-process']:.2f}x the in-process ingest.",
        f"- **Overhead of the cluster at 1 worker: {r['overhead_one_worker_vs_in_process_one_thread'] * 100:+.1f}%"
        "** against the in-process ingest with its encoder on one thread, as a worker's task runs it (target "
        f"<= 15%); {r['overhead_one_worker_vs_in_process'] * 100:+.1f}% against the default in-process ingest, "
        "whose encoder uses both cores (a one-core worker cannot match it; `taskset -c 0` is no baseline: ONNX "
        "Runtime pins its threads to every core and ran at 166% CPU under it).",
        f"- Raw vectors of the in-process and the 2-worker index identical bit for bit: "
        f"{r['raw_vectors_identical_in_process_vs_2_workers']}.",
        f"- The driver alone (the same documents with `--vectors`: parse, statistics, raw segments, SQLite, "
        f"whitening, index build, no encoding): {r['driver_only_docs_per_second']:,.0f} docs/s as the ingest "
        "reports it (a lower bound for a cluster's driver, which merges the workers' statistics instead of "
        "computing them).",
        "",
        "Peak RSS (VmHWM of the ingest's own process: a cluster's driver, its workers apart), and the vector "
        "index it built and holds at its end (its file's size), one run per size:",
        "",
        "| variant | "
        + " | ".join(f"{int(n):,} docs: peak MiB / index MiB" for n in sizes)
        + " | growth per document |",
        "|---|" + "---|" * (len(sizes) + 1),
        *[
            f"| {name} | "
            + " | ".join(f"{found[n]['peak_rss_mib']:.0f} / {found[n]['index_mib']:.1f}" for n in sizes)
            + f" | {growth[name]['rss']:,.0f} bytes (its index {growth[name]['index']:,.0f}) |"
            for name, found in r["driver_peak_rss_mib"].items()
        ],
        "",
        "The cluster's driver holds the statistics and the partitions in flight (2 per worker thread), neither "
        "the corpus nor a model (the workers encode the fidelity check's and calibration's texts too). What "
        "grows is what it builds: with the default index (flat, then HNSW from 50,000 documents) its peak grows "
        "by about the index's own size, which it holds until the index is written. A pq index is 45 bytes a "
        "document, but its training sample is not: 64 rows a list, every row up to about 64,000 documents, then "
        "growing as the square root of their number (87,808 rows at 117,791; 256,000 at 1M, where the driver "
        "peaked at 522-574 MiB in the section below). Strictly flat would need the index built outside memory "
        "(FAISS's on-disk inverted lists, as autofaiss merges them), which is not built.",
        "",
        "## On paper: 10M and 100M documents",
        "",
        f"From the measured rates: {steady['2 workers'] / 2:.0f} docs/s per worker process (one core, both busy; "
        "as the ingest reports it), "
        f"machines like this one (2 cores, 2 worker processes), the driver's {r['driver_only_docs_per_second']:,.0f} "
        "docs/s as the ceiling (it merges, writes and stores every document), the HNSW build scaled "
        "n log n from 128 s at 1M (scale.md). On the wire per document: the text to the worker "
        f"({r['text_bytes_per_doc']:.0f} bytes here), back 1,536 bytes of raw vector, a 32-byte cache key and "
        f"its share of the partition's float64 statistics ({STATS_BYTES:.0f} bytes at {CHUNK_DOCS:,} documents "
        "a partition).",
        "",
        "| documents | machines | encoding h | driver-bound | HNSW build h | to workers GB | from workers GB |",
        "|---|---|---|---|---|---|---|",
        *[
            f"| {p['docs']:,} | {p['machines']} | {p['encode_hours']} | {'yes' if p['driver_bound'] else 'no'} "
            f"| {p['build_hours']} | {p['to_workers_gb']} | {p['from_workers_gb']} |"
            for p in r["projection"]
        ],
        "",
        "What this says: the encoding scales with the machines until the single driver's rate is the limit; "
        "past that, more workers only wait. At 100M documents the driver also keeps 150 GB of raw vectors and "
        "builds one HNSW index in memory (about 79 GB at 792 bytes a document): beyond one machine's RAM, which "
        "calls for IVF-PQ trained on the driver and filled per shard on the workers (faiss merge_into): "
        "`--index-type ivf` or `pq` on a cluster does that (measured in the last section).",
        "",
    ]
    return "\n".join(lines)


# ---- --shard-add: an ivf / pq index filled on the workers ---------------------------------------------------

SHARD_VARIANTS = {"in-process": [], "2 workers": ["--workers", "2"]}
# Resampling: a source vector plus noise shaped like the corpus, this wide (as benchmarks/filter.py does).
NOISE = 0.7


def shard_add(args, lines: list[str], scratch: Path, env: dict) -> None:
    """The ivf / pq fill on the workers against this process (see the top); writes its section and JSON key."""
    source = scratch / "source.jsonl"
    source.write_text("".join(lines[: args.shard_source]))
    ingest(source, scratch / "source", ["--workers", "2", "--quiet"], env)  # encoded once, by the cluster
    from semsearch import Index

    with Index.open(scratch / "source") as index:
        every = np.concatenate([b for _, b in index.raw.blocks()])
    vectors, corpus = resampled(every, args.shard_docs, scratch)
    runs: dict[str, dict[str, list[dict]]] = {
        kind: {name: [] for name in SHARD_VARIANTS} for kind in args.shard_types.split(",")
    }
    identical: dict[str, dict] = {}
    wire: dict[str, dict] = {}
    for kind, found in runs.items():
        built = {}
        for round_ in range(args.rounds):  # alternated: each round runs both variants
            for name, extra in SHARD_VARIANTS.items():
                index = scratch / f"{kind}-{name.replace(' ', '-')}-{round_}"
                command = ["--vectors", str(vectors), "--index-type", kind, *extra]
                found[name].append(ingest(corpus, index, command, env, TIMED_PHASES))
                print(kind, name, found[name][-1], file=sys.stderr, flush=True)
                built[f"{name}, round {round_ + 1}"] = index_contents(index)
                wire[kind] = wire.get(kind) or wire_bytes(index, args.shard_docs)
                shutil.rmtree(index)  # digested: the disk holds one index at a time
        reference = built["in-process, round 1"]
        identical[kind] = {
            "lists_and_centroids": all(b["lists"] == reference["lists"] for b in built.values()),
            "files": {name: b["file"] == reference["file"] for name, b in built.items()},
            "direct_map": {name: b["direct_map"] for name, b in built.items()},
        }
    result = {
        "command": command_line(),
        "docs": args.shard_docs,
        "source_docs": args.shard_source,
        "rounds": args.rounds,
        "cores": os.cpu_count(),
        "runs": runs,
        "same_index": identical,
        "wire": wire,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "distributed.json").write_text(
        json.dumps({**previous_json(), "shard_add": result}, indent=2) + "\n"
    )
    existing = (OUT / "distributed.md").read_text() if (OUT / "distributed.md").is_file() else ""
    kept = existing.split(SHARD_SECTION)[0].rstrip("\n") + "\n\n" if existing else ""
    (OUT / "distributed.md").write_text(kept + shard_report(result))
    print(shard_report(result))


def resampled(every: np.ndarray, n: int, scratch: Path) -> tuple[Path, Path]:
    """n vectors: each a random one of `every` plus Gaussian noise with their covariance (x NOISE),
    normalised, and a corpus of n short documents to go with them."""
    rng = np.random.default_rng(n)
    factor = np.linalg.cholesky(np.cov(every.T) + 1e-6 * np.eye(every.shape[1])).astype(np.float32)
    path, corpus = scratch / f"resampled-{n}.npy", scratch / f"resampled-{n}.jsonl"
    array = np.lib.format.open_memmap(path, mode="w+", dtype="<f4", shape=(n, every.shape[1]))
    for begin in range(0, n, 100_000):
        rows = min(100_000, n - begin)
        noise = rng.standard_normal((rows, every.shape[1]), dtype=np.float32) @ factor.T
        picked = every[rng.integers(0, len(every), rows)] + NOISE * noise
        array[begin : begin + rows] = picked / np.linalg.norm(picked, axis=1, keepdims=True)  # as encoded
    array.flush()
    del array
    with open(corpus, "w") as handle:
        for i in range(n):
            handle.write(f'{{"id": "r{i}", "text": "resampled document {i}"}}\n')
    return path, corpus


def index_contents(path: Path) -> dict:
    """Digests of an ivf / pq index: its file, and its centroids and lists (each list's ids and codes, in
    order); and its direct map (0 none, 2 a hash table: tuning makes one when it scores few rows from the
    lists, which it does or not by timing, and it is saved with the index)."""
    import hashlib

    import faiss

    from semsearch import Index
    from semsearch.retrieval.vectorindex import VectorIndex

    with Index.open(path) as index:
        file = hashlib.sha256((index.generation_dir / VectorIndex.FILE).read_bytes()).hexdigest()
        ivf = faiss.downcast_index(index.vectors.index)
        quantizer = faiss.downcast_index(ivf.quantizer)
        lists = hashlib.sha256(
            faiss.rev_swig_ptr(quantizer.get_xb(), quantizer.ntotal * quantizer.d).tobytes()
        )
        for n in range(ivf.nlist):
            size = ivf.invlists.list_size(n)
            lists.update(faiss.rev_swig_ptr(ivf.invlists.get_ids(n), size).tobytes())
            lists.update(faiss.rev_swig_ptr(ivf.invlists.get_codes(n), size * ivf.code_size).tobytes())
        return {"file": file, "lists": lists.hexdigest(), "direct_map": int(ivf.direct_map.type)}


def wire_bytes(path: Path, docs: int, workers: int = 2) -> dict:
    """What a cluster's fill sends: the trained, empty index once to each worker, each block's projected
    vectors and pks out, and back each shard's inverted lists (VectorIndex.lists_bytes: codes, ids, and the
    size of each list, 8 bytes a list)."""
    import faiss

    from semsearch import Index
    from semsearch.retrieval.vectorindex import VectorIndex
    from semsearch.storage.rawvectors import BLOCK_ROWS

    with Index.open(path) as index:
        ivf = faiss.downcast_index(index.vectors.index)
        empty = VectorIndex(faiss.clone_index(ivf))
        empty.index.reset()
        empty_bytes = len(empty.to_bytes())
    shards = -(-docs // BLOCK_ROWS)
    return {
        "shards": shards,
        "structure": f"IVF{ivf.nlist}, {ivf.code_size} bytes a code, {ivf.d} dims",
        "to_workers_mb": round((docs * (ivf.d * 4 + 8) + workers * empty_bytes) / 1e6, 1),
        "from_workers_mb": round((docs * (ivf.code_size + 8) + shards * ivf.nlist * 8) / 1e6, 1),
        "empty_index_mb": round(empty_bytes / 1e6, 2),
    }


def previous_json() -> dict:
    path = OUT / "distributed.json"
    return json.loads(path.read_text()) if path.is_file() else {}


def shard_section_kept() -> str:
    """The --shard-add section of the results file as it stands, for a run that rewrites the rest."""
    path = OUT / "distributed.md"
    text = path.read_text() if path.is_file() else ""
    return "\n" + SHARD_SECTION + text.split(SHARD_SECTION, 1)[1] if SHARD_SECTION in text else ""


def shard_report(r: dict) -> str:
    def median(found: list[dict], phase: str | None) -> float:  # None: the whole process
        return statistics.median(run["seconds"] if phase is None else run["phases"][phase] for run in found)

    lines = [
        SHARD_SECTION,
        "",
        f"Command: `{r['command']}`. {r['docs']:,} vectors resampled from the first {r['source_docs']:,} "
        "WordNet glosses (int8 encoder; each a gloss's vector plus noise shaped like theirs), ingested with "
        "`--vectors --index-type T` (whiten P=0.5 to 128 dims) in this process and on a local cluster of 2 "
        f"worker processes, {r['rounds']} alternated rounds, medians; {r['cores']} cores shared with another "
        "engineer's work, so the 1-minute load average is given by run. Phases are seconds inside the ingest "
        "process (build: all of build_vectors; fill: the blocks projected, fed to tuning's exact answers and "
        "added, here or sent and merged; truth: of it, the exact answers).",
        "",
    ]
    for kind, found in r["runs"].items():
        lines += [
            f"### {kind}: {r['wire'][kind]['structure']}",
            "",
            "| variant | round | whole s | ingest s | build s | train s | fill s | truth s | merge s | tune s "
            "| driver peak RSS MiB | load before / after |",
            "|---|---|---|---|---|---|---|---|---|---|---|---|",
        ]
        for name, runs in found.items():
            for number, run in enumerate(runs):
                p = run.get("phases", {})
                lines.append(
                    f"| {name} | {number + 1} | {run['seconds']:.1f} | {run['ingest_seconds']:.1f} "
                    f"| {p.get('build', 0):.1f} | {p.get('train', 0):.1f} | {p.get('fill', 0):.1f} "
                    f"| {p.get('truth', 0):.1f} | {p.get('merge', 0):.2f} | {p.get('tune', 0):.1f} "
                    f"| {run['driver_peak_rss_mib']:.0f} | {run['load'][0]:.1f} / {run['load'][1]:.1f} |"
                )
        here, there = found["in-process"], found["2 workers"]
        ratios = [
            f"{phase or 'whole process'} {median(there, phase) / max(median(here, phase), 1e-9):.2f}x"
            for phase in ("fill", "build", None)
        ]
        wire = r["wire"][kind]
        same = r["same_index"][kind]
        if all(same["files"].values()):
            files = "Their files are identical byte for byte."
        else:
            files = (
                "Their files byte for byte that of in-process round 1: "
                + ", ".join(f"{name} {'yes' if equal else 'no'}" for name, equal in same["files"].items())
                + "; the direct map saved with each: "
                + ", ".join(
                    f"{name} {'a hash table' if m else 'none'}" for name, m in same["direct_map"].items()
                )
                + ". They differ by it alone: tuning makes it when it times scoring few rows exactly from the "
                "lists, which it reaches or not by timing, in two builds in this process as well."
            )
        lines += [
            "",
            f"- Seconds on 2 workers / in-process (medians): {', '.join(ratios)}.",
            "- The same centroids and lists (each list's ids and codes, in order) in every build: "
            f"{same['lists_and_centroids']}. {files}",
            f"- On the wire: {wire['shards']} shards (a raw block of 8,192 rows each); "
            f"{wire['to_workers_mb']:,} MB out (the projected vectors and ids, and the trained index, "
            f"{wire['empty_index_mb']} MB, once to each worker), {wire['from_workers_mb']:,} MB of shards back "
            "(their lists' codes, ids and sizes).",
            "",
        ]
    here = {kind: found["in-process"] for kind, found in r["runs"].items()}
    fill = {kind: median(runs, "fill") for kind, runs in here.items()}
    added = {kind: median(runs, "add on the driver") for kind, runs in here.items()}
    truth = {kind: median(runs, "truth") for kind, runs in here.items()}
    kept = ", ".join(
        f"{kind} {fill[kind] - added[kind]:.1f} s of {fill[kind]:.1f} ({(fill[kind] - added[kind]) / fill[kind]:.0%})"
        for kind in here
    )
    # At 100M: lists 4 sqrt(n) (40,000), so the add costs 10x a row; the exact answers keep 17 levels of rows
    # against 10 (tuning.levels_for), 1.7x a row; the projection the same.
    later = ", ".join(
        f"{kind} {(fill[kind] - added[kind] + truth[kind] * 0.7) / (fill[kind] - added[kind] + truth[kind] * 0.7 + added[kind] * 10):.0%}"
        for kind in here
    )
    lines += [
        "What this says: on 2 cores the workers add no faster than this process, whose FAISS add already runs on "
        "both; the fill is shorter only because the driver's own part overlaps their adds, and the build as a "
        "whole (training and tuning stay on the driver) takes as long. Of the in-process fill, the driver keeps "
        "the projection and "
        f"the tuning's exact answers ({kept}; at 2 workers it does them while they add, on the same cores, so "
        "its exact answers take twice as long); the add goes to the workers, which N machines do N times "
        "faster. The driver's part grows as n log n, the add as n sqrt(n) (its lists grow as sqrt(n)): scaled to "
        f"100M vectors it is {later} of the fill. The trained index goes once to each worker; what comes back "
        "is each shard's lists, not the centroids every shard shares (2 MB here, 20 MB at 100M's 40,000 lists: "
        "more than a pq shard's codes, 0.3 MB).",
        "",
    ]
    return "\n".join(lines)
