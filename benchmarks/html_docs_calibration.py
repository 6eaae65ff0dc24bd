"""Real documentation HTML (issue 34): the fusion weight the folder and the whole-page JSONL calibrate, and the
known items' nDCG@10 at it, with the calibration of the tree this runs on (no ingest). html_docs.py's indexes
(its --work of each package) are copied, their calibration cache removed (so the draw is a fresh one, as an
ingest's), each copy recalibrated (`Index.recalibrate`, as `semsearch refit --calibrate` does) and searched by
the known items (html_docs.known_items: each module's synopsis, its page the answer) in every mode and the
index's default. Run once per tree (`run`, under PYTHONPATH of that tree's src, --label naming it), then
`report` sets the labels side by side: per package and over all known items, the weight chosen, the
pseudo-queries drawn and per document, and the folder minus the whole page per known item (mean, standard
error, higher / lower), written to benchmarks/results/OUT.md (each label's rows in OUT-LABEL.json).

    PYTHONPATH=/work/main/src python benchmarks/html_docs_calibration.py run --label before [--work /tmp/w10h]
                                                                         [--copies /tmp/w11c] [--packages ...]
    PYTHONPATH=src python benchmarks/html_docs_calibration.py run --label after [--seeds 16,17,18,19,20]
    python benchmarks/html_docs_calibration.py report --labels before,after [--out html-docs-calibration]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path

import html_docs as hd
import numpy as np
from html_docs_scoring import gains, paired_cell, rank_of
from scale import command_line

OUT = Path(__file__).resolve().parent / "results"
PACKAGES = {  # name -> (the package's HTML, the --work folder of html_docs.py under --work)
    "django": (Path("/usr/share/doc/python-django-doc/html"), "django10"),
    "sphinx": (Path("/usr/share/doc/sphinx-doc/html"), "sphinx"),
    "scrapy": (Path("/usr/share/doc/python-scrapy-doc/html"), "scrapy"),
    # session 12's (--work /tmp/w12c; statsmodels' html_docs.py run took --text-kb 1200 of its 6,058 pages)
    "pymongo": (Path("/usr/share/doc/python-pymongo-doc/html"), "pymongo"),
    "ldap": (Path("/usr/share/doc/python-ldap-doc/html"), "ldap"),
    "statsmodels": (Path("/usr/share/doc/python-statsmodels-doc/html"), "statsmodels"),
}
CORPORA = ("whole page JSONL", "folder (same)")  # the folder as the defaults ingest it (merge "same")
MODES = ("dense", "keyword", "hybrid", "default")


def recalibrated(source: Path, copy: Path, queries: list[tuple[str, str]], seeds: list[int]) -> dict:
    """`source` copied to `copy` without its calibration cache, recalibrated, and searched by the known items;
    and calibrated with each of `seeds` (nothing recorded), the known items searched by hybrid at its weight."""
    from semsearch import Index
    from semsearch.operations.calibrating import calibration
    from semsearch.storage.calibrationcache import FILE, CalibrationCache, encoder_name

    shutil.rmtree(copy, ignore_errors=True)
    shutil.copytree(source, copy)
    (copy / FILE).unlink(missing_ok=True)
    texts = [query for query, _ in queries]
    with Index.open(copy) as index:
        began, cpu = time.perf_counter(), time.process_time()
        index.recalibrate()
        seconds, cpu = time.perf_counter() - began, time.process_time() - cpu
        record = index.state.calibration
        panel = CalibrationCache.load(copy, encoder_name(index.settings)).panel
        ranks = {
            mode: [
                rank_of([hit.id for hit in hits], answer)
                for hits, (_, answer) in zip(
                    index.search_many(texts, k=10, mode=None if mode == "default" else mode), queries
                )
            ]
            for mode in MODES
        }
        by_seed = {}
        for seed in seeds:  # how sure the weight is: other draws of the same rule
            drawn = calibration(index.directory, seed=seed)
            hits = index.search_many(texts, k=10, mode="hybrid", alpha=drawn.alpha)
            by_seed[str(seed)] = {
                "mode": drawn.mode,
                "alpha": drawn.alpha,
                "queries": drawn.queries,
                "hybrid": [
                    rank_of([h.id for h in found], answer) for found, (_, answer) in zip(hits, queries)
                ],
            }
    per_document = Counter(Counter(panel[:, 0].tolist()).values())
    return {
        "calibration": {k: record.get(k) for k in ("mode", "alpha", "queries", "rule", "sweep", "documents")}
        | {"passages": record.get("passages"), "bands": _band_weights(record)},
        "drawn": len(panel),
        "per document": {str(n): per_document[n] for n in sorted(per_document)},
        "seconds": round(seconds, 1),
        "cpu seconds": round(cpu, 1),
        "ranks": ranks,
        "seeds": by_seed,
    }


def _band_weights(record: dict) -> dict[str, float] | None:
    return (
        {name: band.get("alpha") for name, band in record["bands"].items()} if record.get("bands") else None
    )


def run(args: argparse.Namespace) -> None:
    import semsearch

    rows: dict = {
        "label": args.label,
        "tree": str(Path(semsearch.__file__).resolve().parents[1]),
        "command": command_line(),
        "started": f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC",
        "load": os.getloadavg()[0],
        "packages": {},
    }
    for name in args.packages.split(","):
        root, work = PACKAGES[name]
        if not (root / "py-modindex.html").is_file() or not (args.work / work).is_dir():
            sys.exit(f"{root} or {args.work / work}: missing (apt-get install the package, run html_docs.py)")
        files = hd.pages(root)
        queries = hd.known_items(root, {f.relative_to(root).as_posix() for f in files})
        rows["packages"][name] = {"queries": queries}
        for corpus in CORPORA:
            copy = args.copies / args.label / name / corpus
            seeds = [int(seed) for seed in args.seeds.split(",") if seed]
            row = recalibrated(args.work / work / corpus, copy, queries, seeds)
            rows["packages"][name][corpus] = row
            c = row["calibration"]
            print(f"{name} {corpus}: {c['mode']} {c['alpha']} from {c['queries']} ({row['per document']})")
    rows["ended"] = f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC"
    (OUT / f"{args.out}-{args.label}.json").write_text(json.dumps(rows, separators=(",", ":")) + "\n")


def ndcg(ranks: list[int]) -> str:
    return f"{gains(ranks).mean():.3f}"


def groups(run: dict) -> list[tuple[str, list[str]]]:
    """Each package alone, then all of them together."""
    return [(name, [name]) for name in run["packages"]] + [("all", list(run["packages"]))]


def folder_minus_whole(package: dict, mode: str, seed: str | None = None) -> np.ndarray:
    """The folder's nDCG@10 minus the whole page's per known item, in `mode` (at `seed`'s weight: hybrid)."""
    folder, whole = package["folder (same)"], package["whole page JSONL"]
    if seed is None:
        return gains(folder["ranks"][mode]) - gains(whole["ranks"][mode])
    return gains(folder["seeds"][seed][mode]) - gains(whole["seeds"][seed][mode])


def report(args: argparse.Namespace) -> None:
    runs = {
        label: json.loads((OUT / f"{args.out}-{label}.json").read_text()) for label in args.labels.split(",")
    }
    lines = [
        "### The weight a folder of few long pages calibrates (issue 34)",
        "",
        f"`{command_line()}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, from:",
        "",
        *(
            f"- {label}: `{r['command']}` (tree {r['tree']}), {r['started']} to {r['ended']}, load {r['load']:.1f}"
            for label, r in runs.items()
        ),
        "",
        "Each index recalibrated from a fresh draw (its cache removed) and searched by the known items.",
        "`drawn`: pseudo-queries drawn (documents giving 1, 2, ... of them); `kept`: those with a target, which",
        "the sweep scored; hybrid at the index's weights (its bands by query length).",
        "",
        "| package | corpus | run | drawn (per document: documents) | kept | chose | dense | keyword | hybrid "
        "| default | calibration CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    first = next(iter(runs.values()))
    for name in first["packages"]:
        for corpus in CORPORA:
            for label, r in runs.items():
                row = r["packages"][name][corpus]
                c = row["calibration"]
                spread = ", ".join(f"{n}: {d}" for n, d in row["per document"].items())
                lines.append(
                    f"| {name} | {corpus} | {label} | {row['drawn']} ({spread}) | {c['queries']} | "
                    f"{c['mode']} {c['alpha']} | "
                    + " | ".join(ndcg(row["ranks"][mode]) for mode in MODES)
                    + f" | {row['cpu seconds']} |"
                )
    lines += [
        "",
        "The folder minus the whole page per known item, mean (standard error; higher / lower):",
        "",
        "| package | run | dense | hybrid | default |",
        "|---|---|---|---|---|",
    ]
    for name, names in groups(first):
        for label, r in runs.items():
            cells = [
                paired_cell(np.concatenate([folder_minus_whole(r["packages"][n], mode) for n in names]))
                for mode in ("dense", "hybrid", "default")
            ]
            count = sum(len(r["packages"][n]["queries"]) for n in names)
            lines.append(f"| {name} ({count}) | {label} | " + " | ".join(cells) + " |")
    seeds = list(first["packages"][next(iter(first["packages"]))][CORPORA[0]].get("seeds", {}))
    if seeds:
        lines += [
            "",
            f"Calibrated with seeds {', '.join(seeds)} (the default 16 among them: each a draw of its own, "
            "nothing recorded): the weights chosen, and the folder minus the whole page per known item by hybrid "
            "at the weights each seed chose, each known item's mean over the seeds (mean, standard error; higher / "
            "lower):",
            "",
            "| package | run | whole page weights | folder weights | folder minus whole page, hybrid |",
            "|---|---|---|---|---|",
        ]
        for name, names in groups(first):
            for label, r in runs.items():
                diff = np.concatenate(  # each known item's mean over the seeds
                    [
                        np.mean(
                            [folder_minus_whole(r["packages"][n], "hybrid", seed) for seed in seeds], axis=0
                        )
                        for n in names
                    ]
                )
                weights = [
                    " ".join(f"{r['packages'][name][c]['seeds'][seed]['alpha']:g}" for seed in seeds)
                    if name != "all"
                    else ""
                    for c in CORPORA
                ]
                lines.append(f"| {name} | {label} | {weights[0]} | {weights[1]} | {paired_cell(diff)} |")
    if len(runs) == 2:
        (before, b), (after, a) = runs.items()
        lines += ["", f"{after} minus {before} per known item, hybrid:", "", "| package | corpus | hybrid |"]
        lines.append("|---|---|---|")
        for name in first["packages"]:
            for corpus in CORPORA:
                diff = gains(a["packages"][name][corpus]["ranks"]["hybrid"]) - gains(
                    b["packages"][name][corpus]["ranks"]["hybrid"]
                )
                lines.append(f"| {name} | {corpus} | {paired_cell(diff)} |")
    text = "\n".join(lines) + "\n"
    print(text)
    (OUT / f"{args.out}.md").write_text(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("run", "report"))
    parser.add_argument("--label", default="after", help="run: this tree's name in the report")
    parser.add_argument("--labels", default="before,after", help="report: the runs, in order")
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/w10h"), help="html_docs.py's --work folders' root"
    )
    parser.add_argument("--copies", type=Path, default=Path("/tmp/w11c"), help="where the copies go")
    parser.add_argument("--packages", default="django,sphinx,scrapy")
    parser.add_argument("--out", default="html-docs-calibration")
    parser.add_argument("--seeds", default="", help="run: seeds to calibrate with besides (SEED,SEED,...)")
    args = parser.parse_args()
    run(args) if args.action == "run" else report(args)


if __name__ == "__main__":
    main()
