"""The same corpus, the same calibration and answers however it was ingested. Written to
benchmarks/results/calibration-history.md and .json.

    python -m benchmarks calibration_history history [--work DIR] [--queries 60]

STS-B dev's distinct sentences (../shared/data/stsb/sts-dev.csv), a JSONL document each, are ingested with
every default by `semsearch` processes: as one file; as three files in turn (the first third calibrates, the
next two leave it stale), then `refit --calibrate` (the calibration renewed alone, the transform fitted on the
first third kept), then `refit` (transform, vector index and calibration); and as three files ingested with
`--refit auto` (a stale calibration renewed by the ingest). Each index's calibration (mode, weight, sweep, the
targets' ranks, the bands) is compared with the one file's, and its default-mode top 10 on `--queries` STS-B
train sentences (not in the corpus).

Part `draw`: What the draw by content (retrieval/drawing.py) does to a small SMART collection's calibrated default
(held-out CISI's default 0.456 against 0.459; we have no CISI, Cranfield is its kind), beside what
the passages' overlap does to it. Written to
benchmarks/results/calibration-draw.md and .json.

    python -m benchmarks calibration_history draw --against /work/main/src [--set cranfield] [--work DIR]

One index of the set with every default (`semsearch ingest`, this tree); copies of it calibrated again
(`refit --calibrate`, the cache removed: a fresh draw) by this tree and by `--against`'s (a tree whose draw goes
by pk and seed), each a process of its own; each copy's default-mode nDCG@10 on the set's real queries. The
transform, vector index and keyword index are the same files in every copy: only the calibration differs.
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

from benchmarks.suite import DATA as SHARED
from benchmarks.suite import OUT, REPO, Rows, command_line, current_commit, require

CLAIM = "The same corpus calibrates and answers alike however it was ingested (one file, three, refit)"

DATA = REPO.parent / "shared" / "data" / "stsb"
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


def history_rows(work: Path, count: int) -> dict:
    require(DATA / "sts-dev.csv", "STS-B dev")
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
        "The benchmark's other part, the draw by content on a small SMART collection: "
        "[calibration-draw.md](calibration-draw.md).",
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


def history_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-history"))
    parser.add_argument("--queries", type=int, default=60)


def history(config: argparse.Namespace) -> Rows:
    """The same corpus as one file or three files (then refit): the same calibration and top 10 (calibration-history.md)."""
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    result = history_rows(config.work, config.queries)
    command = command_line()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration-history.json").write_text(json.dumps(result, indent=1) + "\n")
    (OUT / "calibration-history.md").write_text(report(result, command, started, load))
    print((OUT / "calibration-history.md").read_text())
    return result


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


def draw_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--against", type=Path, required=True, help="the src/ of a tree to compare with")
    parser.add_argument("--set", default="cranfield")
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-draw"))
    parser.add_argument("--overlaps", default="8,16", help="the passages' overlaps an index is built at")


def draw(config: argparse.Namespace) -> Rows:
    """What the draw by content does to a small SMART collection's calibrated default, beside the overlap (calibration-draw.md)."""
    from semsearch.evaluation.datasets import ensure_beir
    from semsearch.storage.calibrationcache import FILE

    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    source = require(SHARED / config.set, config.set)
    config.work.mkdir(parents=True, exist_ok=True)
    beir = ensure_beir(source, config.work)
    here = REPO / "src"
    rows = {}
    for overlap in config.overlaps.split(","):
        base = config.work / f"index-{overlap}"
        if not (base / "manifest.json").exists():
            shutil.rmtree(base, ignore_errors=True)
            corpus = str(beir / "corpus.jsonl")
            process(
                here, "-m", "semsearch", "ingest", corpus, "--index", str(base), "--chunk-overlap", overlap
            )
        for name, src in (("by content (this tree)", here), (f"by pk ({config.against})", config.against)):
            copy = config.work / f"{name.split()[1]}-{overlap}"
            shutil.rmtree(copy, ignore_errors=True)
            shutil.copytree(base, copy)
            (copy / FILE).unlink(missing_ok=True)
            process(src, "-m", "semsearch", "refit", "--index", str(copy), "--calibrate")
            rows[f"overlap {overlap}, draw {name}"] = json.loads(
                process(here, "-c", SCORE, str(copy), str(beir))
            )
    commit = current_commit()
    command = command_line()
    lines = [
        f"### The draw by content against the draw by pk: {config.set}'s calibrated default",
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
    return rows


PARTS = {
    "history": (history_arguments, history),
    "draw": (draw_arguments, draw),
}
