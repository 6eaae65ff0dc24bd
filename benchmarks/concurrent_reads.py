"""Readers beside a writer, for a while: what a search, an open or a check meets while another process writes.

    .venv/bin/python benchmarks/concurrent_reads.py [--seconds 150] [--work DIR] [--against SRC]

STS-B dev's 2,648 sentences are ingested once; then, for `--seconds`, one process writes in turn (upserts of 60
rewritten sentences, a delete of 10, `refit --calibrate`, upserts of 30 with `--refit auto`), while a reader process
runs two threads: one opens the index afresh and searches it (5 hits asked) and searches a long-lived
handle too; the other runs `check_index` (every file verified). Any exception, a search of fewer than 5 hits or
a check that finds damage is counted against its kind. `--against SRC` runs the same with another semsearch
(a `src` directory, its readers and its writer) after this one, for the figures before a change.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import subprocess
import sys
import time
from pathlib import Path

from scale import results_header

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
QUERIES = ("a man is playing a guitar", "a woman slicing an onion")
READER = """
import json, sys, threading, time
from semsearch import Index
from semsearch.operations.check import check_index
index, seconds, queries = sys.argv[1], float(sys.argv[2]), sys.argv[3:]
stop, errors = time.time() + seconds, []
counts = {"opens and searches": 0, "long-lived searches": 0, "checks": 0}

def searches():
    long_lived = Index.open(index)
    while time.time() < stop:
        try:
            with Index.open(index) as fresh:
                got = fresh.search(queries[0], k=5)
                assert len(got) == 5, f"a fresh reader's search took {len(got)} hits of 5"
            counts["opens and searches"] += 1
            got = long_lived.search(queries[1], k=5)
            assert len(got) == 5, f"a long-lived reader's search took {len(got)} hits of 5"
            counts["long-lived searches"] += 1
        except Exception as error:
            errors.append(repr(error)[:200])
    long_lived.close()

def checks():
    while time.time() < stop:
        try:
            report = check_index(index)
            assert report.healthy, report.summary()
            counts["checks"] += 1
        except Exception as error:
            errors.append(repr(error)[:200])

threads = [threading.Thread(target=searches), threading.Thread(target=checks)]
[t.start() for t in threads]
[t.join() for t in threads]
print(json.dumps({"counts": counts, "errors": errors}))
"""


def semsearch(source: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(source)}
    return subprocess.run([sys.executable, "-m", "semsearch", *args], env=env, capture_output=True, text=True)


def run(source: Path, first: Path, corpus: list[dict], work: Path, seconds: float) -> dict:
    """The readers (a process of their own, on `source`) beside the writes, on a copy of the index `first`."""
    index = work / "index"
    shutil.rmtree(index, ignore_errors=True)
    shutil.copytree(first, index)
    env = {**os.environ, "PYTHONPATH": str(source)}
    readers = subprocess.Popen(
        [sys.executable, "-c", READER, str(index), str(seconds), *QUERIES],
        env=env,
        stdout=subprocess.PIPE,
        text=True,
    )
    rng, gone, writes, failed = random.Random(1), set(), 0, []
    stop = time.time() + seconds

    def batch(n: int, tag: str, deleting: bool = False) -> tuple[Path, list[str]]:
        chosen = rng.sample([d for d in corpus if d["_id"] not in gone], n)
        for d in chosen:
            (gone.add if deleting else gone.discard)(d["_id"])
        path = work / f"{tag}.jsonl"
        path.write_text("".join(json.dumps({**d, "text": f"{d['text']} ({tag})"}) + "\n" for d in chosen))
        return path, [d["_id"] for d in chosen]

    while time.time() < stop:
        writes += 1
        step = writes % 4
        if step == 0:
            args = ("ingest", str(batch(60, f"u{writes}")[0]), "--index", str(index), "-q")
        elif step == 1:
            args = ("delete", "--index", str(index), *batch(10, f"d{writes}", deleting=True)[1])
        elif step == 2:
            args = ("refit", "--index", str(index), "--calibrate")
        else:
            args = ("ingest", str(batch(30, f"v{writes}")[0]), "--index", str(index), "-q", "--refit", "auto")
        if (done := semsearch(source, *args)).returncode:
            failed.append(f"{args[0]}: {done.stderr.strip().splitlines()[-1:]}")
    read = json.loads(readers.communicate()[0])
    return {"writes": writes, "failed writes": failed, **read}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=150)
    parser.add_argument("--work", type=Path, default=Path("/tmp/concurrent-reads"))
    parser.add_argument("--against", type=Path, help="another semsearch's src directory, run after this one")
    args = parser.parse_args()
    from semsearch.evaluation.longdoc_sets import sts_retrieval

    args.work.mkdir(parents=True, exist_ok=True)
    beir = sts_retrieval([DATA / "stsb" / "sts-dev.csv"], args.work / "converted")
    corpus = [json.loads(line) for line in (beir / "corpus.jsonl").open()]
    first = args.work / "first"
    if not (first / "manifest.json").is_file():
        shutil.rmtree(first, ignore_errors=True)
        done = semsearch(REPO / "src", "ingest", str(beir / "corpus.jsonl"), "--index", str(first), "-q")
        assert done.returncode == 0, done.stderr
    rows = {"this tree": run(REPO / "src", first, corpus, args.work, args.seconds)}
    if args.against is not None:
        rows["--against"] = run(args.against.resolve(), first, corpus, args.work, args.seconds)
    lines = results_header(
        "Readers beside a writer", f"{len(corpus):,} documents, {args.seconds:g} s a run", __doc__
    )
    lines += ["", "| semsearch | writes | opens and searches | long-lived searches | checks | errors |"]
    lines += ["|---|---|---|---|---|---|"]
    for name, row in rows.items():
        counted = row["counts"]
        lines.append(
            f"| {name} | {row['writes']} ({len(row['failed writes'])} failed) | "
            f"{counted['opens and searches']} | {counted['long-lived searches']} | {counted['checks']} | "
            f"{len(row['errors'])} |"
        )
    for name, row in rows.items():
        shown = row["errors"][:10] + row["failed writes"][:10]
        if shown:
            lines += ["", f"{name}, the first errors:", "", *[f"- `{error}`" for error in shown]]
    print("\n".join(lines))
    (OUT / "concurrent-reads.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if not DATA.is_dir():
        raise SystemExit(f"needs the shared data sets in {DATA}")
    main()
