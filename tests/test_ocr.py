"""Issue 55: what is only pictures becomes searchable. Scans are made in code from real PDFs (fpdf2 writes the
text PDF, pypdfium2 renders its pages): an image-only PDF, single PNG, JPEG and WebP files and a multi-page
TIFF, each recognized by the installed engine (Tesseract) and measured against the text layer; its pages keep
their numbers; bad pictures are named one a line, and so is a file's blank page among pages with text; a change
of the OCR setting reads a synced file again and nothing else does; Chinese rendered from Debian's Noto CJK font
is found by a two-character word."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from semsearch import Index
from semsearch.cli import main
from semsearch.errors import DataError
from semsearch.ingest.ocr import INSTALL, Extraction, extraction, needs_ocr_line
from semsearch.ingest.sources import open_source
from semsearch.ingest.sources.formats import parser

pytestmark = pytest.mark.xdist_group("ocr")
AUTO = extraction("auto")
needs_engine = pytest.mark.skipif(AUTO.engine is None, reason=f"no OCR engine installed: {INSTALL}")
CJK_FONT = Path("/usr/share/fonts/opentype/noto/NotoSansCJK-Regular.ttc")
PAGES = [
    "Hydraulic pumps need their reservoir drained every quarter before the seals are replaced. "
    "Technicians record the pressure readings in the maintenance journal.",
    "The warranty covers replacement bearings for twelve months after delivery, provided the "
    "lubrication schedule printed on the housing was followed.",
    "Migrating salmon return upstream each autumn; volunteers count them from the wooden footbridge "
    "near the old mill and publish the tallies every winter.",
]
WORD = re.compile(r"[A-Za-z]{4,}")


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args])


def words(text: str) -> set[str]:
    return {word.lower() for word in WORD.findall(text)}


def text_pdf(path: Path) -> Path:
    from fpdf import FPDF

    pdf = FPDF()
    for number, text in enumerate(PAGES, start=1):
        pdf.add_page()
        pdf.set_font("helvetica", "B", 16)
        pdf.cell(0, 10, f"Section {number}", new_x="LMARGIN", new_y="NEXT")
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 7, text)
    pdf.output(str(path))
    return path


def rendered(pdf: Path, dpi: int, grey: bool = True) -> list:
    import pypdfium2 as pdfium

    document = pdfium.PdfDocument(str(pdf))
    return [document[i].render(scale=dpi / 72, grayscale=grey).to_pil() for i in range(len(document))]


@pytest.fixture(scope="module")
def scans(tmp_path_factory):
    """A folder of the same three pages as pictures of every kind, ingested in one command."""
    work = tmp_path_factory.mktemp("ocr")
    original = text_pdf(work / "text.pdf")
    root = work / "scans"
    root.mkdir()
    grey, colour = rendered(original, 150), rendered(original, 150, grey=False)
    grey[0].save(root / "scan.pdf", save_all=True, append_images=grey[1:], resolution=150)
    grey[1].save(root / "page2.png")
    colour[2].convert("RGB").save(root / "page3.jpg", quality=85)
    frames = [image.convert("L") for image in rendered(original, 150)]  # fresh: a save leaves its options on
    frames[0].save(root / "pages.tiff", save_all=True, append_images=frames[1:])
    colour[0].convert("RGB").save(root / "shot.webp", quality=90)
    result = run("ingest", root, "--index", work / "index")
    return original, root, work / "index", result


@needs_engine
def test_the_image_only_pdf_recovers_the_text_layers_words_page_by_page(scans):
    original, root, _, _ = scans
    truth = parser("pdf")(original.read_bytes(), "text.pdf")
    for dpi, grey in ((150, True), (300, False)):
        images = rendered(original, dpi, grey)
        scan = root.parent / f"scan-{dpi}.pdf"
        images[0].save(scan, save_all=True, append_images=images[1:], resolution=dpi)
        parsed = parser("pdf", AUTO)(scan.read_bytes(), scan.name)
        assert [s.location.page for s in parsed.sections] == [1, 2, 3]
        for expected, found in zip(truth.sections, parsed.sections):
            wanted = words(truth.text[expected.start : expected.end])
            got = words(parsed.text[found.start : found.end])
            assert len(wanted & got) >= 0.9 * len(wanted), (dpi, grey, wanted - got)
        assert parsed.metadata["ocr"].startswith(AUTO.engine)
    # the text PDF itself is read from its text layer, not recognized
    assert "ocr" not in parser("pdf", AUTO)(original.read_bytes(), "text.pdf").metadata


@needs_engine
def test_every_kind_of_picture_is_a_document_found_at_its_page(scans):
    _, _, index, result = scans
    assert result.exit_code == 0, result.output
    assert "read 5 documents, 0 refused" in result.stderr
    # the bar counts the pages as the parsing workers recognize them: 3 + 1 + 1 + 3 + 1
    assert "9 pages recognized" in result.stderr
    with Index.open(index) as opened:
        for number, text in enumerate(PAGES, start=1):
            query = " ".join(WORD.findall(text)[:6])
            hits: dict = {}
            for hit in opened.search(query, k=10, mode="keyword"):
                # each file's best place: a page sharing one stem ("replaced") is a further, lower place
                hits.setdefault(hit.id, hit)
            assert hits["scan.pdf"].location["page"] == number, query
            assert hits["pages.tiff"].location["page"] == number, query
        hits = opened.search("salmon footbridge mill tallies", k=10, mode="keyword")
        assert hits[0].id in ("page3.jpg", "scan.pdf", "pages.tiff")
        assert {"page3.jpg", "shot.webp", "page2.png"} <= {
            hit.id for hit in opened.search("warranty", k=10)
        } | {hit.id for hit in opened.search("salmon", k=10)} | {
            hit.id for hit in opened.search("hydraulic", k=10)
        }
        one = opened.search("warranty bearings lubrication", k=10, mode="keyword")
        png = next(hit for hit in one if hit.id == "page2.png")
        assert png.location == {"page": 1} and png.metadata["type"] == "image"
        assert "twelve months" in png.text and "\n" in png.text  # the engine's lines, as read


@needs_engine
def test_an_export_carries_the_recognized_text_so_nothing_needs_the_engine_again(scans, tmp_path):
    _, _, index, _ = scans
    out = tmp_path / "export.jsonl"
    result = run("export", "--index", index, "--output", out)
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in out.read_text().splitlines()[1:]]
    scan = next(record for record in records if record.get("id") == "scan.pdf")
    assert "salmon" in scan["text"].lower() and scan["metadata"]["ocr"].startswith(AUTO.engine)


def mixed_pdf(path: Path, work: Path) -> Path:
    """A PDF of a text page and a scanned page (an image and no text)."""
    from fpdf import FPDF

    text_pdf(work / "source.pdf")
    rendered(work / "source.pdf", 150)[2].save(work / "page3.png")
    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.multi_cell(0, 7, PAGES[0])
    pdf.add_page()
    pdf.image(str(work / "page3.png"), x=0, y=0, w=pdf.w, h=pdf.h)
    pdf.output(str(path))
    return path


@needs_engine
def test_a_change_of_ocr_setting_reads_the_file_again_and_nothing_else_does(tmp_path):
    folder = tmp_path / "folder"
    folder.mkdir()
    mixed_pdf(folder / "mixed.pdf", tmp_path)
    (folder / "note.md").write_text("# Note\n\nA plain note about gardens.\n")
    index = tmp_path / "index"
    first = run("ingest", folder, "--index", index, "--ocr", "never")
    assert first.exit_code == 0, first.output
    assert "blank pages" not in first.stderr  # a page without text not recognized is not a blank page
    with Index.open(index) as opened:
        assert not opened.search("salmon footbridge", k=5, mode="keyword")
    again = run("ingest", folder, "--index", index)  # --ocr auto: the PDF read again, the note not
    assert again.exit_code == 0, again.output
    assert "0 files added, 1 changed, 1 unchanged" in again.stderr
    with Index.open(index) as opened:
        (hit,) = opened.search("salmon footbridge", k=5, mode="keyword")
        assert hit.id == "mixed.pdf" and hit.location["page"] == 2
    third = run("ingest", folder, "--index", index)
    assert "0 files added, 0 changed, 2 unchanged" in third.stderr, third.stderr


def bad_pictures(folder: Path) -> dict[str, str]:
    from fpdf import FPDF
    from fpdf.enums import EncryptionMethod
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    Image.new("L", (800, 600), 255).save(folder / "blank.png")
    whole = folder / "whole.png"
    rendered(text_pdf(folder.parent / "t.pdf"), 100)[0].save(whole)
    (folder / "truncated.png").write_bytes(whole.read_bytes()[: whole.stat().st_size // 2])
    whole.rename(folder / "good.png")
    Image.new("1", (10_000, 9_000)).save(folder / "bomb.png")  # 90 million pixels in a few kilobytes
    locked = FPDF()
    locked.add_page()
    locked.set_font("helvetica", size=12)
    locked.cell(0, 10, "Words behind a password.")
    locked.set_encryption(owner_password="o", user_password="u", encryption_method=EncryptionMethod.RC4)
    locked.output(str(folder / "locked.pdf"))
    return {
        "blank.png": "page 1: no text found (a blank page?)",
        "truncated.png": "page 1: a truncated or damaged image",
        "bomb.png": "page 1: an image over the limit of 89,478,485 pixels (a decompression bomb?)",
        "locked.pdf": "encrypted (a password is needed)",
    }


@needs_engine
def test_bad_pictures_are_named_one_a_line_and_refuse_the_ingest_or_are_skipped(tmp_path):
    folder = tmp_path / "pictures"
    reasons = bad_pictures(folder)
    index = tmp_path / "index"
    refused = run("ingest", folder, "--index", index)
    assert refused.exit_code == 1 and "Traceback" not in refused.output
    for name, reason in reasons.items():
        (line,) = [line for line in refused.stderr.splitlines() if f"{folder.as_posix()}/{name}" in line]
        assert reason in line, line
    assert "4 files refused: nothing written" in refused.stderr and not index.exists()
    skipped = run("ingest", folder, "--index", index, "--skip-invalid")
    assert skipped.exit_code == 0, skipped.output
    assert sum(line.startswith("skipped: ") for line in skipped.stderr.splitlines()) == 4
    with Index.open(index) as opened:
        assert [hit.id for hit in opened.search("hydraulic reservoir", k=5, mode="keyword")] == ["good.png"]


@needs_engine
def test_a_blank_page_among_pages_with_text_is_named_in_one_line_and_the_rest_is_read(tmp_path):
    """The back of a scanned sheet: a PDF whose page 2 and a TIFF whose frame 1 are white are read, each named
    once with its blank page; an unchanged file read no more is not named again."""
    from PIL import Image

    page = rendered(text_pdf(tmp_path / "text.pdf"), 150)[0]
    text = page.crop((0, 0, page.width, page.height // 6))  # the heading and the first lines: fast to read
    folder = tmp_path / "sheets"
    folder.mkdir()
    text.save(
        folder / "sheet.pdf", save_all=True, append_images=[Image.new("L", text.size, 255)], resolution=150
    )
    Image.new("L", text.size, 255).save(folder / "back.tiff", save_all=True, append_images=[text.copy()])
    index = tmp_path / "index"
    result = run("ingest", folder, "--index", index)
    assert result.exit_code == 0, result.output
    lines = [line for line in result.stderr.splitlines() if line.startswith("blank pages: ")]
    assert sorted(lines) == [
        f"blank pages: {folder.as_posix()}/back.tiff: page 1 (no text found)",
        f"blank pages: {folder.as_posix()}/sheet.pdf: page 2 (no text found)",
    ], result.stderr
    assert "2 files added" in result.stderr
    with Index.open(index) as opened:
        hits = opened.search("hydraulic pumps reservoir", k=5, mode="keyword")
        assert {hit.id: hit.location["page"] for hit in hits} == {"sheet.pdf": 1, "back.tiff": 2}
    again = run("ingest", folder, "--index", index)
    assert "2 unchanged" in again.stderr and "blank pages" not in again.stderr, again.stderr
    # a file ingested as a corpus (not a folder's sync): the Python API's result names them too
    done = Index.ingest_into(tmp_path / "alone", folder / "sheet.pdf")
    assert done.blank_pages == [((folder / "sheet.pdf").as_posix(), (2,))] and done.documents == 1


def test_without_an_engine_pictures_are_counted_and_named_with_the_install_command(tmp_path):
    (tmp_path / "photo.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.output(str(tmp_path / "scan.pdf"))
    source = open_source(tmp_path, extraction=Extraction("auto", ("eng",), None))
    errors = [item for _, item in source.entries() if isinstance(item, Exception)]
    assert source.needs_ocr == [f"{tmp_path.as_posix()}/photo.png"] and source.ignored == 0
    (error,) = errors
    assert "reading it needs OCR: pip install 'semsearch[ocr]'" in error.reason
    line = needs_ocr_line(source.needs_ocr)
    assert line.startswith("1 file needs OCR to be read (") and "pip install 'semsearch[ocr]'" in line
    never = open_source(tmp_path, extraction=Extraction("never"))
    assert [type(item) for _, item in never.entries()] and never.ignored == 1 and never.needs_ocr == []


def test_an_ingest_without_an_engine_names_the_pictures_in_one_line_and_reads_the_rest(tmp_path, monkeypatch):
    import semsearch.ingest.ocr as ocr

    monkeypatch.setattr(ocr, "engine_for", lambda languages: None)  # as where neither engine is installed
    folder = tmp_path / "folder"
    folder.mkdir()
    for name in ("a.png", "b.jpg"):
        (folder / name).write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(32))
    (folder / "note.md").write_text("# Note\n\nThe gardens open at nine.\n")
    result = run("ingest", folder, "--index", tmp_path / "index")
    assert result.exit_code == 0, result.output
    (line,) = [line for line in result.stderr.splitlines() if "need OCR" in line]
    assert line.startswith("2 files need OCR to be read (") and "a.png" in line and "b.jpg" in line
    assert "read 1 documents, 0 refused" in result.stderr
    alone = run("ingest", folder / "a.png", "--index", tmp_path / "alone")
    assert alone.exit_code == 1 and "a picture: reading it needs OCR: pip install" in alone.stderr


def test_ocr_options_are_checked_before_anything_is_read(tmp_path):
    (tmp_path / "a.md").write_text("# A\n\ntext\n")
    result = run("ingest", tmp_path, "--index", tmp_path / "index", "--ocr-languages", "tlh")
    assert result.exit_code == 2 and "tesseract-ocr-tlh" in result.output
    assert not (tmp_path / "index").exists()


@needs_engine
@pytest.mark.skipif(not CJK_FONT.is_file(), reason="no Noto CJK font: apt-get install fonts-noto-cjk")
def test_a_scanned_page_of_chinese_is_found_by_a_two_character_word(tmp_path):
    from PIL import Image, ImageDraw, ImageFont

    try:
        chinese = extraction("auto", "zh")
    except DataError as error:  # no engine here reads Chinese
        pytest.skip(str(error))
    lines = ["今天天气很好，我们去公园散步。", "图书馆里的学生正在复习考试。", "机器学习帮助人们搜索文件。"]
    font = ImageFont.truetype(str(CJK_FONT), 40)
    page = Image.new("L", (900, 320), 255)
    draw = ImageDraw.Draw(page)
    for row, text in enumerate(lines):
        draw.text((40, 40 + row * 90), text, font=font, fill=0)
    (tmp_path / "folder").mkdir()
    page.save(tmp_path / "folder" / "notice.png")
    assert chinese.engine is not None
    result = run("ingest", tmp_path / "folder", "--index", tmp_path / "index", "--ocr-languages", "zh")
    assert result.exit_code == 0, result.output
    with Index.open(tmp_path / "index") as opened:
        for word in ("公园", "考试", "搜索"):
            hits = opened.search(word, k=3, mode="keyword")
            assert [hit.id for hit in hits] == ["notice.png"], word
            assert "chi_sim" in hits[0].metadata["ocr"]


@pytest.mark.slow  # RapidOCR's models load and run in ~15 s here
@pytest.mark.skipif(importlib.util.find_spec("rapidocr_onnxruntime") is None, reason="RapidOCR not installed")
def test_the_other_engine_reads_a_line_behind_the_same_interface(tmp_path):
    from semsearch.ingest.ocr.engines import engine

    page = rendered(text_pdf(tmp_path / "text.pdf"), 150)[0]
    line = page.crop(
        (0, 0, page.width, page.height // 8)
    )  # the heading and the first lines: seconds, not a page
    text = engine("rapidocr", ("eng",)).recognize(line).lower().replace(" ", "")
    assert "section1" in text and "hydraulicpumps" in text
