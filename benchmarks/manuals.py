"""Known places in real manuals (issue 52): a section's title as the query, the pages it spans as the answer,
written to benchmarks/results/manuals.md and manuals.json.

    .venv/bin/python benchmarks/manuals.py [--pdfs A.pdf B.pdf ...] [--work DIR] [--before ../main/src]

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
from pathlib import Path

from scale import command_line, markdown_table, results_header

REPO = Path(__file__).resolve().parents[1]
OUT = REPO / "benchmarks" / "results"
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
    """Whether the search answers places (`per_document`, issue 52), else documents."""
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


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pdfs", nargs="*", type=Path, default=[Path(p) for p in MANUALS])
    parser.add_argument("--work", type=Path, default=REPO / "indexes" / "manuals")
    parser.add_argument("--before", type=Path, help="another source tree measured in the same run")
    parser.add_argument("--variants", action="store_true", help="also the folder without headings encoded")
    parser.add_argument("--out", default="manuals", help="results name in benchmarks/results/")
    parser.add_argument("--tree", default="this", help=argparse.SUPPRESS)
    parser.add_argument("--rows", type=Path, help=argparse.SUPPRESS)  # a --before run's rows, as JSON
    args = parser.parse_args()
    missing = [str(pdf) for pdf in args.pdfs if not pdf.is_file()]
    if missing:
        sys.exit(
            f"skipped: {', '.join(missing)} missing (apt-get install -y r-doc-pdf asymptote-doc lilypond-doc-pdf)"
        )
    args.work.mkdir(parents=True, exist_ok=True)
    places = known_places(args.pdfs)
    if args.rows:  # a --before tree, run by the driver below
        args.rows.write_text(json.dumps(run_systems(args, places, args.tree)))
        return
    folder = args.work / "pdfs"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir()
    for pdf in args.pdfs:
        shutil.copy(pdf, folder / pdf.name)
    page_lines(args.pdfs, args.work / "pages.jsonl")
    rows = []
    if args.before:
        out = args.work / "before.json"
        environment = dict(os.environ, PYTHONPATH=str(args.before.resolve()))
        pdfs = [str(pdf) for pdf in args.pdfs]
        call = [sys.executable, __file__, "--work", str(args.work), "--tree", "before", "--rows", str(out)]
        subprocess.run([*call, "--pdfs", *pdfs], env=environment, check=True)
        rows += json.loads(out.read_text())
    rows += run_systems(args, places, "this")
    pages = (args.work / "pages.jsonl").read_text().count("\n")
    lines = [
        *results_header(
            "Known places in real manuals",
            f"load average at the end {' '.join(f'{x:.1f}' for x in os.getloadavg())}; 2 cores shared",
            __doc__,
        ),
        f"Manuals: {', '.join(pdf.name for pdf in args.pdfs)} ({pages} pages with text); {len(places)} queries "
        "(unique outline titles). `before`: the source tree given by --before; `this`: this tree.",
        "",
        *markdown_table(rows),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{args.out}.md").write_text("\n".join(lines))
    (OUT / f"{args.out}.json").write_text(
        json.dumps({"command": command_line(), "rows": rows}, indent=1) + "\n"
    )
    print("\n".join(lines))


if __name__ == "__main__":
    main()
