"""Defaults on corpora nobody tuned for (issue 26): per set, dense, keyword, the calibrated default (a fixed
weight), the weight per query, the oracle weight, at each passage length; written to
benchmarks/results/defaults.md (with the commands) and defaults-passages.png.

    python -m benchmarks defaults [--sets NAME,...] [--chunks 64,128,256] [--work DIR] [--collect]

The sets are built in code from ../shared/data (semsearch.evaluation.longdoc_sets): mixed-topic long documents
(SciFact: its judged abstracts and others drawn up to 1,000, ten to a document; Cranfield: all 1,400), single-
topic long documents (Cranfield: one query's relevant documents together), a SciFact subset (its judged
abstracts and others up to 1,500, as they are), Cranfield itself, and STS-B sentences as retrieval (one-sentence
documents). Each is measured by `semsearch bench --beir DIR` with the defaults (int8, whiten P=0.5 to 128 dims,
rerank 100) at each passage length; --collect only gathers the bench results already in --work.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

from benchmarks.suite import DATA, OUT, REPO, Rows, command_line

CLAIM = "The defaults on corpora nobody tuned for: dense, keyword, the calibrated default, per query, oracle, by passage length"

ALPHAS = "0.1,0.2,0.3,0.4,0.5,0.6,0.7,0.8,0.9"
METRIC = "ndcg@10"
OVERLAP_SECTION = "## Passage overlap"  # overlap.py's section, at the end of defaults.md


def build(name: str, sets: Path) -> tuple[Path, bool]:
    """The set's BEIR directory, and whether its documents are long (swept over passage lengths)."""
    from semsearch.evaluation import longdoc_sets as built
    from semsearch.evaluation.datasets import ensure_beir

    cranfield = ensure_beir(DATA / "cranfield", sets / "converted")
    makers = {
        "scifact-mixed": lambda: built.mixed_topic(DATA / "scifact", sets / name, subset=1000),
        "cranfield-mixed": lambda: built.mixed_topic(cranfield, sets / name),
        "cranfield-single": lambda: built.single_topic(cranfield, sets / name),
        "scifact-sub": lambda: built.documents_subset(DATA / "scifact", sets / name, subset=1500),
        "cranfield": lambda: cranfield,
        "wordnet-glossary": lambda: built.glossary(DATA / "wordnet" / "corpus.jsonl", sets / name),
        "scifact-mixed-b": lambda: built.mixed_topic(DATA / "scifact", sets / name, subset=1000, seed=27),
        "scifact-catalogue": lambda: built.catalogue(DATA / "scifact", sets / name),
        "stsb-retrieval": lambda: built.sts_retrieval(
            [DATA / "stsb" / "sts-dev.csv", DATA / "stsb" / "sts-train.csv"], sets / name
        ),
    }
    return makers[name](), name != "stsb-retrieval"


def bench(directory: Path, chunks: str, work: Path, out: Path) -> None:
    args = [
        "bench", "--beir", str(directory), "--transforms", "whiten", "--powers", "0.5", "--dims", "128",
        "--rerank", "100", "--modes", "dense,keyword,hybrid", "--alphas", ALPHAS, "--quantize", "int8",
        "--chunk-tokens", chunks, "--work", str(work / "bench"), "--out", str(out),
    ]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(REPO / "src")}
    subprocess.run([sys.executable, "-m", "semsearch", *args], check=True, env=env, capture_output=True)


def summary(rows: list[dict]) -> list[dict]:
    """A row per passage length: each side, the calibrated default, per query, the oracle."""
    out = []
    for chunk in sorted({r["chunk_tokens"] for r in rows}):
        # newest first: a bench run again over the same --out appends its rows after the earlier run's
        at = [r for r in reversed(rows) if r["chunk_tokens"] == chunk]
        dense = next(r[METRIC] for r in at if r["mode"] == "dense" and not r.get("calibrated"))
        keyword = next(r[METRIC] for r in at if r["mode"] == "keyword" and not r.get("calibrated"))
        latest = {r["alpha"]: r for r in reversed(at) if r["mode"] == "hybrid" and not r.get("calibrated")}
        swept = list(latest.values())
        oracle = max(swept, key=lambda r: r[METRIC])
        fixed = next((r for r in at if r.get("calibrated") and r.get("weighting", "fixed") == "fixed"), None)
        per_query = next((r for r in at if r.get("weighting") == "per-query"), None)
        better = max(dense, keyword)
        out.append(
            {
                "set": at[0]["dataset"],
                "passage tokens": chunk,
                "documents": at[0]["documents"],
                "passages": at[0]["passages"],
                "dense": dense,
                "keyword": keyword,
                "calibrated": "not calibrated"
                if fixed is None
                else (fixed["mode"] if fixed["mode"] != "hybrid" else f"hybrid {fixed['alpha']:g}"),
                "default": fixed[METRIC] if fixed else next(r[METRIC] for r in swept if r["alpha"] == 0.5),
                "per-query": per_query[METRIC] if per_query else None,
                "oracle": f"{oracle[METRIC]:.4f} at {oracle['alpha']:g}",
                "default - better side": round((fixed[METRIC] if fixed else 0) - better, 4)
                if fixed
                else None,
                "per-query - better side": round(per_query[METRIC] - better, 4) if per_query else None,
                "calibration s": fixed and fixed.get("calibration_s"),
                "ingest s": round(at[0]["documents"] / at[0]["ingest_docs_per_s"], 1),
            }
        )
        ingest_s = at[0]["documents"] / at[0]["ingest_docs_per_s"]
        out[-1]["calibration share"] = (
            f"{100 * fixed['calibration_s'] / ingest_s:.1f}%" if fixed and fixed.get("calibration_s") else ""
        )
    return out


def verdict(tables: dict[str, list[dict]]) -> list[str]:
    """The passage length with the best mean default over the swept sets, and the fixed weight against the
    weight per query over every row."""
    swept = {name: rows for name, rows in tables.items() if len(rows) > 1}
    lines = ["## Summary", ""]
    for chunk in sorted({r["passage tokens"] for rows in swept.values() for r in rows}):
        values = [r["default"] for rows in swept.values() for r in rows if r["passage tokens"] == chunk]
        worst = max(
            max(r["default"] for r in rows) - next(r["default"] for r in rows if r["passage tokens"] == chunk)
            for rows in swept.values()
        )
        lines.append(
            f"- {chunk} tokens: mean default {sum(values) / len(values):.4f} over {len(values)} sets; at most "
            f"{worst:.4f} below a set's best length"
        )
    pairs = [
        (r["default"], r["per-query"]) for rows in tables.values() for r in rows if r["per-query"] is not None
    ]
    wins = sum(q > d for d, q in pairs)
    mean = sum(q - d for d, q in pairs) / len(pairs)
    lines += [
        f"- weight per query against the fixed calibrated weight: better in {wins} of {len(pairs)} rows, mean "
        f"{mean:+.4f}: the fixed weight stays the default",
        f"- the default against the better of dense and keyword: at least "
        f"{min(r['default - better side'] for rows in tables.values() for r in rows):+.4f} in every row",
        "",
    ]
    return lines


def plot(tables: dict[str, list[dict]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(7, 4.5))
    for name, rows in tables.items():
        if len(rows) < 2:
            continue
        chunks = [r["passage tokens"] for r in rows]
        line = axes.plot(chunks, [r["default"] for r in rows], marker="o", label=f"{name}: default")[0]
        axes.plot(chunks, [r["dense"] for r in rows], linestyle="--", color=line.get_color(), label="dense")
    axes.set_xscale("log", base=2)
    axes.set_xlabel("passage tokens")
    axes.set_ylabel(METRIC)
    axes.set_title("Passage length: the calibrated default (solid) and dense (dashed)")
    axes.legend(fontsize=6)
    figure.tight_layout()
    figure.savefig(path, dpi=120)


def kept_sections(path: Path) -> str:
    """The sections other benchmarks write at the end of defaults.md (overlap.py's "Passage overlap"), kept
    when this one writes the file again."""
    text = path.read_text() if path.is_file() else ""
    at = text.find(f"\n{OVERLAP_SECTION}")
    return text[at:] if at >= 0 else ""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--sets",
        default="scifact-sub,cranfield,stsb-retrieval,scifact-mixed,cranfield-mixed,cranfield-single",
    )
    parser.add_argument("--chunks", default="64,128,256")
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "defaults-bench")
    parser.add_argument("--collect", action="store_true", help="only gather the results already in --work")


def run(config: argparse.Namespace) -> Rows:
    tables, commands = {}, []
    for name in config.sets.split(","):
        directory, long = build(name, config.work / "sets")
        out = config.work / "out" / name
        if not config.collect:
            bench(directory, config.chunks if long else "256", config.work, out)
        rows = json.loads((out / "results.json").read_text())
        commands += list(dict.fromkeys(row["command"] for row in rows))
        tables[name] = summary(rows)
        print(tables[name], file=sys.stderr)
    command = command_line()
    from benchmarks.suite import markdown_table

    lines = [
        "# Defaults on corpora nobody tuned for (issue 26)",
        "",
        f"Command: `{command.strip()}` ({datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC), which gathered the results of:",
        "",
        *[f"    {c}" for c in commands],
        "",
        f"{METRIC}; `default` is the calibrated fixed weight (hybrid 0.5 where not calibrated); the oracle is "
        "the best swept weight for the real queries. 2 cores shared with other work: ingest and calibration "
        "seconds swing 2x. Subsets where the figure allows (the machine's 2 cores were shared): scifact-sub "
        "is SciFact's 339 judged abstracts and others drawn up to 1,500 (its figures are above full SciFact's, "
        "fewer distractors), scifact-mixed its judged abstracts and others up to 1,000, ten to a document. "
        "Full SciFact was not swept; ingested once with every default (Index.create, ingest, the 300 test "
        "queries by search_vectors; 64-token passages: 62,449 passages, 160 s whole ingest, calibration 3.2 s, "
        "hybrid 0.4 chosen by 255 pseudo-queries; 2026-11-25, after issue 25's keyword engine): dense 0.6739, "
        "keyword 0.6890, the default 0.7307 (issue 26's run: keyword 0.6870, hybrid 0.5, 0.7261; at 256 tokens "
        "0.7324, benchmarks/results/calibration/scifact). stsb-retrieval's sentences are one passage at any length. "
        "The per-set bench tables and plots: benchmarks/results/defaults/.",
        "",
        "Each set's `semsearch bench` output: "
        + ", ".join(
            f"[{s}](defaults/{s}/results.md)"
            for s in tables
            if (OUT / "defaults" / s / "results.md").is_file()
        )
        + ". The plot: [defaults-passages.png](defaults-passages.png); the passage overlap's data: "
        "[overlap.json](overlap.json).",
        "",
    ]
    lines += verdict(tables)
    for name, rows in tables.items():
        lines += [f"## {name}", "", *markdown_table(rows), ""]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "defaults.md").write_text("\n".join(lines) + kept_sections(OUT / "defaults.md"))
    (OUT / "defaults.json").write_text(json.dumps({"command": command, "sets": tables}, indent=1) + "\n")
    plot(tables, OUT / "defaults-passages.png")
    print("\n".join(lines))
    return rows
