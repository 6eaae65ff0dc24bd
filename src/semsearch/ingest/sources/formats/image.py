"""PNG, JPEG, TIFF and WebP files: pictures of text (scans, photos, screenshots), read by OCR (ingest/ocr/) when
the `ocr` extra is installed. Each frame is a page (a TIFF's pages; any other image is page 1), a section each,
its text the engine's lines in its reading order. A file in which no page shows any text is refused (a blank
page or a photo without writing: nothing to index)."""

from __future__ import annotations

from ...ocr import INSTALL, TEXT_LAYERS_ONLY, Extraction
from ...ocr.pages import image_pages, recognized_pages
from . import Parsed, Unreadable
from .blocks import Assembly

TAKES_EXTRACTION = True


def parse(data: bytes, kind: str = "image", extraction: Extraction = TEXT_LAYERS_ONLY) -> Parsed:
    if not extraction.recognizes:
        raise Unreadable(f"a picture: reading it needs OCR: {INSTALL}")
    out = Assembly()
    blank = []
    for number, text in recognized_pages(image_pages(data), extraction):
        out.page(number, text)
        if not text.strip():
            blank.append(number)
    parsed = out.parsed(None)
    if not parsed.text.strip():
        pages = f"page {blank[0]}" if len(blank) == 1 else f"pages {blank[0]}-{blank[-1]}"
        raise Unreadable(f"{pages}: no text found (a blank page?)")
    parsed.metadata["ocr"] = extraction.described()
    return parsed
