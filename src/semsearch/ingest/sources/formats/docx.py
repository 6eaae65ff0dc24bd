"""DOCX with python-docx's package reader and element classes: paragraphs and tables in order, cut into
sections at the Heading styles, each with its heading path; the title is the file's core property, else its
Title-styled paragraph or first heading.

Only the parts the text needs are read from the package: the main document, the core properties and, where a
paragraph names a style other than Word's English Title and Heading 1-9 ids, the styles part (a localized
Word names its heading styles' ids "berschrift1", "Titre1": their names say what they are). python-docx's
`Document()` unzips and parses every part (the styles alone are 350 KB in Word's template), 90% of a short
file's parse; and its `text` properties compile an XPath at every paragraph and run, two thirds of a long
file's: the same children are taken here in document order by lxml's `iterchildren`, each element's text
still python-docx's."""

from __future__ import annotations

import io
import re
from typing import TYPE_CHECKING, Any, cast

from . import Format, Parsed, Unreadable
from .blocks import Assembly

if TYPE_CHECKING:
    from docx.opc.oxml import CT_Relationships
    from docx.opc.phys_pkg import _ZipPkgReader
    from docx.oxml.coreprops import CT_CoreProperties
    from docx.oxml.document import CT_Document


def _claims(head: bytes, suffix: str) -> bool:
    """A ZIP package that is a Word document: named .docx, or its first entries under word/."""
    return head.startswith(b"PK\x03\x04") and (suffix == ".docx" or b"word/" in head)


FORMATS = (Format("docx", (".docx",), libraries=("docx",), claims=_claims),)
ENGLISH_IDS = re.compile(r"Title|Heading([1-9])")  # Word's built-in ids, named as the styles they are
RUN_PARTS = ("br", "cr", "noBreakHyphen", "ptab", "t", "tab")  # what CT_R.text reads, in its order


def parse(data: bytes, kind: str = "docx") -> Parsed:
    from docx.opc.constants import RELATIONSHIP_TYPE as RT
    from docx.opc.exceptions import PackageNotFoundError
    from docx.oxml.parser import parse_xml
    from docx.oxml.table import CT_Tbl
    from docx.table import Table

    try:
        package = Package(data)
        main = package.related(package.root, RT.OFFICE_DOCUMENT)
        if main is None:
            raise ValueError("no main document")
        body = cast("CT_Document", parse_xml(package.blob(main))).body
        if body is None:
            raise ValueError("no document body")
    except (PackageNotFoundError, KeyError, ValueError) as error:
        raise Unreadable(f"not a readable DOCX file ({error or type(error).__name__})") from None
    styles = StyleNames(package, main)
    text = ParagraphText()
    out, styled_title = Assembly(), None
    for block in body.inner_content_elements:
        if isinstance(block, CT_Tbl):
            # python-docx's cells: a merged cell's text where it spans (no parent: no story part is read)
            for row in Table(block, None).rows:  # type: ignore[arg-type]
                out.add(" | ".join("\n".join(map(text, cell._tc.p_lst)).strip() for cell in row.cells))
            continue
        style = styles.name(block.style)
        if style == "Title":
            styled_title = styled_title or text(block).strip()
            out.add(text(block))
        elif style.startswith("Heading") and style[7:].strip().isdigit():
            out.heading(int(style[7:]), text(block))
        else:
            out.add(text(block))
    core = package.related(package.root, RT.CORE_PROPERTIES)
    title = cast("CT_CoreProperties", parse_xml(package.blob(core))).title_text if core is not None else None
    return out.parsed(title or styled_title)


class Package:
    """The parts of a DOCX (OPC) package, each read from the zip when asked for."""

    def __init__(self, data: bytes):
        from docx.opc.packuri import PACKAGE_URI
        from docx.opc.phys_pkg import PhysPkgReader

        # PhysPkgReader is a factory: for a stream it makes a _ZipPkgReader, whose methods the base lacks
        self.reader, self.root = cast("_ZipPkgReader", PhysPkgReader(io.BytesIO(data))), PACKAGE_URI

    def related(self, source: Any, reltype: str) -> Any:
        """The part `source` relates to by `reltype` (its first), or None."""
        from docx.opc.constants import RELATIONSHIP_TARGET_MODE as RTM
        from docx.opc.oxml import parse_xml
        from docx.opc.packuri import PackURI

        rels = self.reader.rels_xml_for(source)
        for rel in cast("CT_Relationships", parse_xml(rels)).Relationship_lst if rels is not None else ():
            if rel.reltype == reltype and rel.target_mode != RTM.EXTERNAL:
                return PackURI.from_rel_ref(source.baseURI, rel.target_ref)
        return None

    def blob(self, part: Any) -> bytes:
        return self.reader.blob_for(part)


class StyleNames:
    """A paragraph style's name by its id ("" for none: the default style, never a Title or Heading), the styles
    part read only for an id that is not one of Word's English Title and Heading ids."""

    def __init__(self, package: Package, main: Any):
        self.package, self.main = package, main
        self.names: dict[str, str] = {}
        self.styles: Any = None

    def name(self, style_id: str | None) -> str:
        if style_id is None:
            return ""
        if style_id not in self.names:
            if known := ENGLISH_IDS.fullmatch(style_id):
                self.names[style_id] = f"Heading {known[1]}" if known[1] else "Title"
            else:
                self.names[style_id] = self._looked_up(style_id)
        return self.names[style_id]

    def _looked_up(self, style_id: str) -> str:
        from docx.opc.constants import RELATIONSHIP_TYPE as RT
        from docx.oxml.parser import parse_xml
        from docx.styles import BabelFish

        if self.styles is None:
            part = self.package.related(self.main, RT.STYLES)
            self.styles = parse_xml(self.package.blob(part)) if part is not None else False
        style = self.styles.get_by_id(style_id) if self.styles is not False else None
        return BabelFish.internal2ui(style.name_val) if style is not None and style.name_val else ""


class ParagraphText:
    """CT_P.text (its runs' and hyperlinks' runs' text, tabs and breaks as \\t and \\n) without its XPath."""

    def __init__(self) -> None:
        from docx.oxml.ns import qn

        self.run, self.hyperlink = qn("w:r"), qn("w:hyperlink")
        self.parts = [qn(f"w:{name}") for name in RUN_PARTS]

    def __call__(self, paragraph: Any) -> str:
        pieces: list[str] = []
        for child in paragraph.iterchildren(self.run, self.hyperlink):
            for run in (child,) if child.tag == self.run else child.iterchildren(self.run):
                pieces.extend(str(part) for part in run.iterchildren(*self.parts))
        return "".join(pieces)
