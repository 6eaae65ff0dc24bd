"""PNG, JPEG, TIFF and WebP files: pictures of text (scans, photos, screenshots), read by OCR (ingest/ocr/) when
the `ocr` extra is installed. Each frame is a page (a TIFF's pages; any other image is page 1), a section each,
its text the engine's lines in its reading order. A file in which no page shows any text is refused (a blank
page or a photo without writing: nothing to index); a blank page among pages with text is named
(`blank_pages`)."""

from __future__ import annotations

from ...ocr import INSTALL, TEXT_LAYERS_ONLY, Extraction
from . import Format, Parsed, Unreadable
from .blocks import Assembly

# PNG, JPEG, TIFF (both byte orders), WebP (a RIFF file whose form is WEBP)
MAGIC = (b"\x89PNG\r\n\x1a\n", b"\xff\xd8\xff", b"II*\x00", b"MM\x00*")


def _claims(head: bytes, suffix: str) -> bool:
    return head.startswith(MAGIC) or (head[:4] == b"RIFF" and head[8:12] == b"WEBP")


FORMATS = (
    Format(
        "image",
        (".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"),
        libraries=("PIL.Image",),
        claims=_claims,
        takes_extraction=True,
    ),
)


def parse(data: bytes, kind: str = "image", extraction: Extraction = TEXT_LAYERS_ONLY) -> Parsed:
    if not extraction.recognizes:
        raise Unreadable(f"a picture: reading it needs OCR: {INSTALL}")
    from ...ocr.pages import image_pages, recognized_pages

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
    parsed.blank_pages = tuple(blank)
    return parsed
