"""PDF with pypdf: the text of each page, a section each (its `page`, 1-based); the title from the file's
metadata. An encrypted file (no empty password opens it) or one with no text layer (scanned images) is refused
with that reason."""

from __future__ import annotations

import io

from . import Parsed, Unreadable
from .blocks import Assembly


def parse(data: bytes, kind: str = "pdf") -> Parsed:
    import logging

    from pypdf import PdfReader
    from pypdf.errors import PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)  # its warnings on odd files are not ours to print
    try:
        reader = PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted (a password is needed)")
        out = Assembly()
        for number, page in enumerate(reader.pages, start=1):
            out.page(number, page.extract_text() or "")
        title = (reader.metadata or {}).get("/Title") if reader.metadata is not None else None
    except PdfReadError as error:
        message = str(error)
        if "decrypt" in message.lower() or "encrypt" in message.lower():
            raise Unreadable("encrypted (a password is needed)") from None
        raise Unreadable(f"not a readable PDF ({message})") from None
    parsed = out.parsed(str(title) if title else None)
    if not parsed.text.strip():
        raise Unreadable("no text layer (scanned images?): nothing to index")
    return parsed
