"""Files in, written to benchmarks/results/files.md:

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
  whole `semsearch ingest` process: seconds and peak RSS, the ingest process's own and its table reader's
  (the child process that reads a table file);
- held: the same two corpora's documents as the ingest holds them from reading to storing (a partition):
  bytes and allocations a document (tracemalloc), Parquet's also with its rows' place as before;
- arenas: the same two corpora each ingested alone by measured_command (below): Python's arenas, glibc's
  heap and anonymous memory once every document is stored, and the peak.

    python -m benchmarks files [--sections parsers,docx,split,parquet,held,arenas] [--pages 120] [--copies 20]
                                         [--rows 100000] [--dim 384] [--work DIR] [--library-row] [--before-row]
                                         [--index-type flat] [--together]
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import json
import os
import re
import shutil
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from unittest import mock

import numpy as np

from benchmarks.suite import (
    PYTHON,
    REPO,
    SEMSEARCH,
    Rows,
    command_line,
    markdown_table,
    measure,
    tests_helpers,
)

tests_helpers()
from mixedfolder import write_folder  # noqa: E402

CLAIM = "Files in: the parsers chosen against the others, parse rates, the process pool's split, an ingest's memory"

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


def pdf_before(data: bytes, kind: str = "pdf"):
    """semsearch's PDF parse before pypdfium2, as it was: pypdf's text of each page."""
    import io
    import logging

    from pypdf import PdfReader

    from semsearch.ingest.sources.formats.blocks import Assembly

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    reader, out = PdfReader(io.BytesIO(data)), Assembly()
    for number, page in enumerate(reader.pages, start=1):
        out.page(number, page.extract_text() or "")
    title = (reader.metadata or {}).get("/Title") if reader.metadata is not None else None
    return out.parsed(str(title) if title else None)


def docx_before(data: bytes, kind: str = "docx"):
    """semsearch's DOCX parse before, as it was (session 5): python-docx's Document() (every part of the package
    unzipped and parsed), its paragraphs' and cells' `text`, a style's name looked up once a document."""
    import io

    import docx
    from docx.table import Table

    from semsearch.ingest.sources.formats.blocks import Assembly

    document, out = docx.Document(io.BytesIO(data)), Assembly()
    styled_title, names = None, {}
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                out.add(" | ".join(cell.text.strip() for cell in row.cells))
            continue
        style_id = block._p.style
        if style_id is not None and style_id not in names:
            names[style_id] = block.style.name if block.style is not None else ""
        style = names[style_id] if style_id is not None else ""
        if style == "Title":
            styled_title = styled_title or block.text.strip()
            out.add(block.text)
        elif style.startswith("Heading") and style[7:].strip().isdigit():
            out.heading(int(style[7:]), block.text)
        else:
            out.add(block.text)
    return out.parsed(document.core_properties.title or styled_title)


@contextlib.contextmanager
def parsers_before():
    """read_document with the parsers as they were before this session's change: DOCX by python-docx's
    Document()."""
    from semsearch.ingest.sources.formats import docx

    with mock.patch.object(docx, "parse", docx_before):
        yield


def pdf_candidates():
    def pdfium(data: bytes) -> tuple[int, int]:
        from semsearch.ingest.sources.formats import pdf

        parsed = pdf.parse(data)
        return len(parsed.sections), len(parsed.text)

    def pypdf(data: bytes) -> tuple[int, int]:
        parsed = pdf_before(data)
        return len(parsed.sections), len(parsed.text)

    def pdfminer(data: bytes) -> tuple[int, int]:
        import io

        from pdfminer.high_level import extract_text

        text = extract_text(io.BytesIO(data))
        return text.count("\f") or 1, len(text)

    return {"pypdfium2 (chosen)": pdfium, "pypdf (before)": pypdf, "pdfminer.six": pdfminer}


def docx_candidates():
    """DOCX parsers on the bytes of one file: semsearch's (python-docx's package reader and element classes, the
    parts needed), python-docx's Document() as semsearch read it before, and the other real parsers where
    installed (docx2python, mammoth), each giving the text with the headings known."""
    import io

    def ours(data: bytes) -> str:
        from semsearch.ingest.sources.formats import docx

        return docx.parse(data).text

    def python_docx_before(data: bytes) -> str:
        return docx_before(data).text

    def docx2python(data: bytes) -> str:
        """The same text and headings from docx2python: it names a paragraph's style by its id, which Word
        localizes ("Überschrift1"), so the names are read from the styles part where an id is not one of
        English Word's built-in ones."""
        import re

        from docx2python import docx2python as read

        from semsearch.ingest.sources.formats.blocks import Assembly

        word = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
        built_in = {"": "", "Normal": "Normal", "Title": "Title"} | {
            f"Heading{n}": f"heading {n}" for n in range(1, 10)
        }
        with read(io.BytesIO(data)) as content:
            blocks = content.body_pars
            names = built_in
            if {
                par.style for block in blocks for row in block for cell in row for par in cell
            } - built_in.keys():
                styles = content.docx_reader.file_of_type("styles").root_element
                names = {
                    style.get(f"{word}styleId", ""): name.get(f"{word}val", "")
                    for style in styles.iterchildren(f"{word}style")
                    if (name := style.find(f"{word}name")) is not None
                }
            title = content.core_properties.get("title")
        out = Assembly()
        for block in blocks:
            if any(par.lineage[1] == "tbl" for row in block for cell in row for par in cell):
                for row in block:
                    out.add(
                        " | ".join(
                            "\n".join("".join(r.text for r in p.runs) for p in cell).strip() for cell in row
                        )
                    )
                continue
            for par in (par for row in block for cell in row for par in cell):
                text = "".join(run.text for run in par.runs)
                if heading := re.fullmatch(r"heading ([1-9])", names.get(par.style, par.style).lower()):
                    out.heading(int(heading[1]), text)
                else:
                    out.add(text)
        return out.parsed(title).text

    def mammoth(data: bytes) -> str:
        import mammoth as m

        return m.convert_to_html(io.BytesIO(data)).value  # headings as <h1>..: the HTML parser would follow

    return {
        "python-docx's package reader and element classes, the parts needed (chosen)": ours,
        "python-docx's Document(), every part parsed (before)": python_docx_before,
        "docx2python": docx2python,
        "mammoth, to HTML": mammoth,
    }


def long_docx() -> bytes:
    """A longer DOCX, as python-docx writes it with its default template (Word's styles): a title and 60
    chapters, each a heading, a paragraph, a table of two rows and two subheadings with their paragraphs."""
    import io

    import docx

    document = docx.Document()
    document.add_paragraph("A report", style="Title")
    for n in range(60):
        document.add_heading(f"Chapter {n}", 1)
        document.add_paragraph(f"Chapter {n} opens with a paragraph of plain words.")
        table = document.add_table(rows=2, cols=2)
        for cell, text in zip(table._cells, ["year", "count", str(2000 + n), str(n * 7)]):
            cell.text = text
        document.add_heading("Findings", 2)
        document.add_paragraph("What was found, in a sentence or two.")
        document.add_heading("Details", 3)
        document.add_paragraph("The details, in a third paragraph.")
    out = io.BytesIO()
    document.save(out)
    return out.getvalue()


def docx(args) -> list[str]:
    """Each DOCX candidate on the mixed folder's DOCX file (tests/mixedfolder.py, written by python-docx with
    its default template, as Word writes a file: every built-in style in styles.xml) and on a longer one:
    ms a file, min and median of `--docx-rounds`, side by side in one run."""
    work = Path(tempfile.mkdtemp(prefix="files-docx-"))
    try:
        files = {
            "short": next(write_folder(work).rglob("*.docx")).read_bytes(),
            "long": long_docx(),
        }
        from semsearch.ingest.sources.formats import docx as chosen

        for data in files.values():  # the same text, title and sections as before, or no table
            now, before = chosen.parse(data), docx_before(data)
            assert (now.text, now.title, now.sections) == (before.text, before.title, before.sections)
        rows = []
        for name, parse in docx_candidates().items():
            row = {"DOCX parser": name}
            for label, data in files.items():
                try:
                    parse(data)
                except ImportError as error:
                    row |= {f"{label}: ms min": f"not installed ({error.name})", f"{label}: ms median": "-"}
                    continue
                seconds = []
                for _ in range(args.docx_rounds if label == "short" else max(3, args.docx_rounds // 8)):
                    started = time.perf_counter()
                    parse(data)
                    seconds.append(time.perf_counter() - started)
                row |= {
                    f"{label}: ms min": f"{min(seconds) * 1000:.1f}",
                    f"{label}: ms median": f"{np.median(seconds) * 1000:.1f}",
                }
            rows.append(row)
            print(rows[-1], flush=True)
        sizes = ", ".join(f"{label} {len(data):,} bytes" for label, data in files.items())
        return [
            "## DOCX parsers: the mixed folder's file of three sections (short) and one of 60 chapters (long)",
            "",
            f"Files: {sizes}.",
            "",
            *markdown_table(rows),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


def by_type(args) -> list[str]:
    """Where a folder's parse time goes, a kind of file at a time: ms a file read by read_document (the pool's
    work: the file read, parsed, its metadata checked) with today's parsers and with those before, side by side
    (alternating, min of `--type-rounds` passes in one process), on `--copies` copies of the mixed folder and
    on the 40 smallest Django pages; and the walk (listing the folder, its .gitignore rules, each file's first
    bytes read to tell its kind) a file."""
    from semsearch.ingest.sources import open_source
    from semsearch.ingest.sources.files import read_document

    work = Path(tempfile.mkdtemp(prefix="files-types-"))
    try:
        for copy in range(args.copies):
            write_folder(work / "mixed" / f"{copy:03d}")
        for n, page in enumerate(django_pages(40, smallest=True)):
            (work / "django").mkdir(parents=True, exist_ok=True)
            shutil.copy(page, work / "django" / f"{n:04d}-{page.name}")
        groups: dict[str, list] = {}
        walk = []
        for folder in ("mixed", "django"):
            for _ in range(args.type_rounds):
                started = time.perf_counter()
                tasks = [task for task in open_source(work / folder).tasks() if task is not None]
                walk.append((time.perf_counter() - started) / len(tasks))
            for task in tasks:
                label = task.kind if folder == "mixed" else "html (Django pages)"
                groups.setdefault(label, []).append(task)
        best = {(label, when): float("inf") for label in groups for when in ("now", "before")}
        for _ in range(args.type_rounds):
            for when in ("before", "now"):
                with parsers_before() if when == "before" else contextlib.nullcontext():
                    for label, tasks in groups.items():
                        read_document(tasks[0])  # the parser's imports and first use, not timed
                        started = time.perf_counter()
                        for task in tasks:
                            assert read_document(task)[0] == "doc", task
                        seconds = (time.perf_counter() - started) / len(tasks)
                        best[label, when] = min(best[label, when], seconds)
        mixed = [label for label in groups if not label.startswith("html (")]
        totals = {
            when: sum(best[label, when] * len(groups[label]) for label in mixed) for when in ("now", "before")
        }
        rows = []
        for label, tasks in groups.items():
            row = {
                "kind": label,
                "files": len(tasks),
                "ms a file, now": f"{best[label, 'now'] * 1000:.2f}",
                "ms a file, before": f"{best[label, 'before'] * 1000:.2f}",
                "before / now": f"{best[label, 'before'] / best[label, 'now']:.1f}x",
            }
            for when in ("now", "before"):
                share = best[label, when] * len(tasks) / totals[when] if label in mixed else None
                row[f"share of the mixed folders' parse, {when}"] = "-" if share is None else f"{share:.0%}"
            rows.append(row)
        files = sum(len(groups[label]) for label in mixed)
        rows.append(
            {
                "kind": "all of the mixed folders",
                "files": files,
                "ms a file, now": f"{totals['now'] / files * 1000:.2f}",
                "ms a file, before": f"{totals['before'] / files * 1000:.2f}",
                "before / now": f"{totals['before'] / totals['now']:.1f}x",
                "share of the mixed folders' parse, now": "100%",
                "share of the mixed folders' parse, before": "100%",
            }
        )
        rows.append({"kind": "walk (a file)", "files": "-", "ms a file, now": f"{min(walk) * 1000:.2f}"})
        for table in sorted(
            (work / "mixed" / "000" / "tables").iterdir()
        ):  # read by the ingest's own process
            list(open_source(table).entries())
            seconds = []
            for _ in range(args.type_rounds):
                started = time.perf_counter()
                count = sum(1 for _ in open_source(table).entries())
                seconds.append((time.perf_counter() - started) / count)
            rows.append(
                {
                    "kind": f"{table.suffix[1:]} (a row)",
                    "files": 1,
                    "ms a file, now": f"{min(seconds) * 1000:.2f}",
                }
            )
        print("\n".join(markdown_table(rows)), flush=True)
        return [
            f"## Parse time by kind of file: {args.copies} mixed folders and 40 Django pages, one process",
            "",
            *markdown_table(rows),
        ]
    finally:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def in_a_thread(target, *args):
    """`target(*args, stop)` run in a thread for as long as the block runs, then `stop` set and joined."""
    import threading

    stop = threading.Event()
    thread = threading.Thread(target=target, args=(*args, stop))
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join()


def encode_meanwhile(encoder, texts: list[str], stop) -> None:
    """Encode `texts` over and over until `stop` is set, new texts each round (nothing from a cache)."""
    round_ = 0
    while not stop.is_set():
        encoder.encode([f"{text} {round_}" for text in texts])
        round_ += 1


def split(args) -> list[str]:
    """Per folder (Django pages; copies of the mixed folder): documents parsed a second by the pool ingest uses
    and by one process, alone, and by the pool while an encoder in this process encodes the folder's texts
    over and over (as in an ingest); the CPU seconds a document of the parse (one process) and of the encode
    (Index.add, its threads included); then the same folder ingested into a new index twice: the files parsed
    first and the documents encoded after (as before issue 34's overlap: every file read, then Index.add), and
    as `Index.ingest(DIR)` does now, parsing while it encodes. The encode rate is the first ingest's documents
    over its time after the parse."""

    from semsearch import Index
    from semsearch.ingest.sources import open_source
    from semsearch.ingest.sources.files import PARSE_WORKERS, parsed_in_order, read_document

    def parse_rate(tasks: list) -> float:
        started = time.perf_counter()
        parsed = sum(read.outcome == "doc" for _, read in parsed_in_order(tasks, PARSE_WORKERS))
        return parsed / (time.perf_counter() - started)

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
            pool = parse_rate(tasks)
            started, cpu = time.perf_counter(), time.process_time()
            alone = sum(read_document(task)[0] == "doc" for task in tasks)
            alone_rate, parse_cpu = (
                alone / (time.perf_counter() - started),
                (time.process_time() - cpu) / alone,
            )
            started = time.perf_counter()
            documents = [doc for _, doc in open_source(folder).entries()]  # parsed first, every file
            parse_seconds = time.perf_counter() - started
            with Index.create(work / f"before-{folder.name}") as index:
                cpu = time.process_time()
                index.add(documents)
                encode_cpu = (time.process_time() - cpu) / len(documents)
                before = time.perf_counter() - started
                texts = [doc.text[:2000] for doc in documents[:64]]
                with in_a_thread(encode_meanwhile, index.encoder, texts):
                    beside = parse_rate(tasks)
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
                    f"parsed/s (pool of {PARSE_WORKERS})": f"{pool:.1f}",
                    f"parsed/s (pool of {PARSE_WORKERS}, encoder running)": f"{beside:.1f}",
                    "parsed/s (one process)": f"{alone_rate:.1f}",
                    "encoded/s": f"{encode_rate:.2f}",
                    "parse / encode": f"{max(pool, alone_rate) / encode_rate:.1f}x",
                    "CPU ms a document: parse": f"{parse_cpu * 1000:.1f}",
                    "CPU ms a document: encode": f"{encode_cpu * 1000:.1f}",
                    "encode / parse CPU": f"{encode_cpu / parse_cpu:.1f}x",
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


def measure_sampled(command: list[str]) -> dict:
    """measure(), and the memory of the process and of its children (the table reader) sampled every 50 ms
    from /proc (Linux): at the sample of the process's highest RSS, its anonymous memory (heap, arrays: what
    the process made) and its pages of files (the code of the libraries it loaded, clean and shared: the
    system's page cache, which it can drop and read again); the highest anonymous memory; when the peak came
    (a share of the run); the process's own high-water mark (VmHWM: measure's ru_maxrss is the highest of the
    process and of the children it waited for); its children's highest RSS and high-water mark; and the
    highest RSS of the process and its children at one sample."""
    import threading

    samples: list[tuple[float, float, float, float]] = []
    highest = {"own": 0.0, "children": 0.0, "children_hwm": 0.0, "together": 0.0}

    def status(pid: str) -> dict[str, float]:
        try:
            lines = (Path("/proc") / pid / "status").read_text().splitlines()
        except OSError:
            return {}
        return {line.split(":")[0]: int(line.split()[1]) / 1024 for line in lines if line.endswith("kB")}

    def children(pid: str) -> list[str]:
        found = []
        for task in Path(f"/proc/{pid}/task").glob("*/children"):
            try:
                found += task.read_text().split()
            except OSError:
                continue
        return found

    def sample(done: threading.Event) -> None:
        started, pid = time.perf_counter(), None
        while not done.is_set():
            if pid is None:  # the launcher's child: the command itself
                for child in Path("/proc").glob("[0-9]*/cmdline"):
                    try:
                        line = child.read_bytes()
                        if f"--index\0{index_marker[0]}".encode() in line and b"posix_spawn" not in line:
                            pid = child.parent.name
                    except OSError:
                        continue
            else:
                fields = status(pid)
                if "VmRSS" not in fields:
                    break
                at = time.perf_counter() - started
                samples.append((at, fields["VmRSS"], fields["RssAnon"], fields["RssFile"]))
                kids = [status(kid) for kid in children(pid)]
                kids_rss = sum(kid.get("VmRSS", 0) for kid in kids)
                highest["own"] = max(highest["own"], fields.get("VmHWM", 0))
                highest["children"] = max(highest["children"], kids_rss)
                highest["children_hwm"] = max(
                    [highest["children_hwm"], *(kid.get("VmHWM", 0) for kid in kids)]
                )
                highest["together"] = max(highest["together"], fields["VmRSS"] + kids_rss)
            time.sleep(0.05)

    index_marker = [command[command.index("--index") + 1]]
    with in_a_thread(sample):
        result = measure(command)
    if not samples:
        nan = float("nan")
        return {**result, "anonymous": nan, "file": nan, "peak_anonymous": nan, "peak_at": 0, **highest}
    at, _, anonymous, file = max(samples, key=lambda sample: sample[1])
    peak_anonymous = max(sample[2] for sample in samples)
    return {
        **result,
        "anonymous": anonymous,
        "file": file,
        "peak_anonymous": peak_anonymous,
        "peak_at": at / samples[-1][0],
        **highest,
    }


@contextlib.contextmanager
def table_corpora(args, prefix: str):
    """The folder of the two corpora (write_tables): --work, kept, else a temporary one removed after."""
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix=prefix))
    try:
        write_tables(work, args.rows, args.dim)
        yield work
    finally:
        if not args.work:
            shutil.rmtree(work, ignore_errors=True)


def ingest_options(args, index: Path) -> list[str]:
    """How the two corpora are ingested: their vector column given, into `index`."""
    return ["--vector-field", "emb", "--index-type", args.index_type, "--index", str(index), "--quiet"]


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
        # Parquet read in the ingest's own process, as before the reader child (tablerows' messages called there)
        in_process = [
            PYTHON,
            "-c",
            "import runpy; from semsearch.ingest.sources import tablerows, tables; "
            "tables.TableSource.messages = lambda self: map(tablerows.row_by_row, "
            "tablerows.messages(self.table, self.kind, self.fields)); "
            "runpy.run_module('semsearch', run_name='__main__')",
        ]
        runs = [("corpus.parquet", "corpus.parquet", SEMSEARCH), ("corpus.jsonl", "corpus.jsonl", SEMSEARCH)]
        if args.before_row:
            runs.insert(
                1, ("corpus.parquet, read in the ingest process (before)", "corpus.parquet", in_process)
            )
        if args.library_row:
            runs.append(("corpus.jsonl, pyarrow.parquet loaded first", "corpus.jsonl", preloaded))

        def ingest(run: tuple[str, str, list[str]], number: int) -> dict:
            label, name, command = run
            path, index = work / name, work / f"index-{number}"
            shutil.rmtree(index, ignore_errors=True)
            result = measure_sampled([*command, "ingest", str(path), *ingest_options(args, index)])
            shutil.rmtree(index, ignore_errors=True)
            row = {
                "corpus": label,
                "file MiB": f"{path.stat().st_size / 2**20:,.0f}",
                "rows": f"{args.rows:,}",
                "seconds": f"{result['seconds']:.1f}",
                "peak RSS MiB (ru_maxrss)": f"{result['peak_rss_mib']:,.0f}",
                "ingest process's own peak MiB (VmHWM)": f"{result['own']:,.0f}",
                "reader child's peak MiB (VmHWM)": f"{result['children_hwm']:,.0f}",
                "ingest + child at one moment, peak MiB": f"{result['together']:,.0f}",
                "at the peak: anonymous MiB": f"{result['anonymous']:,.0f}",
                "at the peak: files' pages MiB": f"{result['file']:,.0f}",
                "peak anonymous MiB": f"{result['peak_anonymous']:,.0f}",
                "peak at": f"{result['peak_at']:.0%} of the run",
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


def held(args) -> list[str]:
    """Bytes a document holds from its reading to its storing (a partition's worth, pipeline.CHUNK_DOCS, held
    at once): Python's allocations traced by tracemalloc over that many documents read from each corpus after
    the first 5,000, each content hash taken as the store takes it; and Parquet's rows again with their place
    as a tuple of a Section and its Location, as before documents.RowSections (the same documents, their
    sections made that tuple). What a Parquet row holds beyond a JSONL line raised Python's arenas. Also the
    CPU the store's uses of a document's place take (its content hash, its stored sections' JSON, its
    passages' locations; the least of five rounds over fresh copies of the documents held)."""
    import gc
    import itertools
    import tracemalloc
    from dataclasses import replace

    from semsearch.ingest.pipeline import CHUNK_DOCS
    from semsearch.ingest.sources import FieldNames, open_source
    from semsearch.storage.locations import location_rows, sections_json

    def placed_seconds(documents: list) -> float:
        fresh = [replace(doc) for doc in documents]  # no content hash cached yet
        started = time.process_time()
        for doc in fresh:
            doc.content_hash  # noqa: B018
        for _ in map(sections_json, fresh):
            pass
        for _ in location_rows(fresh, range(len(fresh)), [[]] * len(fresh)):
            pass
        return time.process_time() - started

    def as_tuple(doc):
        return replace(doc, sections=tuple(doc.sections))

    runs = [
        ("corpus.parquet", "corpus.parquet", None),
        (
            "corpus.parquet, a row's place as a tuple of a Section and a Location (before)",
            "corpus.parquet",
            as_tuple,
        ),
        ("corpus.jsonl", "corpus.jsonl", None),
    ]
    rows = []
    with table_corpora(args, "files-held-") as work:
        for label, name, change in runs:
            read = open_source(work / name, FieldNames(vector="emb")).documents()
            documents = map(change, read) if change else read
            list(itertools.islice(documents, 5000))  # the reading's modules and caches settled first
            gc.collect()
            tracemalloc.start()
            before = tracemalloc.take_snapshot()
            kept = list(itertools.islice(documents, CHUNK_DOCS))
            for doc in kept:
                doc.content_hash  # noqa: B018 (cached on the document, as the store asks for it)
            gc.collect()
            grown = tracemalloc.take_snapshot().compare_to(before, "filename")
            tracemalloc.stop()
            read.close()  # the table reader stopped
            size, blocks = sum(stat.size_diff for stat in grown), sum(stat.count_diff for stat in grown)
            size -= sys.getsizeof(kept)  # the list that holds them here
            placing = min(placed_seconds(kept) for _ in range(5)) / len(kept)
            rows.append(
                {
                    "corpus": label,
                    "documents held": f"{len(kept):,}",
                    "bytes a document": f"{size / len(kept):,.0f}",
                    "blocks a document": f"{blocks / len(kept):.2f}",
                    "µs a document: hash, stored sections, locations": f"{placing * 1e6:.1f}",
                }
            )
            print(rows[-1], flush=True)
            del kept
    return [
        f"## Bytes a document holds until it is stored: {args.rows:,} rows, {args.dim}-dimension vectors",
        "",
        *markdown_table(rows),
    ]


def arenas(args) -> list[str]:
    """Each corpus ingested alone, one after the other, by measured_command (the CLI in a process
    that reads its own memory): Python's arenas, anonymous memory and glibc's heap in use once every document
    is stored (before the transform's fit), and the process's high-water mark at its end."""
    import os
    import subprocess

    rows = []
    with table_corpora(args, "files-arenas-") as work:
        for name in ("corpus.parquet", "corpus.jsonl"):
            index = work / "index-arenas"
            shutil.rmtree(index, ignore_errors=True)
            with tempfile.TemporaryDirectory() as scratch:
                out = Path(scratch) / "memory.json"
                command = [PYTHON, "-c", "from benchmarks.files import measured_command; measured_command()"]
                command += ["ingest", str(work / name)]
                environment = {**os.environ, "MEMORY_REPORT": str(out)}
                subprocess.run(
                    [*command, *ingest_options(args, index)],
                    env=environment,
                    check=True,
                    capture_output=True,
                    cwd=REPO,
                )
                report = json.loads(out.read_text())
            shutil.rmtree(index, ignore_errors=True)
            rows.append(memory_row(name, report))
            print(rows[-1], flush=True)
    return [
        f"## Python's arenas at {args.rows:,} rows: {args.dim}-dimension vectors, each ingest alone",
        "",
        *markdown_table(rows),
    ]


def memory_row(corpus: str, report: dict) -> dict:
    """A row of the arenas section from measured_command's report."""
    stored = report["stored"]
    return {
        "corpus": corpus,
        "all stored: Python's arenas (1 MiB), highest": stored["arenas_highest"],
        "all stored: in Python's blocks MiB": f"{stored['blocks_mib']:.2f}",
        "all stored: glibc's heap in use MiB": f"{stored['heap_used_mib']:.2f}",
        "all stored: anonymous MiB": f"{stored['anonymous_mib']:.2f}",
        "peak MiB (VmHWM)": f"{report['end']['peak_mib']:.2f}",
        "CPU seconds": f"{report['cpu_seconds']:.1f}",
    }


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
    kept.update({name: [*"\n".join(lines).rstrip("\n").split("\n"), ""] for name, lines in blocks.items()})
    order = [
        "Parsers",
        "DOCX parsers",
        "Parse time by kind of file",
        "Parse against encode",
    ]  # then Parquet against JSONL by rows, the notes

    def place(name: str) -> tuple:
        return (order.index(name) if name in order else len(order) + (name == "Notes"), len(name), name)

    lines = [line for name in sorted(kept, key=place) for line in kept[name]]
    return "\n".join(["# Files in", "", *lines]).rstrip("\n") + "\n"


# ---- one command in this process, its memory read (the arenas section runs it as a process of its own) -----


class MallInfo2(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_size_t)
        for name in [
            "arena",
            "ordblks",
            "smblks",
            "hblks",
            "hblkhd",
            "usmblks",
            "fsmblks",
            "uordblks",
            "fordblks",
            "keepcost",
        ]
    ]


def python_arenas() -> dict[str, float]:
    """Python's arena counts and the bytes in its blocks, from sys._debugmallocstats (written to C's stderr)."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as out:
        os.dup2(out.fileno(), 2)
        try:
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        out.seek(0)
        text = out.read().decode()

    def number(name: str) -> int:
        return int(re.search(rf"# {name}\s*=\s*([\d,]+)", text).group(1).replace(",", ""))

    return {
        "arenas_highest": number("arenas highwater mark"),
        "arenas": number("arenas allocated current"),
        "blocks_mib": number("bytes in allocated blocks") / 2**20,
    }


def memory() -> dict[str, float]:
    libc = ctypes.CDLL("libc.so.6")
    libc.mallinfo2.restype = MallInfo2
    heap = libc.mallinfo2()
    lines = Path("/proc/self/status").read_text().splitlines()
    status = {line.split(":")[0]: int(line.split()[1]) / 1024 for line in lines if line.endswith("kB")}
    return {
        "rss_mib": status["VmRSS"],
        "anonymous_mib": status["RssAnon"],
        "peak_mib": status["VmHWM"],
        "heap_mib": heap.arena / 2**20,
        "heap_used_mib": heap.uordblks / 2**20,
        **python_arenas(),
    }


def measured_command() -> None:
    """Runs the `semsearch` command of sys.argv[1:] in this process and writes its memory as JSON to the file
    named by MEMORY_REPORT: once every document is stored (before the transform's fit) and at its end."""
    import semsearch.ingest.build as build
    from semsearch.cli import main as semsearch

    report: dict[str, object] = {}
    fit = build.fit

    def measured_fit(*args, **kwargs):
        report.setdefault("stored", memory())  # the first fit: every document stored, no index built yet
        return fit(*args, **kwargs)

    build.fit = measured_fit
    sys.argv = ["semsearch", *sys.argv[1:]]
    started = time.process_time()
    try:
        semsearch()
    except SystemExit as done:
        if done.code:
            raise
    finally:
        report["end"] = memory()
        report["cpu_seconds"] = time.process_time() - started
        Path(os.environ["MEMORY_REPORT"]).write_text(json.dumps(report))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default="parsers,split,parquet")
    parser.add_argument("--pages", type=int, default=120)
    parser.add_argument("--copies", type=int, default=20)
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument(
        "--work", help="parquet: where the two corpora are written and kept (default: a temporary folder)"
    )
    parser.add_argument("--docx-rounds", type=int, default=50)
    parser.add_argument("--type-rounds", type=int, default=5)
    parser.add_argument("--index-type", default="flat", help="parquet: the index both ingests build")
    parser.add_argument("--together", action="store_true", help="parquet: run the ingests at the same time")
    parser.add_argument(
        "--before-row",
        action="store_true",
        help="parquet: Parquet also read in the ingest's own process, as before the reader child",
    )
    parser.add_argument(
        "--library-row",
        action="store_true",
        help="parquet: JSONL also in a process that loads pyarrow.parquet",
    )


def run(config: argparse.Namespace) -> Rows:
    blocks = {}
    for section in config.sections.split(","):
        sections = {
            "parsers": parsers,
            "types": by_type,
            "split": split,
            "parquet": parquet,
            "docx": docx,
            "held": held,
            "arenas": arenas,
        }
        lines = sections[section](config)
        lines[1:1] = ["", f"`{command_line()}`"]
        print("\n".join(lines), flush=True)
        blocks[lines[0].split(":")[0][3:]] = lines
    OUT.write_text(merged(blocks))
    return blocks
