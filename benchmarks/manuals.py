"""Known places in real manuals: a section's title as the query, the pages it spans as the answer,
written to benchmarks/results/manuals.md and manuals.json.

    python -m benchmarks manuals known-places [--pdfs A.pdf B.pdf ...] [--work DIR] [--before ../main/src]

The queries are built from each manual's outline (its PDF bookmarks, read by pypdfium2): a bookmark's title,
its numbering left out ("1.2 ", "Appendix C "), is a query; its answer is the manual and the pages from the
bookmark's page to the page where the next bookmark of its level or above starts (that page too unless it starts
at the page's top). Titles that more than one bookmark carries (in any of the manuals) are left out: no page is
their answer. A hit is right when it is of the right manual at one of those pages; MRR@10 and success@1 of the
first right hit. Two ways to put the manuals into an index, each ingested with the defaults: the folder of PDFs
(a document each, its pages and outline headings its places), searched for places (`per_document=0` where the
search has it; else the document answer, a manual once at its best place, and `best place right` says how often
that place is one of the pages); and the careful user's conversion, one JSONL line per page (id, text, manual and
page as metadata). Each is searched as the index's default (hybrid, calibrated) and keyword and dense alone.
`--before` measures the same on another source tree (a checkout's src/, e.g. main before this change) in the same
run; `--variants` adds a folder ingest whose passages are encoded without their section's heading (chunking.py's
`headings` off).

Part `one-manual`: One long manual as a new user meets it: `semsearch ingest manual.pdf`, then `query -k 10 --json`. Checks the
claims reference.md makes for a corpus of one document: the answer is k distinct places with their pages, no
JSON line over 64 KB, and the calibration at most a fifth of the ingest's wall time. Written to
benchmarks/results/one-manual.md and .json.

    python -m benchmarks manuals one-manual [--pdf PATH] [--work DIR]

The default PDF is Debian's texlive-doc LuaTeX manual (324 pages; any real manual of a few hundred pages does).

Part `calibration`: A manual's calibration: what share of a one-PDF ingest the calibration takes, and whether the weight
it picks on places is a good weight for the manual's own known places. Written to
benchmarks/results/calibration-places.md and .json.

    python -m benchmarks manuals calibration [--pdf PATH ...] [--work DIR]

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
import re
import shutil
import subprocess
import sys
import time
from datetime import datetime, timezone
from functools import partial
from pathlib import Path

import numpy as np

from benchmarks.suite import (
    OUT,
    REPO,
    Rows,
    command_line,
    current_commit,
    markdown_table,
    require,
    results_header,
)

CLAIM = "Known places in real manuals (a section's title, its pages), one manual as a new user meets it, a manual's calibration"

MANUALS = (
    "/usr/share/R/doc/manual/R-intro.pdf",  # r-doc-pdf
    "/usr/share/R/doc/manual/R-exts.pdf",
    "/usr/share/doc/asymptote/asymptote.pdf",  # asymptote-doc
    "/usr/share/doc/lilypond/html/Documentation/learning.pdf",  # lilypond-doc-pdf
)
NUMBERING = re.compile(
    r"^(?:(?:Appendix|Chapter|Part)\s+[0-9A-Z]{1,3}:?|[0-9]{1,3}(?:\.[0-9]{1,3})*\.?|[A-Z](?:\.[0-9]{1,3})+\.?)\s+"
)
TOP_SHARE = 0.85  # a bookmark whose target is above this share of its page's height starts at the page's top
MODES = (None, "keyword", "dense")  # None: the index's default
K = 10


def known_places(pdfs: list[Path]) -> list[dict]:
    """Each bookmark's query (its title, numbering left out) and answer (manual, pages), unique titles only."""
    import pypdfium2 as pdfium

    found = []
    for pdf in pdfs:
        document = pdfium.PdfDocument(pdf)
        marks = []
        for mark in document.get_toc(max_depth=8):
            destination = mark.get_dest()
            index = destination.get_index() if destination is not None else None
            if index is None:
                continue
            _, view = destination.get_view()
            height = document[index].get_height()
            top = len(view) < 2 or view[1] >= TOP_SHARE * height
            marks.append((index + 1, mark.level, " ".join(mark.get_title().split()), top))
        for n, (page, level, title, _) in enumerate(marks):
            after = next((m for m in marks[n + 1 :] if m[1] <= level), None)
            last = len(document) if after is None else max(page, after[0] - (1 if after[3] else 0))
            query = NUMBERING.sub("", title).strip() or title
            found.append({"manual": pdf.name, "query": query, "pages": list(range(page, last + 1))})
        document.close()
    counts: dict[str, int] = {}
    for place in found:
        counts[place["query"].lower()] = counts.get(place["query"].lower(), 0) + 1
    return [place for place in found if counts[place["query"].lower()] == 1 and len(place["query"]) > 1]


def page_lines(pdfs: list[Path], out: Path) -> Path:
    """The careful user's conversion: one JSONL line per page of each manual."""
    import pypdfium2 as pdfium

    with open(out, "w") as handle:
        for pdf in pdfs:
            document = pdfium.PdfDocument(pdf)
            for index in range(len(document)):
                textpage = document[index].get_textpage()
                text = textpage.get_text_range().replace("\r\n", "\n").replace("\ufffe", "")
                if text.strip():
                    line = {"id": f"{pdf.name}#page={index + 1}", "text": text, "manual": pdf.name}
                    handle.write(json.dumps(line | {"page": index + 1}) + "\n")
            document.close()
    return out


def hit_place(hit, conversion: bool) -> tuple[str, int | None]:
    if conversion:
        return hit.metadata.get("manual"), hit.metadata.get("page")
    return hit.id.rsplit("/", 1)[-1], (hit.location or {}).get("page")


def scores(places: list[dict], results, conversion: bool) -> dict:
    reciprocal, first, best_right, best_found = 0.0, 0, 0, 0
    for place, hits in zip(places, results):
        answers = set(place["pages"])
        rank = None
        for n, hit in enumerate(hits[:K], 1):
            manual, page = hit_place(hit, conversion)
            if manual == place["manual"] and page in answers:
                rank = n
                break
        reciprocal += 1 / rank if rank else 0.0
        first += rank == 1
        own = [hit for hit in hits if hit_place(hit, conversion)[0] == place["manual"]]
        if own and not conversion:
            best_found += 1
            best_right += hit_place(own[0], conversion)[1] in answers
    out = {"MRR@10": round(reciprocal / len(places), 3), "success@1": round(first / len(places), 3)}
    if best_found:
        out["best place right"] = round(best_right / len(places), 3)
    return out


def takes_per_document(index) -> bool:
    """Whether the search answers places (`per_document`), else documents."""
    try:
        index.search_many(["a"], k=1, crop=0, per_document=0)
    except TypeError:
        return False
    return True


def measure(label: str, corpus: Path, places: list[dict], work: Path, headings: bool = True) -> list[dict]:
    from semsearch import Index

    if not headings:  # the variant: passages encoded without their section's heading
        from dataclasses import replace

        from semsearch.ingest import creation
        from semsearch.operations import calibrating, writes

        def without_headings(*args):
            made = creation.make_chunker(*args)
            return made and replace(made, headings=False)

        writes.make_chunker = calibrating.make_chunker = without_headings
    conversion = corpus.suffix == ".jsonl"
    path = work / f"index-{label}"
    shutil.rmtree(path, ignore_errors=True)
    started = time.perf_counter()
    with Index.create(path) as index:
        index.ingest(corpus)
        seconds = time.perf_counter() - started
        extra = {} if conversion or not takes_per_document(index) else {"per_document": 0}
        texts = [place["query"] for place in places]
        rows = []
        for mode in MODES:
            begun = time.perf_counter()
            results = index.search_many(texts, k=K, mode=mode, crop=0, **extra)
            per_query = (time.perf_counter() - begun) / len(texts) * 1000
            answer = "places" if extra or conversion else "documents"
            rows.append(
                {
                    "system": label,
                    "answer": answer,
                    "mode": mode or f"default ({index.query_defaults.mode.value})",
                    **scores(places, results, conversion),
                    "documents": len(index),
                    "passages": index.state.rows,
                    "ingest s": round(seconds, 1),
                    "query ms": round(per_query, 1),
                }
            )
    shutil.rmtree(path, ignore_errors=True)
    return rows


def run_systems(args, places: list[dict], tree: str) -> list[dict]:
    """Every system of one source tree, in this process."""
    folder = args.work / "pdfs"
    rows = measure(f"{tree}: folder of PDFs", folder, places, args.work)
    rows += measure(f"{tree}: JSONL line a page", args.work / "pages.jsonl", places, args.work)
    if args.variants:
        rows += measure(f"{tree}: folder, headings not encoded", folder, places, args.work, headings=False)
    return rows


def known_places_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pdfs", nargs="*", type=Path, default=[Path(p) for p in MANUALS])
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "manuals")
    parser.add_argument("--before", type=Path, help="another source tree measured in the same run")
    parser.add_argument("--variants", action="store_true", help="also the folder without headings encoded")
    parser.add_argument("--out", default="manuals", help="results name in benchmarks/results/")
    parser.add_argument("--tree", default="this", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=Path, help=argparse.SUPPRESS)  # a --before run's rows, as JSON


def run_known_places(config: argparse.Namespace) -> Rows:
    """Known places in real manuals: a section title as the query, its pages as the answer (manuals.md)."""
    for pdf in config.pdfs:
        require(pdf, "manual", "apt-get install -y r-doc-pdf asymptote-doc lilypond-doc-pdf")
    config.work.mkdir(parents=True, exist_ok=True)
    places = known_places(config.pdfs)
    if config.rows:  # a --before tree, run by the driver below
        config.rows.write_text(json.dumps(run_systems(config, places, config.tree)))
        return
    folder = config.work / "pdfs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for pdf in config.pdfs:
        shutil.copy(pdf, folder / pdf.name)
    page_lines(config.pdfs, config.work / "pages.jsonl")
    rows = []
    if config.before:
        out = config.work / "before.json"
        environment = dict(os.environ, PYTHONPATH=str(config.before.resolve()))
        pdfs = [str(pdf) for pdf in config.pdfs]
        call = [sys.executable, "-m", "benchmarks", "manuals", "known-places", "--work", str(config.work)]
        call += ["--tree", "before", "--rows", str(out), "--pdfs", *pdfs]
        subprocess.run(call, env=environment, check=True, cwd=REPO)
        rows += json.loads(out.read_text())
    rows += run_systems(config, places, "this")
    pages = (config.work / "pages.jsonl").read_text().count("\n")
    lines = [
        *results_header(
            "Known places in real manuals",
            f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}; 2 cores shared",
            __doc__,
        ),
        "The benchmark's other parts: one manual as a new user meets it, [one-manual.md](one-manual.md); a "
        "manual's calibration against its known places, [calibration-places.md](calibration-places.md).",
        "",
        f"Manuals: {', '.join(pdf.name for pdf in config.pdfs)} ({pages} pages with text); {len(places)} queries "
        "(unique outline titles). `before`: the source tree given by --before; `this`: this tree.",
        "",
        *markdown_table(rows),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{config.out}.md").write_text("\n".join(lines))
    (OUT / f"{config.out}.json").write_text(
        json.dumps({"command": command_line(), "rows": rows}, indent=1) + "\n"
    )
    print("\n".join(lines))
    return rows


DEFAULT_PDF = Path("/usr/share/doc/texlive-doc/luatex/base/luatex.pdf")
QUERIES = ["how do I define a new primitive", "callbacks for reading files", "font loading", "math spacing"]
MAX_LINE = 64 * 1024


def semsearch(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "semsearch", *args], capture_output=True, text=True, check=True
    )


def one_manual_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pdf", type=Path, default=DEFAULT_PDF)
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-one-manual"))


def run_one_manual(config: argparse.Namespace) -> Rows:
    """One long manual as a new user meets it: k distinct places, JSON lines under 64 KB, calibration a fifth at most (one-manual.md)."""
    if not config.pdf.exists():
        sys.exit(f"{config.pdf}: not found (apt-get install texlive-doc, or --pdf a manual of your own)")
    shutil.rmtree(config.work, ignore_errors=True)
    config.work.mkdir(parents=True)
    index = str(config.work / "index")
    started = time.perf_counter()
    semsearch("ingest", str(config.pdf), "--index", index, "--quiet")
    ingest_seconds = time.perf_counter() - started
    calibration = semsearch("info", "--index", index).stdout
    seconds = float(re.search(r"calibration: .*? in ([0-9.]+) s", calibration).group(1))
    rows = []
    for query in QUERIES:
        lines = semsearch("query", query, "--index", index, "-k", "10", "--json").stdout.splitlines()
        hits = [json.loads(line) for line in lines]
        places = {(hit["id"], hit["passage"]["start"]) for hit in hits}
        rows.append(
            {
                "query": query,
                "hits": len(hits),
                "distinct places": len(places),
                "pages": " ".join(str((hit["location"] or {}).get("page")) for hit in hits),
                "longest JSON line (bytes)": max(len(line.encode()) for line in lines),
            }
        )
    result = {
        "pdf": str(config.pdf),
        "ingest_seconds": round(ingest_seconds, 1),
        "calibration_seconds": seconds,
        "calibration_share": round(seconds / ingest_seconds, 3),
        "queries": rows,
        "holds": all(r["distinct places"] == 10 and r["longest JSON line (bytes)"] <= MAX_LINE for r in rows)
        and seconds / ingest_seconds <= 0.2,
    }
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "one-manual.json").write_text(json.dumps(result, indent=2) + "\n")
    commit = current_commit()
    body = [
        "# One long manual: places, line sizes, the calibration's share",
        "",
        f"`{command_line()}` at {commit}, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC.",
        "",
        f"{config.pdf.name}: ingest {ingest_seconds:.1f} s wall, calibration {seconds:.1f} s "
        f"({100 * seconds / ingest_seconds:.1f}%; target at most 20%).",
        "",
        *markdown_table(rows),
        "",
        f"Every claim holds: {result['holds']} (10 distinct places a query, no JSON line over 64 KB, calibration "
        "at most a fifth of the ingest).",
    ]
    (OUT / "one-manual.md").write_text("\n".join(body) + "\n")
    print("\n".join(body))
    return rows


R_MANUALS = Path("/usr/share/R/doc/manual")
DEFAULT_PDFS = [R_MANUALS / "R-exts.pdf", R_MANUALS / "R-intro.pdf"]


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


def place_scores(
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


def manual_row(pdf: Path, work: Path) -> dict:
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
        "known": place_scores(index, queries, calibration.get("bands")),
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


def calibration_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pdf", type=Path, action="append")
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-calibration-places"))


def run_calibration(config: argparse.Namespace) -> Rows:
    """A manual's calibration: its share of a one-PDF ingest, and its weight against the manual's known places (calibration-places.md)."""
    pdfs = config.pdf or DEFAULT_PDFS
    missing = [pdf for pdf in pdfs if not pdf.is_file()]
    if missing:
        sys.exit(f"not found: {', '.join(map(str, missing))} (apt-get install r-doc-pdf)")
    started = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    load = os.getloadavg()[0]
    rows = [manual_row(pdf, config.work) for pdf in pdfs]
    command = command_line()
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "calibration-places.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / "calibration-places.md").write_text(report(rows, command.strip(), started, load))
    print((OUT / "calibration-places.md").read_text())
    return rows


PARTS = {
    "known-places": (known_places_arguments, run_known_places),
    "one-manual": (one_manual_arguments, run_one_manual),
    "calibration": (calibration_arguments, run_calibration),
}
