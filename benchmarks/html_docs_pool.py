"""Real documentation HTML (issue 34): html_docs.py's runs of several packages taken together, known item by
known item. Each run's benchmarks/results/html-docs-NAME-items.json holds every known item's nDCG@10 by corpus
and mode; here, per package and over all their known items, each corpus's nDCG@10 and the folder minus the
whole page and minus the main content per known item (mean, standard error, how many rank their page higher and
lower), by dense, keyword and hybrid: whether "at least as good" holds beyond the noise of each package's few
queries, and whether one package carries the pool. Written to benchmarks/results/OUT.md.

    .venv/bin/python benchmarks/html_docs_pool.py --pool 12c-django,12c-sphinx,12c-scrapy [--pool ...]
                                                  [--out NAME] [--folder "folder (same)"]

Each --pool is a table of its own (a package's row, and one for them all).
"""

from __future__ import annotations

import argparse
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
from scale import command_line

OUT = Path(__file__).resolve().parent / "results"
MODES = ("dense", "keyword", "hybrid")
BASELINES = ("whole page JSONL", "main content JSONL")


def difference(diff: np.ndarray) -> str:
    """A per-known-item difference: mean (standard error; higher / lower)."""
    error = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
    return f"{diff.mean():+.3f} ({error:.3f}; {int((diff > 0).sum())}/{int((diff < 0).sum())})"


def load(name: str) -> dict:
    path = OUT / f"html-docs-{name}-items.json"
    if not path.is_file():
        raise SystemExit(f"{path}: no such file (run html_docs.py --out html-docs-{name} first)")
    return json.loads(path.read_text())


def table(runs: dict[str, dict], folder: str) -> list[str]:
    """A row per package and one for them all: nDCG@10 by corpus and mode; below, the folder's differences."""
    corpora = (*BASELINES, folder)
    groups = {name: [run] for name, run in runs.items()}
    if len(runs) > 1:
        groups[f"all {len(runs)}"] = list(runs.values())
    head = ["package (pages, known items)", *(f"{c.split()[0]} {m}" for m in MODES for c in corpora)]
    scores_head = ["package", *(f"folder minus {b.split()[0]} {m}" for b in BASELINES for m in MODES)]
    scores_lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    diff_lines = ["| " + " | ".join(scores_head) + " |", "|---" * len(scores_head) + "|"]
    page_lines = list(diff_lines)
    for name, group in groups.items():
        scores = {
            (c, m): np.concatenate([run["ndcg"][c][m] for run in group]) for c in corpora for m in MODES
        }
        pages = sum(run.get("pages", 0) for run in group)
        cells = [f"{name} ({pages or '?'}, {len(scores[(folder, 'hybrid')])})"]
        cells += [f"{scores[(c, m)].mean():.3f}" for m in MODES for c in corpora]
        scores_lines.append("| " + " | ".join(cells) + " |")
        diffs = [difference(scores[(folder, m)] - scores[(b, m)]) for b in BASELINES for m in MODES]
        diff_lines.append(f"| {name} | " + " | ".join(diffs) + " |")
        answers = [(run["package"], page) for run in group for _, page in run["queries"]]
        diffs = [
            difference(by_page(scores[(folder, m)] - scores[(b, m)], answers))
            for b in BASELINES
            for m in MODES
        ]
        page_lines.append(f"| {name} ({len(set(answers))} pages) | " + " | ".join(diffs) + " |")
    return [
        *scores_lines,
        "",
        "The folder minus each JSONL, per known item:",
        "",
        *diff_lines,
        "",
        "The same per answer page (its known items' mean difference; where several synopses answer to one page, "
        "the page is the unit of the standard error):",
        "",
        *page_lines,
    ]


def by_page(diff: np.ndarray, answers: list[tuple[str, str]]) -> np.ndarray:
    """Each answer page's mean of its known items' differences, pages in first-seen order."""
    pages = list(dict.fromkeys(answers))
    return np.array([diff[[a == page for a in answers]].mean() for page in pages])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--pool", action="append", required=True, help="NAME,NAME: html_docs.py runs' --out less 'html-docs-'"
    )
    parser.add_argument("--folder", default="folder (same)", help="the folder row compared")
    parser.add_argument("--out", default="", help="results name in benchmarks/results/ (else printed only)")
    args = parser.parse_args()
    lines = [
        f"`{command_line()}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC. nDCG@10 of each corpus (whole "
        "page JSONL, main content JSONL, the folder) by mode; then the folder minus each JSONL per known item: "
        "mean (standard error; known items higher / lower).",
    ]
    for pool in args.pool:
        runs = {name: load(name) for name in pool.split(",")}
        missing = [n for n, r in runs.items() if not all(c in r["ndcg"] for c in (*BASELINES, args.folder))]
        if missing:
            raise SystemExit(f"{', '.join(missing)}: no {args.folder!r} or JSONL rows in the items file")
        lines += ["", f"### Pooled: {', '.join(runs)}", "", *table(runs, args.folder)]
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        (OUT / f"{args.out}.md").write_text(text)


if __name__ == "__main__":
    main()
