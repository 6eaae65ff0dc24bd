"""PDF with pypdfium2 (PDFium, the PDF engine of Chromium): the text of each page, a section each (its `page`,
1-based); the title from the file's metadata. An encrypted file (no empty password opens it) or one with no
text layer (scanned images) is refused with that reason. PDFium reads Debian's manuals 10x faster than pypdf
did, the same text (benchmarks/results/files.md)."""

from __future__ import annotations

import threading

from . import Parsed, Unreadable
from .blocks import Assembly

# PDFium is not thread-safe: one document at a time in a process (ingest parses in a pool of processes)
_LOCK = threading.Lock()
_WRONG_PASSWORD = 4  # PDFium's FPDF_ERR_PASSWORD


def parse(data: bytes, kind: str = "pdf") -> Parsed:
    import pypdfium2 as pdfium

    out = Assembly()
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
                out.page(number + 1, plain(textpage.get_text_range()))
                textpage.close()
                page.close()
            title = document.get_metadata_dict(skip_empty=True).get("Title")
        finally:
            document.close()
    parsed = out.parsed(title)
    if not parsed.text.strip():
        raise Unreadable("no text layer (scanned images?): nothing to index")
    return parsed


def plain(text: str) -> str:
    """PDFium's page text with \\n line ends, a word hyphenated at a line's end whole again (PDFium marks
    the break with U+FFFE, the hyphen already dropped)."""
    return text.replace("\ufffe", "").replace("\r\n", "\n").replace("\r", "\n")
