"""Why 2 worker processes are not 2x one on this machine (issue 15): the partitions' task times on a local
cluster of 1 and of 2 workers (Dask's task stream), the same 20,000 WordNet glosses, alternated rounds; how
long a task takes alone and beside another, the workers' idle time, and the driver's own CPU seconds.
Writes benchmarks/results/cluster-tasks.md.

    .venv/bin/python benchmarks/cluster_tasks.py [--docs 20000] [--rounds 2]
"""

from __future__ import annotations

import argparse
import os
import resource
import shlex
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# benchmarks/distributed.py (the name) would stand in for Dask's `distributed` package when this
# script's directory leads the import path, as running a script makes it
sys.path[:] = [entry for entry in sys.path if Path(entry or ".").resolve() != Path(__file__).resolve().parent]
REPO = Path(__file__).resolve().parents[1]
WORDNET = REPO.parent / "shared" / "data" / "wordnet" / "corpus.jsonl"
OUT = REPO / "benchmarks" / "results" / "cluster-tasks.md"


def one_run(corpus: Path, index: Path, workers: int) -> dict:
    """An ingest on a fresh local cluster of `workers` processes, with its task stream."""
    import distributed

    from semsearch import Index
    from semsearch.ingest.distributed import DaskExecutor

    with DaskExecutor.local(workers) as executor:
        cpu_before = resource.getrusage(resource.RUSAGE_SELF)
        with distributed.get_task_stream(client=executor.client) as stream:
            started = time.time()
            with Index.create(index) as opened:
                opened.ingest(corpus, cluster=executor)
            ended = time.time()
        cpu_after = resource.getrusage(resource.RUSAGE_SELF)
    shutil.rmtree(index)
    tasks = [
        (part["start"] - started, part["stop"] - started, task["worker"], str(task["key"]))
        for task in stream.data
        for part in task["startstops"]
        if part["action"] == "compute"
    ]
    encode = [t for t in tasks if "semsearch-encode" in t[3]]
    full = [stop - start for start, stop, _, _ in encode][:-1] if len(encode) > 1 else []  # the last is short
    busy = sum(stop - start for start, stop, _, _ in tasks)
    return {
        "workers": workers,
        "seconds": ended - started,
        "task_seconds": full,
        "first_task_starts": min(start for start, _, _, _ in encode),
        "idle_worker_seconds": workers * (ended - started) - busy,
        "driver_cpu_seconds": (cpu_after.ru_utime + cpu_after.ru_stime)
        - (cpu_before.ru_utime + cpu_before.ru_stime),
        "tasks": len(tasks),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    if not WORDNET.is_file():
        print(
            f"skipped: {WORDNET} not found (the benchmark reads WordNet from ../shared/data)", file=sys.stderr
        )
        return
    scratch = Path(tempfile.mkdtemp(prefix="semsearch-tasks-"))
    try:
        corpus = scratch / "corpus.jsonl"
        with open(WORDNET) as source:
            corpus.write_text("".join(line for _, line in zip(range(args.docs), source)))
        runs: dict[int, list[dict]] = {1: [], 2: []}
        for round_ in range(args.rounds):
            for workers in runs:
                runs[workers].append(one_run(corpus, scratch / f"index-{workers}-{round_}", workers))
                print(
                    runs[workers][-1] | {"task_seconds": "..."},
                    f"load {os.getloadavg()[0]:.2f}",
                    file=sys.stderr,
                )
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    median = {
        workers: {
            "task": statistics.median(s for run in found for s in run["task_seconds"]),
            "seconds": statistics.median(run["seconds"] for run in found),
            "idle": statistics.median(run["idle_worker_seconds"] for run in found),
            "cpu": statistics.median(run["driver_cpu_seconds"] for run in found),
            "start": statistics.median(run["first_task_starts"] for run in found),
        }
        for workers, found in runs.items()
    }
    one, two = median[1], median[2]
    lines = [
        "# Scale-out: a partition's task alone and beside another",
        "",
        f"Command: `{shlex.join(['python', 'benchmarks/cluster_tasks.py', *sys.argv[1:]])}`. First "
        f"{args.docs:,} WordNet glosses ingested from Python on a fresh local cluster of 1 and of 2 worker "
        f"processes (one thread each), {args.rounds} alternated rounds, medians; times from Dask's task stream, "
        f"from the ingest's start (no interpreter or cluster start); {os.cpu_count()} cores.",
        "",
        "| workers | ingest s | a full partition's task s (2,048 documents) | first task starts at s | workers' idle s "
        "| driver CPU s |",
        "|---|---|---|---|---|---|",
        *[
            f"| {w} | {m['seconds']:.2f} | {m['task']:.2f} | {m['start']:.2f} | {m['idle']:.2f} | {m['cpu']:.2f} |"
            for w, m in median.items()
        ],
        "",
        f"- A task beside another takes **{two['task'] / one['task']:.2f}x** as long as alone: the two worker "
        "processes share this machine's two cores with the driver (which stores every document, SQLite and FTS5, "
        "while they encode), and its caches and memory bandwidth. The ingest on 2 workers is "
        f"{one['seconds'] / two['seconds']:.2f}x the one on 1; with tasks beside each other as fast as alone, and "
        f"the same idle time, it would be {one['seconds'] / (two['seconds'] - (1 - one['task'] / two['task']) * (two['seconds'] - two['start'])):.2f}x.",
        "",
    ]
    OUT.write_text("\n".join(lines))
    print(OUT.read_text())


if __name__ == "__main__":
    main()
