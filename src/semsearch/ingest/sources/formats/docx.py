"""DOCX with python-docx: paragraphs and tables in order, cut into sections at the Heading styles, each with
its heading path; the title is the file's core property, else its Title-styled paragraph or first heading."""

from __future__ import annotations

import io

from . import Parsed, Unreadable
from .blocks import Assembly


def parse(data: bytes, kind: str = "docx") -> Parsed:
    import docx
    from docx.opc.exceptions import PackageNotFoundError
    from docx.table import Table

    try:
        document = docx.Document(io.BytesIO(data))
    except (PackageNotFoundError, KeyError, ValueError) as error:
        raise Unreadable(f"not a readable DOCX file ({error or type(error).__name__})") from None
    out = Assembly()
    styled_title = None
    names: dict[str, str] = {}  # style id -> name: python-docx searches the styles for each paragraph it asks
    for block in document.iter_inner_content():
        if isinstance(block, Table):
            for row in block.rows:
                out.add(" | ".join(cell.text.strip() for cell in row.cells))
            continue
        # A paragraph without a style of its own has the default one (never Title or a Heading): not looked up,
        # since python-docx finds the default by reading every style of the file (half of a short file's parse)
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
