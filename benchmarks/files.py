"""Files in (issue 34), written to benchmarks/results/files.md:

- parsers: the candidates for HTML (lxml with semsearch's main-content rules, selectolax, trafilatura) and PDF
  (pypdf, pdfminer.six), side by side on the same files: pages a second, and for HTML how much of each page's
  main text they keep and how often the site's furniture (its banner) comes along;
- docx: the DOCX parsers (python-docx as semsearch reads it and as it read before, docx2python and mammoth where
  installed) on the mixed folder's DOCX file: ms a file;
- split: documents parsed a second (the process pool of ingest/sources/files.py, and one process) against
  documents encoded a second, and the wall time of an ingest that parses every file first against one that
  parses while it encodes (ingest's), on a folder of real documentation HTML (Debian's python-django-doc) and
  on copies of the mixed folder of tests/mixedfolder.py (Markdown, HTML, PDF, DOCX, text, code, CSV, Parquet);
- parquet: one corpus with a vector column as Parquet and as JSONL, each ingested with --vector-field by a
  whole `semsearch ingest` process: seconds and peak RSS.

    .venv/bin/python benchmarks/files.py [--sections parsers,docx,split,parquet] [--pages 120] [--copies 20]
                                         [--rows 100000] [--dim 384] [--work DIR] [--library-row]
                                         [--index-type flat] [--together]
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
from mixedfolder import write_folder  # noqa: E402
from scale import PYTHON, SEMSEARCH, command_line, markdown_table, measure  # noqa: E402

DJANGO = Path("/usr/share/doc/python-django-doc/html")
PDFS = [
    Path("/usr/share/doc/libtasn1-doc/libtasn1.pdf"),
    Path("/usr/share/doc/shared-mime-info/shared-mime-info-spec.pdf"),
]
OUT = REPO / "benchmarks" / "results" / "files.md"
BANNER = "Django 3.2.25 documentation"  # the site's header on every page: furniture


def django_pages(count: int, smallest: bool = False) -> list[Path]:
    """`count` pages over 8 kB, spread over the site (or its `smallest`)."""
    if not DJANGO.is_dir():
        raise SystemExit(f"no {DJANGO}: apt-get install python-django-doc (a Debian documentation package)")
    pages = sorted(p for p in DJANGO.rglob("*.html") if "_modules" not in p.parts and p.stat().st_size > 8000)
    if smallest:
        return sorted(pages, key=lambda p: (p.stat().st_size, p))[:count]
    return pages[:: max(1, len(pages) // count)][:count]


def first_paragraphs(page: bytes) -> list[str]:
    """The page's own paragraphs inside its Sphinx sections: what a main-content extractor must keep."""
    import lxml.html

    root = lxml.html.document_fromstring(page)
    return [" ".join(p.text_content().split()) for p in root.xpath("//div[@class='section']/p")][:5]


def html_candidates():
    def ours(data: bytes) -> str:
        from semsearch.ingest.sources.formats import html

        return html.parse(data).text

    def selectolax(data: bytes) -> str:
        from selectolax.lexbor import LexborHTMLParser as HTMLParser

        tree = HTMLParser(data)
        tree.strip_tags(["script", "style", "nav", "header", "footer", "aside", "form"])
        return tree.body.text(separator=" ") if tree.body else ""

    def trafilatura(data: bytes) -> str:
        import trafilatura as t

        return t.extract(data.decode("utf-8", "replace"), include_comments=False, include_tables=True) or ""

    return {
        "lxml + main-content rules (chosen)": ours,
        "selectolax, furniture tags stripped": selectolax,
        "trafilatura.extract": trafilatura,
    }


def parsers(args) -> list[str]:
    pages = [p.read_bytes() for p in django_pages(args.pages)]
    wanted = [first_paragraphs(page) for page in pages]
    rows = []
    for name, parse in html_candidates().items():
        started = time.perf_counter()
        texts = [parse(page) for page in pages]
        seconds = time.perf_counter() - started
        flat = [" ".join(text.split()) for text in texts]
        kept = [sum(p in text for p in want) / len(want) for want, text in zip(wanted, flat) if want]
        rows.append(
            {
                "HTML parser": name,
                "pages/s": f"{len(pages) / seconds:.1f}",
                "main paragraphs kept": f"{np.mean(kept):.1%}",
                "pages with the site banner": f"{sum(BANNER in t for t in flat) / len(flat):.0%}",
                "mean chars": f"{np.mean([len(t) for t in flat]):,.0f}",
            }
        )
    pdf_rows = []
    for name, extract in pdf_candidates().items():
        started, pages_read, chars = time.perf_counter(), 0, 0
        for path in PDFS:
            if path.is_file():
                n, c = extract(path.read_bytes())
                pages_read, chars = pages_read + n, chars + c
        seconds = time.perf_counter() - started
        pdf_rows.append(
            {
                "PDF parser": name,
                "pages": pages_read,
                "pages/s": f"{pages_read / seconds:.1f}",
                "chars": f"{chars:,}",
            }
        )
    return [
        f"## Parsers: {len(pages)} pages of Debian's python-django-doc, {', '.join(p.name for p in PDFS)}",
        "",
        *markdown_table(rows),
        *markdown_table(pdf_rows),
    ]


def pdf_candidates():
    def pypdf(data: bytes) -> tuple[int, int]:
        from semsearch.ingest.sources.formats import pdf

        parsed = pdf.parse(data)
        return len(parsed.sections), len(parsed.text)

    def pdfminer(data: bytes) -> tuple[int, int]:
        import io

        from pdfminer.high_level import extract_text

        text = extract_text(io.BytesIO(data))
        return text.count("\f") or 1, len(text)

    return {"pypdf (chosen)": pypdf, "pdfminer.six": pdfminer}


def docx_candidates():
    """DOCX parsers on the bytes of one file: semsearch's (python-docx), python-docx as it read before (every
    paragraph's style looked up, its default found by reading every style), and the other real parsers where
    installed (docx2python, mammoth), each giving the text with the headings known."""
    import io

    def ours(data: bytes) -> str:
        from semsearch.ingest.sources.formats import docx

        return docx.parse(data).text

    def python_docx_every_style(data: bytes) -> str:  # semsearch's parse before, as it was
        import docx
        from docx.table import Table

        from semsearch.ingest.sources.formats.blocks import Assembly

        document, out = docx.Document(io.BytesIO(data)), Assembly()
        for block in document.iter_inner_content():
            if isinstance(block, Table):
                for row in block.rows:
                    out.add(" | ".join(cell.text.strip() for cell in row.cells))
                continue
            style = block.style.name if block.style is not None else ""
            if style.startswith("Heading") and style[7:].strip().isdigit():
                out.heading(int(style[7:]), block.text)
            else:
                out.add(block.text)
        return out.parsed(document.core_properties.title).text

    def docx2python(data: bytes) -> str:
        from docx2python import docx2python as read
        from docx2python.iterators import iter_paragraphs

        with read(io.BytesIO(data)) as result:  # paragraphs with their style ids (not names: localized)
            return "\n".join(
                f"{par.style}: {''.join(run.text for run in par.runs)}"
                for par in iter_paragraphs(result.body_pars)
            )

    def mammoth(data: bytes) -> str:
        import mammoth as m

        return m.convert_to_html(io.BytesIO(data)).value  # headings as <h1>..: the HTML parser would follow

    return {
        "python-docx, a style looked up only where a paragraph names one (chosen)": ours,
        "python-docx, every paragraph's style looked up (before)": python_docx_every_style,
        "docx2python": docx2python,
        "mammoth, to HTML": mammoth,
    }


def docx(args) -> list[str]:
    """Each DOCX candidate on the mixed folder's DOCX file (tests/mixedfolder.py, written by python-docx with
    its default template, as Word writes a file: every built-in style in styles.xml): ms a file, min and median
    of `--docx-rounds`, side by side in one run."""
    work = Path(tempfile.mkdtemp(prefix="files-docx-"))
    try:
        data = next(write_folder(work).rglob("*.docx")).read_bytes()
        rows = []
        for name, parse in docx_candidates().items():
            try:
                parse(data)
            except ImportError as error:
                rows.append(
                    {"DOCX parser": name, "ms min": f"not installed ({error.name})", "ms median": "-"}
                )
                continue
            seconds = []
            for _ in range(args.docx_rounds):
                started = time.perf_counter()
                parse(data)
                seconds.append(time.perf_counter() - started)
            rows.append(
                {
                    "DOCX parser": name,
                    "ms min": f"{min(seconds) * 1000:.1f}",
                    "ms median": f"{np.median(seconds) * 1000:.1f}",
                }
            )
            print(rows[-1], flush=True)
        return [
            f"## DOCX parsers: one file of three sections, {len(data):,} bytes",
            "",
            *markdown_table(rows),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def split(args) -> list[str]:
    """Per folder (Django pages; copies of the mixed folder): documents parsed a second by the pool ingest uses
    and by one process, alone; then the same folder ingested into a new index twice, side by side: the files
    parsed first and the documents encoded after (as before issue 34's overlap: every file read, then
    Index.add), and as `Index.ingest(DIR)` does now, parsing while it encodes. The encode rate is the first
    ingest's documents over its time after the parse."""
    from semsearch import Index
    from semsearch.ingest.sources import open_source
    from semsearch.ingest.sources.files import PARSE_WORKERS, parsed_in_order, read_document

    work = Path(tempfile.mkdtemp(prefix="files-split-"))
    try:
        # the smallest pages over 8 kB: enough files for the pool (POOL_FROM) and an encode that fits beside others
        folders = {
            f"{args.pages} smallest Django pages": work / "django",
            f"{args.copies} mixed folders": work / "mixed",
        }
        for n, page in enumerate(django_pages(args.pages, smallest=True)):
            (work / "django").mkdir(parents=True, exist_ok=True)
            shutil.copy(page, work / "django" / f"{n:04d}-{page.name}")
        for copy in range(args.copies):
            write_folder(work / "mixed" / f"{copy:03d}")
            if copy:  # a table's rows keep their own ids: one copy of the tables
                shutil.rmtree(work / "mixed" / f"{copy:03d}" / "tables")
        rows = []
        for name, folder in folders.items():
            tasks = list(open_source(folder).tasks())
            tasks = [task for task in tasks if task is not None]
            for task in {task.kind: task for task in tasks}.values():
                read_document(task)  # this process's parsers imported (the pool's workers import their own)
            rates = {}
            for label, workers in ((f"pool of {PARSE_WORKERS}", PARSE_WORKERS), ("one process", 1)):
                started = time.perf_counter()
                parsed = sum(outcome == "doc" for _, (outcome, _) in parsed_in_order(tasks, workers))
                rates[label] = parsed / (time.perf_counter() - started)
            started = time.perf_counter()
            documents = [doc for _, doc in open_source(folder).entries()]  # parsed first, every file
            parse_seconds = time.perf_counter() - started
            with Index.create(work / f"before-{folder.name}") as index:
                index.add(documents)
            before = time.perf_counter() - started
            encode_rate = len(documents) / (before - parse_seconds)
            started = time.perf_counter()
            with Index.create(work / f"after-{folder.name}") as index:
                added = index.ingest(folder).added
            after = time.perf_counter() - started
            assert added == len(documents), (added, len(documents))
            rows.append(
                {
                    "folder": name,
                    "documents": len(documents),
                    **{f"parsed/s ({label})": f"{rate:.1f}" for label, rate in rates.items()},
                    "encoded/s": f"{encode_rate:.2f}",
                    "parse / encode": f"{max(rates.values()) / encode_rate:.0f}x",
                    "parse then encode s": f"{before:.1f}",
                    "parse while encoding s": f"{after:.1f}",
                    "after / before": f"{after / before:.2f}",
                }
            )
            print(rows[-1], flush=True)
        return [
            f"## Parse against encode: {args.pages} Django HTML pages and {args.copies} mixed folders",
            "",
            *markdown_table(rows),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def write_tables(work: Path, rows: int, dim: int) -> None:
    """The same corpus as corpus.parquet (row groups of 10,000) and corpus.jsonl: an id, twelve words of text, a
    year and a `dim`-wide vector a row (seeded); kept where both are there already with this many rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    done = work / f"written-{rows}-{dim}"
    if done.is_file():
        return
    work.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(0)
    words = np.array(
        [
            "ocean",
            "river",
            "mountain",
            "forest",
            "desert",
            "city",
            "village",
            "harbour",
            "bridge",
            "tower",
            "garden",
            "field",
        ]
    )
    schema = pa.schema(
        [
            ("id", pa.string()),
            ("text", pa.string()),
            ("year", pa.int64()),
            ("emb", pa.list_(pa.float32(), dim)),
        ]
    )
    with (
        pq.ParquetWriter(work / "corpus.parquet", schema) as writer,
        open(work / "corpus.jsonl", "w") as jsonl,
    ):
        for start in range(0, rows, 10_000):
            n = min(10_000, rows - start)
            ids = [f"d{i}" for i in range(start, start + n)]
            texts = [" ".join(rng.choice(words, 12)) for _ in range(n)]
            years = rng.integers(1990, 2026, n)
            vectors = rng.standard_normal((n, dim)).astype(np.float32)
            arrays = [
                pa.array(ids),
                pa.array(texts),
                pa.array(years),
                pa.FixedSizeListArray.from_arrays(pa.array(vectors.ravel()), dim),
            ]
            writer.write_table(pa.Table.from_arrays(arrays, schema=schema), row_group_size=10_000)
            for i in range(n):
                record = {
                    "id": ids[i],
                    "text": texts[i],
                    "year": int(years[i]),
                    "emb": [round(float(x), 6) for x in vectors[i]],
                }
                jsonl.write(json.dumps(record) + "\n")
    done.touch()


def parquet(args) -> list[str]:
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="files-parquet-"))
    try:
        write_tables(work, args.rows, args.dim)
        # JSONL again in a process that loads pyarrow.parquet first: what of Parquet's peak is the library
        preloaded = [
            PYTHON,
            "-c",
            "import pyarrow.parquet, runpy; runpy.run_module('semsearch', run_name='__main__')",
        ]
        runs = [("corpus.parquet", "corpus.parquet", SEMSEARCH), ("corpus.jsonl", "corpus.jsonl", SEMSEARCH)]
        if args.library_row:
            runs.append(("corpus.jsonl, pyarrow.parquet loaded first", "corpus.jsonl", preloaded))

        def ingest(run: tuple[str, str, list[str]], number: int) -> dict:
            label, name, command = run
            path, index = work / name, work / f"index-{number}"
            shutil.rmtree(index, ignore_errors=True)
            options = [
                "--vector-field",
                "emb",
                "--index-type",
                args.index_type,
                "--index",
                str(index),
                "--quiet",
            ]
            result = measure([*command, "ingest", str(path), *options])
            shutil.rmtree(index, ignore_errors=True)
            row = {
                "corpus": label,
                "file MiB": f"{path.stat().st_size / 2**20:,.0f}",
                "rows": f"{args.rows:,}",
                "seconds": f"{result['seconds']:.1f}",
                "peak RSS MiB": f"{result['peak_rss_mib']:,.0f}",
            }
            print(row, flush=True)
            return row

        # --together: the processes at once (each one's peak RSS is its own; their seconds then share the cores)
        with ThreadPoolExecutor(len(runs) if args.together else 1) as pool:
            rows = list(pool.map(ingest, runs, range(len(runs))))
        return [
            f"## Parquet against JSONL at {args.rows:,} rows: row groups of 10,000, {args.dim}-dimension vectors",
            "",
            *markdown_table(rows),
        ]
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def merged(blocks: dict[str, list[str]]) -> str:
    """The results file with these sections replaced (each section keeps the command that made it)."""
    kept: dict[str, list[str]] = {}
    if OUT.is_file():
        name = None
        for line in OUT.read_text().splitlines():
            if line.startswith("## "):
                name = line.split(":")[0][3:]
            if name is not None:
                kept.setdefault(name, []).append(line)
    kept.update({name: [*lines, ""] for name, lines in blocks.items()})
    order = [
        "Parsers",
        "DOCX parsers",
        "Parse against encode",
    ]  # then Parquet against JSONL by rows, the notes

    def place(name: str) -> tuple:
        return (order.index(name) if name in order else len(order) + (name == "Notes"), len(name), name)

    lines = [line for name in sorted(kept, key=place) for line in kept[name]]
    return "\n".join(["# Files in (issue 34)", "", *lines]).rstrip("\n") + "\n"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sections", default="parsers,split,parquet")
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--work", help="parquet: where the two corpora are written and kept (default: a temporary folder)"
    )
    parser.add_argument("--docx-rounds", type=int, default=50)
    parser.add_argument("--index-type", default="flat", help="parquet: the index both ingests build")
    parser.add_argument("--together", action="store_true", help="parquet: run the ingests at the same time")
    parser.add_argument(
        "--library-row",
        action="store_true",
        help="parquet: JSONL also in a process that loads pyarrow.parquet",
    )
    args = parser.parse_args()
    blocks = {}
    for section in args.sections.split(","):
        lines = {"parsers": parsers, "split": split, "parquet": parquet, "docx": docx}[section](args)
        lines[1:1] = ["", f"`{command_line()}`"]
        print("\n".join(lines), flush=True)
        blocks[lines[0].split(":")[0][3:]] = lines
    OUT.write_text(merged(blocks))


if __name__ == "__main__":
    main()
