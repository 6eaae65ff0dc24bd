"""A manual's calibration (issue 52): what share of a one-PDF ingest the calibration takes, and whether the weight
it picks on places is a good weight for the manual's own known places. Written to
benchmarks/results/calibration-places.md and .json.

    .venv/bin/python benchmarks/calibration_places.py [--pdf PATH ...] [--work DIR]

Each PDF (default: Debian r-doc-pdf's R-exts.pdf and R-intro.pdf, `apt-get install r-doc-pdf`) is ingested
alone into a new index by `semsearch ingest DIR` with every default (a whole process, wall-timed); its
calibration's own seconds are read from `info`. Known places, built from the PDF's outline (pypdf): a section's
title is the query, the pages from its page to the next section's the answer. Each is ranked over the index as
it is by the calibration's own place ranking (calibration_places.place_rankings, no target taken out: each
side's 100 places), fused at every dense weight of the sweep; success@1 and MRR@10 of a place on the right page,
beside the weight the calibration chose.
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
from functools import partial
from pathlib import Path

import numpy as np
from scale import current_commit

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results"
MANUALS = Path("/usr/share/R/doc/manual")
DEFAULT_PDFS = [MANUALS / "R-exts.pdf", MANUALS / "R-intro.pdf"]


def outline_queries(pdf: Path) -> list[tuple[str, int, int]]:
    """(title, first page, last page) of every outline entry, 1-based pages, the last up to the next entry's."""
    import pypdf

    reader = pypdf.PdfReader(str(pdf))

    def walk(items):
        for item in items:
            if isinstance(item, list):
                yield from walk(item)
            else:
                yield item.title.strip(), reader.get_destination_page_number(item) + 1

    entries = [(title, page) for title, page in walk(reader.outline) if len(title.split()) >= 2]
    out = []
    for (title, page), after in zip(entries, [*entries[1:], (None, len(reader.pages))]):
        out.append((title, page, max(page, after[1])))
    return out


def known_places(
    index_path: Path, queries: list[tuple[str, int, int]], bands: dict | None = None
) -> dict[str, dict[str, float]]:
    """success@1 and MRR@10 of the known places at every dense weight of the sweep, and ("asked") at the weight
    each query takes by its length band (`bands`: the calibration's)."""
    from semsearch.index import Index
    from semsearch.ingest.creation import make_chunker
    from semsearch.ingest.pipeline import split
    from semsearch.retrieval.calibration_places import place_rankings, place_targets
    from semsearch.retrieval.drawing import document_keys
    from semsearch.retrieval.search import DenseRetriever, Match, fuse
    from semsearch.retrieval.sweep import WEIGHTS
    from semsearch.settings import Fusion

    with Index.open(index_path) as index:
        d, store = index.directory, index.store
        pks, _ = document_keys(store, 16)
        docs = store.get(pks.tolist())
        counts = store.passages().counts_of(pks)
        spans = store.spans([int(pk) + i for pk, n in zip(pks, counts) for i in range(n)])
        cut = partial(split, chunker=make_chunker(d.settings, lambda: d.encoder))
        targets = place_targets([], docs, counts, pks, spans, cut)  # the index as it is: nothing taken out
        dense = DenseRetriever(d.transform, d.loaded_vectors(), d.raw)
        texts = [title for title, _, _ in queries]
        dense_found, keyword_found = place_rankings(
            targets, store, dense, d.encoder.encode, d.settings.rerank, texts
        )
        pages = {
            row: loc.get("page") for row, loc in store.locations([r for r, _, _ in targets.passages]).items()
        }
    from semsearch.retrieval.lengths import band_of

    def band_weight(text: str) -> float:
        band = (bands or {}).get(band_of(text))
        return {"dense": 1.0, "keyword": 0.0}.get(band["mode"], band["alpha"]) if band else -1.0

    out = {}
    for weight in [*WEIGHTS, None]:
        first, reciprocal = [], []
        for (text, low, high), dn, kw in zip(queries, dense_found, keyword_found):
            if weight is None:
                weight_now = band_weight(text)
                if weight_now < 0:
                    break
            else:
                weight_now = weight
            dense_list = [Match(int(p), float(s)) for p, s in zip(dn.pks, dn.scores)]
            keyword_list = [Match(int(p), float(s)) for p, s in zip(kw.pks, kw.scores)]
            if weight_now == 1.0:
                ranked = dense_list[:10]
            elif weight_now == 0.0:
                ranked = keyword_list[:10]
            else:
                ranked = fuse(dense_list, keyword_list, weight_now, Fusion.CONVEX, 10)
            hits = [
                r
                for r, m in enumerate(ranked, 1)
                if pages.get(m.pk) is not None and low <= pages[m.pk] <= high
            ]
            first.append(1.0 if hits and hits[0] == 1 else 0.0)
            reciprocal.append(1.0 / hits[0] if hits else 0.0)
        if not first:
            continue
        out["asked" if weight is None else f"{weight:.1f}"] = {
            "success@1": round(float(np.mean(first)), 4),
            "mrr@10": round(float(np.mean(reciprocal)), 4),
        }
    return out


def run(pdf: Path, work: Path) -> dict:
    folder, index = work / pdf.stem, work / f"{pdf.stem}-index"
    shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(index, ignore_errors=True)
    folder.mkdir(parents=True)
    shutil.copy(pdf, folder / pdf.name)
    env = {**os.environ, "OMP_NUM_THREADS": os.environ.get("OMP_NUM_THREADS", "1")}
    started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-m", "semsearch", "ingest", str(folder), "--index", str(index)],
        check=True,
        env=env,
        capture_output=True,
    )
    wall = time.perf_counter() - started
    info = json.loads(
        subprocess.run(
            [sys.executable, "-m", "semsearch", "info", "--index", str(index), "--json"],
            check=True,
            capture_output=True,
            text=True,
            env=env,
        ).stdout
    )
    calibration = info["calibration"]
    queries = outline_queries(pdf)
    return {
        "pdf": str(pdf),
        "pages": queries[-1][2] if queries else None,
        "passages": calibration.get("passages"),
        "ingest_s": round(wall, 1),
        "calibration_s": calibration.get("seconds"),
        "share": round(calibration.get("seconds", 0) / wall, 3),
        "targets": calibration.get("targets"),
        "queries": calibration.get("queries"),
        "mode": calibration.get("mode"),
        "alpha": calibration.get("alpha"),
        "sweep": calibration.get("sweep"),
        "known_queries": len(queries),
        "bands": {
            name: (band["mode"], band["alpha"]) for name, band in (calibration.get("bands") or {}).items()
        },
        "known": known_places(index, queries, calibration.get("bands")),
    }


def chosen_weight(row: dict) -> str:
    return {"dense": "1.0", "keyword": "0.0"}.get(row["mode"], f"{row['alpha']:.1f}")


def figures(known: dict, weight: str) -> str:
    return f"{known[weight]['success@1']:.3f} / {known[weight]['mrr@10']:.3f}"


def report(rows: list[dict], command: str, started: str, load: float) -> str:
    commit = current_commit()
    lines = [
        "### A manual's calibration on places: its share of the ingest and its weight on known places",
        "",
        f"`{command}`, commit {commit}, {started}, 1-minute load {load:.1f} (2 shared cores).",
        "",
        "Each PDF alone ingested by `semsearch ingest DIR` (every default, wall seconds of the whole process);",
        "`calibration s` the calibration's own, from `info`. Known places: the PDF outline's section titles",
        "(two words at least) as queries, the section's pages the answer, ranked by the calibration's place",
        "ranking over the index as it is; s@1 / MRR@10 at keyword alone, the chosen weight, the weight each",
        "query takes by its length band (`by band`: the titles are short), dense alone and the best weight.",
        "",
        "| PDF | pages | passages | ingest s | calibration s | share | targets | chose | known places | keyword | chosen | by band | dense | best |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        known = row["known"]
        best = max((w for w in known if w != "asked"), key=lambda w: (known[w]["mrr@10"], w))
        cell = partial(figures, known)
        chose = row["mode"] if row["mode"] != "hybrid" else f"hybrid {row['alpha']}"
        lines.append(
            f"| {Path(row['pdf']).name} | {row['pages']} | {row['passages']:,} | {row['ingest_s']} | "
            f"{row['calibration_s']:.1f} | {row['share']:.1%} | {row['targets']} ({row['queries']}) | {chose} | "
            f"{row['known_queries']} | {cell('0.0')} | {cell(chosen_weight(row))} | "
            f"{cell('asked') if 'asked' in known else '-'} | {cell('1.0')} | "
            f"{best}: {cell(best)} |"
        )
    lines += ["", "Bands chosen: " + "; ".join(f"{Path(r['pdf']).name} {r['bands']}" for r in rows)]
    lines += [
        "",
        "The calibration's own sweep (nDCG@10 of its place pseudo-queries) and the known places' MRR@10:",
        "",
    ]
    weights = list(rows[0]["sweep"]) if rows else []
    lines += ["| PDF | | " + " | ".join(weights) + " |", "|---|---|" + "---|" * len(weights)]
    for row in rows:
        name = Path(row["pdf"]).name
        lines.append(f"| {name} | sweep | " + " | ".join(f"{row['sweep'][w]:.3f}" for w in weights) + " |")
        lines.append(
            f"| {name} | known | " + " | ".join(f"{row['known'][w]['mrr@10']:.3f}" for w in weights) + " |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pdf", type=Path, action="append")
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-places"))
    args = parser.parse_args()
    pdfs = args.pdf or DEFAULT_PDFS
    missing = [pdf for pdf in pdfs if not pdf.is_file()]
    if missing:
        sys.exit(f"not found: {', '.join(map(str, missing))} (apt-get install r-doc-pdf)")
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    rows = [run(pdf, args.work) for pdf in pdfs]
    command = "python benchmarks/calibration_places.py " + " ".join(sys.argv[1:])
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration-places.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "calibration-places.md").write_text(report(rows, command.strip(), started, load))
    print((OUT / "calibration-places.md").read_text())


if __name__ == "__main__":
    main()
