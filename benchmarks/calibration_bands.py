"""What a calibration by query length (bands.py) costs, and what a cheaper one changes: on the same index, a
calibration of the sentences alone and one asking every target short and as a paragraph too (the default), and
with --against SRC the same banded calibration by another version of semsearch (SRC: its `src` directory, such as
`git archive COMMIT src` unpacked), alternated, nothing cached (each encodes its pseudo-queries and targets, as an
ingest's first calibration does); the bands each chooses and whether both versions rank every pseudo-query's
target alike (the sentences' and every band's ranks at every weight); written to
benchmarks/results/calibration/bands-cost.md.

    .venv/bin/python benchmarks/calibration_bands.py INDEX [INDEX ...] [--rounds 2] [--against SRC] [--out FILE]

Each calibration runs in a process of its own (the version's code on its path), timed inside it from the call
to its return, the encoder loaded and warmed first. The indexes are read as they are (a calibration writes
nothing); benchmarks/results/calibration/cost.md measured what a calibration costs against its ingest.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results" / "calibration" / "bands-cost.md"


def worker(path: Path, lengths: bool) -> None:
    """One calibration of the index by the semsearch on this process's path: its seconds, bands and ranks."""
    from semsearch.index import Index
    from semsearch.ingest.creation import make_chunker
    from semsearch.ingest.pipeline import split
    from semsearch.retrieval.calibration import calibrate
    from semsearch.retrieval.search import DenseRetriever

    with Index.open(path) as index:
        index.encoder.encode(["warm up"])
        started = time.perf_counter()
        chosen = calibrate(
            store=index.store,
            dense=DenseRetriever(index.transform, index.vectors, index.raw),
            encode=index.encoder.encode,
            cut=partial(split, chunker=make_chunker(index.settings, lambda: index.encoder)),
            rerank=index.settings.rerank,
            precision=index.settings.raw_precision,
            lengths=lengths,
        )
        seconds = time.perf_counter() - started
    bands = chosen.bands or {}
    print(
        json.dumps(
            {
                "seconds": seconds,
                "queries": chosen.queries,
                "passages": chosen.passages,
                "choice": f"{chosen.mode} {chosen.alpha}",
                "bands": " / ".join(
                    band["mode"] if band["mode"] != "hybrid" else f"{band['alpha']:.1f}"
                    for band in bands.values()
                ),
                "ranks": {"sentences": chosen.ranks, **{name: band["ranks"] for name, band in bands.items()}},
            }
        )
    )


def calibrated(path: Path, lengths: bool, source: Path) -> dict:
    """A calibration in a process of its own, by the semsearch in `source` (a `src` directory)."""
    env = {**os.environ, "PYTHONPATH": str(source)}
    args = [sys.executable, __file__, "--worker", str(path), *(["--lengths"] if lengths else [])]
    done = subprocess.run(args, env=env, check=True, capture_output=True, text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("indexes", nargs="+", type=Path)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--against", type=Path, help="another version's src directory, measured beside")
    parser.add_argument("--out", type=Path, default=OUT, help="the results file (bands-cost.md)")
    parser.add_argument("--note", default="", help="a line under the command: what is compared")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--lengths", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return worker(args.indexes[0], args.lengths)
    how = {"sentences alone": (False, REPO / "src"), "every target": (True, REPO / "src")}
    if args.against:
        how["every target, before"] = (True, args.against.resolve())
    rows = []
    for path in args.indexes:
        seconds: dict[str, list[float]] = {name: [] for name in how}
        chosen = {}
        for _ in range(args.rounds):
            for name, (lengths, source) in how.items():
                chosen[name] = calibrated(path, lengths, source)
                seconds[name].append(chosen[name]["seconds"])
        took = {name: min(times) for name, times in seconds.items()}
        now = chosen["every target"]
        row = {
            "index": path.name,
            "passages": now["passages"],
            "pseudo-queries": now["queries"],
            "sentences alone s": round(took["sentences alone"], 1),
            "every target s": round(took["every target"], 1),
            "ratio": round(took["every target"] / took["sentences alone"], 2),
        }
        if args.against:
            before = chosen["every target, before"]
            row["before s"] = round(took["every target, before"], 1)
            row["before ratio"] = round(took["every target, before"] / took["sentences alone"], 2)
            row["now / before"] = round(took["every target"] / took["every target, before"], 2)
            row["choice, bands before"] = f"{before['choice']}; {before['bands']}"
            row["same ranks"] = "yes" if before["ranks"] == now["ranks"] else differing(before, now)
        row["choice, bands"] = f"{now['choice']}; {now['bands']}"
        row["load (1 min)"] = round(os.getloadavg()[0], 1)
        rows.append(row)
        print(row, flush=True)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        "# What the weight per query length adds to a calibration (issue 38)",
        "",
        f"`{command_line()}` ({stamp}; 2 cores shared with other work; the faster of {args.rounds} alternated runs)",
        "",
        __doc__.split("\n\n")[0].replace("\n", " "),
        "",
        *([args.note, ""] if args.note else []),
        *markdown_table(rows),
    ]
    args.out.write_text("\n".join(lines) + "\n")


def differing(before: dict, now: dict) -> str:
    """How many pseudo-queries' target ranks differ between two versions (any weight), of how many, per list."""
    out = []
    for name, ranks in now["ranks"].items():
        old = before["ranks"].get(name) or {}
        queries = len(next(iter(ranks.values()), ""))
        moved = {i for w, r in ranks.items() for i, (a, b) in enumerate(zip(r, old.get(w, ""))) if a != b}
        out.append(f"{name} {len(moved)} of {queries}")
    return "no: " + ", ".join(out)


if __name__ == "__main__":
    main()
