"""What calibrating the fusion weight (issue 16, calibration.py) costs the ingest it follows; written to
benchmarks/results/calibration/cost.md and cost.json. Quality (the calibrated weight against the sweep and the
oracle) is `semsearch bench`'s: benchmarks/results/calibration/{scifact,cranfield}/.

    .venv/bin/python benchmarks/calibration.py [--sets scifact,cranfield] [--work DIR] [--rounds 1]

Each set's corpus is ingested with the defaults by `semsearch ingest` in its own process (the first ingest
fits, so it calibrates), timed whole; the manifest says how long the calibration took and what it chose. Then
`semsearch refit` and `refit --no-calibrate` on the same index, alternated, give the calibration's cost a
second way (their difference; `refit --calibrate` alone calibrates without refitting, issue 38). The 1-minute load average is recorded with each run: the machine is shared.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

from scale import command_line, markdown_table

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results" / "calibration"
SETS = {"scifact": DATA / "scifact", "cranfield": DATA / "cranfield"}
PYTHON = sys.executable


def semsearch(*args: str) -> float:
    """Seconds a `semsearch` command takes as a whole process."""
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    started = time.perf_counter()
    subprocess.run([PYTHON, "-m", "semsearch", *args], check=True, env=env, capture_output=True)
    return time.perf_counter() - started


def measure(name: str, work: Path, rounds: int) -> dict:
    from semsearch.evaluation.datasets import ensure_beir

    corpus = ensure_beir(SETS[name], work / "converted") / "corpus.jsonl"
    index = work / f"{name}-index"
    shutil.rmtree(index, ignore_errors=True)
    load = os.getloadavg()[0]
    ingest_s = semsearch("ingest", str(corpus), "--index", str(index), "-q")
    calibration = json.loads((index / "manifest.json").read_text())["calibration"]
    refits = {"--calibrate": [], "--no-calibrate": []}
    for _ in range(rounds):
        for flag in refits:  # a refit calibrates unless told not to (--calibrate alone would only calibrate)
            refits[flag].append(
                semsearch("refit", "--index", str(index), *[flag][: flag == "--no-calibrate"])
            )
    with_s, without_s = min(refits["--calibrate"]), min(refits["--no-calibrate"])
    return {
        "set": name,
        "documents": calibration["documents"] if calibration else None,
        "ingest s (whole process)": round(ingest_s, 1),
        "calibration s (manifest)": calibration and calibration["seconds"],
        "share of the ingest": calibration and f"{100 * calibration['seconds'] / ingest_s:.1f}%",
        "refit --calibrate s": round(with_s, 2),
        "refit --no-calibrate s": round(without_s, 2),
        "difference s": round(with_s - without_s, 2),
        "pseudo-queries": calibration and calibration["queries"],
        "chosen": calibration and f"{calibration['mode']}, alpha {calibration['alpha']:g}",
        "load (1 min)": round(load, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--sets", default="scifact,cranfield")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "calibration-bench")
    parser.add_argument("--rounds", type=int, default=1)
    args = parser.parse_args()
    rows = []
    for name in args.sets.split(","):
        if not SETS[name].exists():
            print(f"skipped {name}: {SETS[name]} not found", file=sys.stderr)
            continue
        rows.append(measure(name, args.work, args.rounds))
        print(rows[-1], file=sys.stderr)
    command = command_line()
    lines = [
        "# What calibrating the fusion weight costs (issue 16)",
        "",
        f"Command: `{command.strip()}` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC). Whole `semsearch` "
        "processes with the defaults (int8 ONNX encoder, passages of 256 tokens, whiten P=0.5 to 128 dims, "
        "rerank 100); the ingest's own fit calibrates. 2 cores, shared: the load average is beside each row.",
        "",
        *markdown_table(rows),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "cost.md").write_text("\n".join(lines) + "\n")
    (OUT / "cost.json").write_text(json.dumps({"command": command, "rows": rows}, indent=1) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
