"""What the draw by content (retrieval/drawing.py) does to a small SMART collection's calibrated default
(issue 53: held-out CISI's default 0.456 against 0.459; we have no CISI, Cranfield is its kind), beside what
the passages' overlap does to it. Written to
benchmarks/results/calibration-draw.md and .json.

    .venv/bin/python benchmarks/calibration_draw.py --against /work/main/src [--set cranfield] [--work DIR]

One index of the set with every default (`semsearch ingest`, this tree); copies of it calibrated again
(`refit --calibrate`, the cache removed: a fresh draw) by this tree and by `--against`'s (a tree whose draw goes
by pk and seed), each a process of its own; each copy's default-mode nDCG@10 on the set's real queries. The
transform, vector index and keyword index are the same files in every copy: only the calibration differs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from scale import current_commit

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
OUT = REPO / "benchmarks" / "results"
SCORE = """
import json, sys
from semsearch import Index
from semsearch.evaluation.datasets import load_beir
from semsearch.evaluation.metrics import evaluate_run
data = load_beir(sys.argv[2])
ids = list(data.queries)
with Index.open(sys.argv[1]) as index:
    hits = index.search_many([data.queries[q] for q in ids], k=10, crop=0)
    c = index.state.calibration
run = {q: {h.id: h.score for h in found} for q, found in zip(ids, hits)}
scores = evaluate_run(data.qrels, run, ["ndcg@10"])
bands = {n: (b["mode"], b["alpha"]) for n, b in (c.get("bands") or {}).items()}
print(json.dumps({"ndcg@10": scores["ndcg@10"], "mode": c["mode"], "alpha": c["alpha"], "bands": bands,
                  "sides": c["sides"], "queries": c["queries"]}))
"""


def process(src: Path, *args: str, capture: bool = False) -> str:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    done = subprocess.run([sys.executable, *args], check=True, capture_output=True, text=True, env=env)
    return done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, required=True, help="the src/ of a tree to compare with")
    parser.add_argument("--set", default="cranfield")
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-draw"))
    parser.add_argument("--overlaps", default="8,16", help="the passages' overlaps an index is built at")
    args = parser.parse_args()
    from semsearch.evaluation.datasets import ensure_beir
    from semsearch.storage.calibrationcache import FILE

    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    source = DATA / args.set
    if not source.exists():
        sys.exit(f"shared data not found: {source}")
    args.work.mkdir(parents=True, exist_ok=True)
    beir = ensure_beir(source, args.work)
    here = REPO / "src"
    rows = {}
    for overlap in args.overlaps.split(","):
        base = args.work / f"index-{overlap}"
        if not (base / "manifest.json").exists():
            shutil.rmtree(base, ignore_errors=True)
            corpus = str(beir / "corpus.jsonl")
            process(
                here, "-m", "semsearch", "ingest", corpus, "--index", str(base), "--chunk-overlap", overlap
            )
        for name, src in (("by content (this tree)", here), (f"by pk ({args.against})", args.against)):
            copy = args.work / f"{name.split()[1]}-{overlap}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            (copy / FILE).unlink(missing_ok=True)
            process(src, "-m", "semsearch", "refit", "--index", str(copy), "--calibrate")
            rows[f"overlap {overlap}, draw {name}"] = json.loads(
                process(here, "-c", SCORE, str(copy), str(beir))
            )
    commit = current_commit()
    command = "python benchmarks/calibration_draw.py " + " ".join(sys.argv[1:])
    lines = [
        f"### The draw by content against the draw by pk: {args.set}'s calibrated default",
        "",
        f"`{command}`, commit {commit}, {started}, 1-minute load {load:.1f} (2 shared cores).",
        "",
        "An index at each overlap (every other default); copies calibrated afresh by each tree; nDCG@10 of the default mode on the",
        "set's queries (every band by its length); `pseudo` the calibration's own figures (dense / hybrid).",
        "",
        "| index, calibrated by | chose | bands | pseudo dense / hybrid | pseudo-queries | default nDCG@10 |",
        "|---|---|---|---|---|---|",
    ]
    for name, row in rows.items():
        chose = row["mode"] if row["mode"] != "hybrid" else f"hybrid {row['alpha']}"
        bands = ", ".join(f"{band} {mode} {alpha}" for band, (mode, alpha) in row["bands"].items())
        lines.append(
            f"| {name} | {chose} | {bands} | {row['sides']['dense']:.3f} / {row['sides']['hybrid']:.3f} | "
            f"{row['queries']} | {row['ndcg@10']:.4f} |"
        )
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration-draw.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "calibration-draw.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
