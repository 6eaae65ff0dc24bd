"""PDF with pypdfium2 (PDFium, the PDF engine of Chromium): the text of each page, a section each (its `page`,
1-based); the title from the file's metadata. An encrypted file (no empty password opens it) or one with no
text layer (scanned images) is refused with that reason. PDFium reads Debian's manuals 10x faster than pypdf
did, the same text (benchmarks/results/files.md)."""

from __future__ import annotations

import threading

from ...ocr import INSTALL, TEXT_LAYERS_ONLY, Extraction
from . import Parsed, Unreadable
from .blocks import Assembly

TAKES_EXTRACTION = True  # pages without a text layer are recognized (ocr/pages.py)

# PDFium is not thread-safe: one document at a time in a process (ingest parses in a pool of processes)
_LOCK = threading.Lock()
_WRONG_PASSWORD = 4  # PDFium's FPDF_ERR_PASSWORD


def parse(data: bytes, kind: str = "pdf", extraction: Extraction = TEXT_LAYERS_ONLY) -> Parsed:
    import pypdfium2 as pdfium

    out = Assembly()
    ocr = None
    with _LOCK:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            if getattr(error, "err_code", None) == _WRONG_PASSWORD:
                raise Unreadable("encrypted (a password is needed)") from None
            raise Unreadable(f"not a readable PDF ({error})") from None
        try:
            for number in range(len(document)):
                page = document[number]
                textpage = page.get_textpage()
                text = plain(textpage.get_text_range())
                textpage.close()
                if recognized := _recognized(page, text, extraction):
                    text, ocr = recognized, extraction.described()
                out.page(number + 1, text)
                page.close()
            title = document.get_metadata_dict(skip_empty=True).get("Title")
        finally:
            document.close()
    parsed = out.parsed(title, **({"ocr": ocr} if ocr else {}))
    if not parsed.text.strip():
        raise Unreadable(_no_text(extraction))
    return parsed


def _recognized(page, text: str, extraction: Extraction) -> str | None:
    """The page's text read by OCR, if it is a page to recognize (ocr/pages.py)."""
    if not extraction.recognizes:
        return None
    from ...ocr.pages import needs_recognition, pdf_page_text

    return pdf_page_text(page, extraction) if needs_recognition(page, text, extraction) else None


def _no_text(extraction: Extraction) -> str:
    if extraction.recognizes:
        return "no text layer, and OCR found no text on any page (blank pages?)"
    if extraction.wants_engine:
        return f"no text layer (scanned images?): reading it needs OCR: {INSTALL}"
    return "no text layer (scanned images?): nothing to index (--ocr never)"


def plain(text: str) -> str:
    """PDFium's page text with \\n line ends, a word hyphenated at a line's end whole again (PDFium marks
    the break with U+FFFE, the hyphen already dropped)."""
    return text.replace("\ufffe", "").replace("\r\n", "\n").replace("\r", "\n")
