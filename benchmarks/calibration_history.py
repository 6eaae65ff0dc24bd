"""The same corpus, the same calibration and answers however it was ingested (issue 53). Written to
benchmarks/results/calibration-history.md and .json.

    .venv/bin/python benchmarks/calibration_history.py [--work DIR] [--queries 60]

STS-B dev's distinct sentences (../shared/data/stsb/sts-dev.csv), a JSONL document each, are ingested with
every default by `semsearch` processes: as one file; as three files in turn (the first third calibrates, the
next two leave it stale), then `refit --calibrate` (the calibration renewed alone, the transform fitted on the
first third kept), then `refit` (transform, vector index and calibration); and as three files ingested with
`--refit auto` (a stale calibration renewed by the ingest). Each index's calibration (mode, weight, sweep, the
targets' ranks, the bands) is compared with the one file's, and its default-mode top 10 on `--queries` STS-B
train sentences (not in the corpus).
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from scale import current_commit

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data" / "stsb"
OUT = REPO / "benchmarks" / "results"
COMPARED = ("mode", "alpha", "sweep", "ranks", "bands", "queries")


def sentences(path: Path) -> list[str]:
    with open(path, newline="") as handle:
        rows = list(csv.reader(handle, delimiter="\t", quoting=csv.QUOTE_NONE))
    return list(dict.fromkeys(text for row in rows for text in row[5:7]))


def semsearch(*args: str) -> None:
    subprocess.run([sys.executable, "-m", "semsearch", *args], check=True, capture_output=True)


def state(index: Path, queries: list[str]) -> tuple[dict, list[list[str]]]:
    from semsearch import Index

    with Index.open(index) as opened:
        hits = opened.search_many(queries, k=10, crop=0)
        return dict(opened.state.calibration), [[hit.id for hit in found] for found in hits]


def run(work: Path, count: int) -> dict:
    if not (DATA / "sts-dev.csv").is_file():
        sys.exit(f"shared data not found: {DATA} (read from ../shared/data beside the repo)")
    corpus = sentences(DATA / "sts-dev.csv")
    queries = [s for s in sentences(DATA / "sts-train.csv") if s not in set(corpus)][:count]
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    docs = [{"_id": f"s{n}", "text": text} for n, text in enumerate(corpus)]
    cuts = [0, len(docs) // 3, 2 * len(docs) // 3, len(docs)]
    files = []
    for name, part in [("all", docs)] + [
        (f"part{n}", docs[a:b]) for n, (a, b) in enumerate(zip(cuts, cuts[1:]))
    ]:
        files.append(work / f"{name}.jsonl")
        files[-1].write_text("".join(json.dumps(d) + "\n" for d in part))
    whole, parts = files[0], files[1:]
    semsearch("ingest", str(whole), "--index", str(work / "one"))
    for part in parts:
        semsearch("ingest", str(part), "--index", str(work / "three"))
    rows = {"one file": state(work / "one", queries)}
    semsearch("refit", "--index", str(work / "three"), "--calibrate")
    rows["three files, refit --calibrate"] = state(work / "three", queries)
    semsearch("refit", "--index", str(work / "three"))
    rows["three files, refit"] = state(work / "three", queries)
    for part in parts:
        semsearch("ingest", str(part), "--index", str(work / "auto"), "--refit", "auto")
    rows["three files, --refit auto"] = state(work / "auto", queries)
    reference, answers = rows["one file"]
    out = {
        "sentences": len(corpus),
        "queries": len(queries),
        "parts": [b - a for a, b in zip(cuts, cuts[1:])],
    }
    for name, (calibration, found) in rows.items():
        out[name] = {
            "mode": calibration["mode"],
            "alpha": calibration["alpha"],
            "reused": calibration.get("reused"),
            "dense": calibration["sides"]["dense"],
            "hybrid": calibration["sides"]["hybrid"],
            "same": {field: calibration.get(field) == reference.get(field) for field in COMPARED},
            "same_top10": sum(a == b for a, b in zip(found, answers)),
        }
    return out


def report(result: dict, command: str, started: str, load: float) -> str:
    commit = current_commit()
    lines = [
        "### The same corpus as one file or three: the same calibration and top 10",
        "",
        f"`{command}`, commit {commit}, {started}, 1-minute load {load:.1f} (2 shared cores).",
        "",
        f"STS-B dev's {result['sentences']:,} distinct sentences, every default; three files of "
        f"{', '.join(map(str, result['parts']))}; top 10 of {result['queries']} STS-B train sentences in the "
        "default mode. `reused`: texts whose vectors the calibration cache held (spared encodings); `same`: the "
        "fields of the calibration record equal to the one file's.",
        "",
        "| ingested as | chose | dense | hybrid | reused | same calibration fields | same top 10 |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row in result.items():
        if not isinstance(row, dict):
            continue
        chose = row["mode"] if row["mode"] != "hybrid" else f"hybrid {row['alpha']}"
        same = ", ".join(field for field, equal in row["same"].items() if equal)
        differ = [field for field, equal in row["same"].items() if not equal]
        cell = "all" if not differ else f"{same} (not {', '.join(differ)})"
        lines.append(
            f"| {name} | {chose} | {row['dense']:.4f} | {row['hybrid']:.4f} | {row['reused']} | {cell} | "
            f"{row['same_top10']} of {result['queries']} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-history"))
    parser.add_argument("--queries", type=int, default=60)
    args = parser.parse_args()
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    result = run(args.work, args.queries)
    command = ("python benchmarks/calibration_history.py " + " ".join(sys.argv[1:])).strip()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration-history.json").write_text(json.dumps(result, indent=1) + "\n")
    (OUT / "calibration-history.md").write_text(report(result, command, started, load))
    print((OUT / "calibration-history.md").read_text())


if __name__ == "__main__":
    main()
