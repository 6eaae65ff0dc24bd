"""Real documentation HTML (issue 34), the rows of html_docs.py taken apart: each ingest's CPU seconds beside its
wall clock, and the known items' nDCG@10 at the calibrated weight and at fixed hybrid weights, with every
query's rank kept (appended to WORK/results.jsonl), so that two runs (the folder with a reader or chunker
changed, the whole page) can be compared query by query. Made for benchmarks/results/html-docs.md.

    .venv/bin/python benchmarks/html_docs_weights.py [--text-kb N] [--work DIR] [--tag NAME] whole folder

`whole`: the pages as one JSONL line each of their whole text (html_docs.page_record); `folder`: the pages as
a folder read by semsearch's own reader. The pages, known items and selection are html_docs.py's. CPU seconds
are this process's (the folder's parsing workers are other processes: run it under /usr/bin/time for them).
"""

from __future__ import annotations

import argparse
import json
import shutil
import time
from pathlib import Path

import html_docs as hd
import numpy as np

ALPHAS = (0.5, 0.6, 0.7, 0.8, 0.9)


def select(root: Path, text_kb: int, seed: int) -> list[Path]:
    """html_docs.py's pages: all, or (text_kb) the known items' smallest, then others drawn at random."""
    files = hd.pages(root)
    if not text_kb:
        return files
    items = {page for _, page in hd.known_items(root, {f.relative_to(root).as_posix() for f in files})}
    sizes = {f: len(hd.page_record(f, root, False)["text"]) for f in files}
    answers = sorted((f for f in files if f.relative_to(root).as_posix() in items), key=sizes.get)
    rest = [files[i] for i in np.random.default_rng(seed).permutation(len(files))]
    keep, total = [], 0
    for share, pool in ((0.5, answers), (1.0, [f for f in rest if f not in answers])):
        for f in pool:
            if total + sizes[f] <= share * text_kb * 1000:
                keep.append(f)
                total += sizes[f]
    return sorted(keep)


def evaluate(path: Path, queries: list[tuple[str, str]]) -> dict:
    """The index's calibration and each known item's rank (99: not in the top 10) by mode and fixed weight."""
    from semsearch import Index

    with Index.open(path) as index:
        calibration = index.state.calibration or {}
        out: dict = {"passages": index.state.rows, "calibration": calibration.get("alpha"), "ranks": {}}
        asked = [
            ("dense", {"mode": "dense"}),
            ("keyword", {"mode": "keyword"}),
            ("hybrid", {"mode": "hybrid"}),
        ]
        asked += [(f"hybrid {alpha}", {"mode": "hybrid", "alpha": alpha}) for alpha in ALPHAS]
        for name, options in asked:
            found = index.search_many([q for q, _ in queries], k=10, **options)
            out["ranks"][name] = [
                next((rank + 1 for rank, hit in enumerate(hits) if hit.id == answer), 99)
                for hits, (_, answer) in zip(found, queries)
            ]
    out["nDCG@10"] = {
        name: round(float(np.mean([1 / np.log2(r + 1) if r <= 10 else 0.0 for r in ranks])), 3)
        for name, ranks in out["ranks"].items()
    }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpora", nargs="+", choices=("whole", "folder"))
    parser.add_argument("--html", type=Path, default=hd.DEFAULT_HTML)
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-html-weights"))
    parser.add_argument("--text-kb", type=int, default=0)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--tag", default="", help="added to each row's name (what was changed)")
    args = parser.parse_args()
    from semsearch import Index

    root, work = args.html, args.work
    files = select(root, args.text_kb, args.seed)
    queries = hd.known_items(root, {f.relative_to(root).as_posix() for f in files})
    folder, whole = work / f"pages{args.text_kb}", work / f"whole{args.text_kb}.jsonl"
    if not folder.exists():
        for f in files:
            link = folder / f.relative_to(root)
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(f)
    if not whole.exists():
        whole.write_text("".join(json.dumps(hd.page_record(f, root, False)) + "\n" for f in files))
    print(f"{len(files)} pages, {len(queries)} known items", flush=True)
    for corpus in args.corpora:
        path = work / f"{corpus}{args.text_kb}"
        shutil.rmtree(path, ignore_errors=True)
        wall, cpu = time.perf_counter(), time.process_time()
        Index.create(path).ingest(whole if corpus == "whole" else folder)
        row = {
            "name": corpus + args.tag,
            "pages": len(files),
            "ingest s": round(time.perf_counter() - wall, 1),
            "ingest CPU s": round(time.process_time() - cpu, 1),
            **evaluate(path, queries),
        }
        print({k: v for k, v in row.items() if k != "ranks"}, flush=True)
        with open(work / "results.jsonl", "a") as out:
            out.write(json.dumps(row) + "\n")


if __name__ == "__main__":
    main()
