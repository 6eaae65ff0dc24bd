"""Crash benchmark (issue 5): SIGKILL `semsearch ingest`, an upsert, `delete` and `refit` at random moments,
check what a reader sees right after each kill, run the same command again, and compare the end state with
an uninterrupted run: documents lost and mismatched query results must be 0.

    .venv/bin/python benchmarks/crash.py [--kills 24] [--seed 0] [--docs 600] [--out benchmarks/results]

Writes crash.md and crash.json (with the command) to --out."""

from __future__ import annotations

import argparse
import json
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from scale import command_line

from semsearch import Index
from semsearch.errors import IndexStateError

WORDS = [
    "river bird engine library storm cat bridge kite train letter garden map harbour midnight valley",
    "carries watches breaks finds follows warms hides repairs paints sells builds opens closes lifts",
    "old new small quiet bright broken red distant green hidden wooden frozen golden narrow",
]
QUERIES = ["a bird near the water", "trains at night", "repairing a broken machine", "a hidden garden"]


def corpus(n: int, seed: int, prefix: str) -> list[dict]:
    rng = random.Random(seed)
    vocab = [w.split() for w in WORDS]
    return [
        {"id": f"{prefix}{i}", "text": " ".join(rng.choice(vocab[j % 3]) for j in range(12)), "n": i}
        for i in range(n)
    ]


def write(path: Path, docs: list[dict]) -> Path:
    path.write_text("".join(json.dumps(d) + "\n" for d in docs))
    return path


def semsearch(*args: str) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "semsearch", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def finish(*args: str) -> str:
    run = semsearch(*args)
    _, err = run.communicate()
    if run.returncode != 0:
        raise SystemExit(f"semsearch {' '.join(args)} failed: {err}")
    return err


def state(path: Path) -> tuple[set[str], list[list[str]], list[list[float]]]:
    with Index.open(path) as index:
        ids = index.store.ids()
        hits = [index.search(q, k=10) for q in QUERIES]
    return ids, [[h.id for h in r] for r in hits], [[h.score for h in r] for r in hits]


def _state_or_none(path: Path):
    try:
        return state(path)
    except IndexStateError:
        return None


def same(a, b) -> bool:
    return (
        a[0] == b[0]
        and a[1] == b[1]
        and all(abs(x - y) < 1e-4 for xs, ys in zip(a[2], b[2]) for x, y in zip(xs, ys))
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=24)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--docs", type=int, default=600)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    args = parser.parse_args()
    rng = random.Random(args.seed)
    work = Path(tempfile.mkdtemp(prefix="semsearch-crash-"))
    first = write(work / "first.jsonl", corpus(args.docs, 1, "d"))
    # the upsert: a quarter of the documents changed, as many new ones
    changed = [dict(d, text=d["text"] + " again") for d in corpus(args.docs // 4, 1, "d")]
    second = write(work / "second.jsonl", changed + corpus(args.docs // 4, 2, "n"))
    deleted = [f"d{i}" for i in range(0, args.docs, 7)]

    operations = {
        "ingest": (None, ["ingest", str(first), "--batch-size", "16", "-q"]),
        "upsert": ("ingest", ["ingest", str(second), "--batch-size", "16", "-q"]),
        "delete": ("upsert", ["delete", *deleted]),
        "refit": ("delete", ["refit", "--transform", "pca", "--dims", "32"]),
    }
    # Uninterrupted reference runs: the state before and after each operation, and its duration.
    states, durations, expected = {}, {}, {}
    previous = None
    for name, (_, command) in operations.items():
        target = work / f"ref-{name}"
        if previous is not None:
            shutil.copytree(previous, target)
        started = time.perf_counter()
        finish(*command, "--index", str(target))
        durations[name] = time.perf_counter() - started
        states[name], expected[name], previous = target, state(target), target

    counts = {
        "kills": 0,
        "resumes": 0,
        "committed_before_kill": 0,
        "documents_lost": 0,
        "mismatched_results": 0,
    }
    counts |= {"opened_after_kill": 0, "clear_error_after_kill": 0, "broken_after_kill": 0}
    per_operation = {name: 0 for name in operations}
    names = list(operations)
    for kill in range(args.kills):
        name = names[kill % len(names)]
        before, command = operations[name]
        target = work / f"kill-{kill}"
        if before is not None:
            shutil.copytree(states[before], target)
        run = semsearch(*command, "--index", str(target))
        keys = target / "raw" / "resume.keys"
        if name in ("ingest", "upsert") and kill % 8 >= 4:
            # every other ingest and upsert: once encoding has made progress, so the re-run must resume
            while run.poll() is None and not (keys.exists() and keys.stat().st_size > 0):
                time.sleep(0.01)
            time.sleep(rng.uniform(0.0, 0.2) * durations[name])
        else:
            time.sleep(rng.uniform(0.1, 1.0) * durations[name])
        run.send_signal(signal.SIGKILL)
        run.wait()
        counts["kills"] += 1
        per_operation[name] += 1
        try:
            with Index.open(target) as index:
                if len(index):
                    index.search(QUERIES[0], k=5)
            counts["opened_after_kill"] += 1
        except IndexStateError:
            counts["clear_error_after_kill"] += 1  # not an index yet, or says what is wrong
        except Exception as error:  # anything else is a broken index
            counts["broken_after_kill"] += 1
            print(f"kill {kill} ({name}): {error!r}", file=sys.stderr)
        if _state_or_none(target) is not None and same(_state_or_none(target), expected[name]):
            counts["committed_before_kill"] += 1  # nothing to redo (a delete would rightly refuse)
        else:
            err = finish(*command, "--index", str(target))
            counts["resumes"] += "resumed:" in err
        got = state(target)
        counts["documents_lost"] += len(expected[name][0] - got[0])
        counts["mismatched_results"] += not same(got, expected[name])
        print(f"kill {kill}: {name}, ok" if same(got, expected[name]) else f"kill {kill}: {name}, MISMATCH")
        shutil.rmtree(target, ignore_errors=True)

    command = command_line()
    report = {
        "command": command.strip(),
        "documents": args.docs,
        **counts,
        "kills_per_operation": per_operation,
        "uninterrupted_seconds": {k: round(v, 2) for k, v in durations.items()},
    }
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "crash.json").write_text(json.dumps(report, indent=2) + "\n")
    lines = [
        "# Crash benchmark",
        "",
        f"Made with: `{report['command']}`",
        "",
        "SIGKILL at a random moment of each operation (every other ingest and upsert once its resume cache"
        " has vectors), a reader's check right after, the same command run"
        " again, the end state compared with an uninterrupted run (document ids, top-10 ids and scores of"
        f" {len(QUERIES)} queries).",
        "",
        "| measure | value |",
        "|---|---|",
        *(f"| {key} | {value} |" for key, value in counts.items()),
        f"| kills per operation | {', '.join(f'{k} {v}' for k, v in per_operation.items())} |",
        f"| uninterrupted seconds | {', '.join(f'{k} {v:.1f}' for k, v in durations.items())} |",
    ]
    (args.out / "crash.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
