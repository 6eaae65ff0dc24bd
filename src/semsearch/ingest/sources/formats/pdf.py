"""PDF with pypdfium2 (PDFium, the PDF engine of Chromium): the text of each page, a section each (its `page`,
1-based); the title from the file's metadata. A PDF with an outline (bookmarks) gives each section its heading
path (`headings`, as HTML and Markdown have them): a page where a bookmarked heading starts is cut where its title
is found in the page's text (at its start when it is not), and each part takes the path of the heading it falls
under. A PDF without an outline takes its headings from its own table of contents (contents.py). An encrypted file (no empty password opens it) or one with no
text layer (scanned images) is refused with that reason; a page OCR recognized and found blank, in a file with
text, is named (`blank_pages`). PDFium reads Debian's manuals 10x faster than pypdf
did, the same text (benchmarks/results/files.md)."""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable
from concurrent.futures import Future
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

from ...ocr import INSTALL, TEXT_LAYERS_ONLY, Extraction
from . import Format, Parsed, Unreadable, starting_with
from .blocks import Assembly
from .contents import contents_headings

if TYPE_CHECKING:
    from pypdfium2 import PdfDocument, PdfPage

# pages without a text layer are recognized (ocr/pages.py): the parse takes the ingest's Extraction
FORMATS = (
    Format("pdf", (".pdf",), libraries=("pypdfium2",), claims=starting_with(b"%PDF-"), takes_extraction=True),
)

# PDFium is not thread-safe: one document at a time in a process (ingest parses in a pool of processes)
_LOCK = threading.Lock()
_WRONG_PASSWORD = 4  # PDFium's FPDF_ERR_PASSWORD
OUTLINE_DEPTH = 8  # bookmark levels read; deeper ones are left to their parent's heading
# a heading's numbering before its title on the page: "2.1 ", "Appendix C ", "C.1 ", "Chapter 3: "
NUMBERING = r"(?-i:(?:(?:Appendix|Chapter|Part|Section)\s+[0-9A-Z]{1,3}:?|[0-9]{1,3}(?:\.[0-9]{1,3})*\.?|[A-Z](?:\.[0-9]{1,3})+\.?)\s+)?"

Heading = tuple[int, int, str]  # (0-based page index, 0-based level, title), in the outline's order


def parse(data: bytes, kind: str = "pdf", extraction: Extraction = TEXT_LAYERS_ONLY) -> Parsed:
    import pypdfium2 as pdfium

    out = Assembly()
    with _LOCK, _recognizer(extraction) as recognizer:
        try:
            document = pdfium.PdfDocument(data)
        except pdfium.PdfiumError as error:
            if getattr(error, "err_code", None) == _WRONG_PASSWORD:
                raise Unreadable("encrypted (a password is needed)") from None
            raise Unreadable(f"not a readable PDF ({error})") from None
        try:
            read: list[str | Future[str]] = []  # a page's text, or its recognition under way
            for number in range(len(document)):
                page = document[number]
                textpage = page.get_textpage()
                text = plain(textpage.get_text_range())
                textpage.close()
                read.append(_recognized(page, text, extraction, recognizer) or text)
                page.close()
            marks = outline(document)
            title = document.get_metadata_dict(skip_empty=True).get("Title")
        finally:
            document.close()
        texts = [text if isinstance(text, str) else text.result() for text in read]
    ocr = extraction.described() if any(isinstance(text, Future) for text in read) else None
    starts = heading_paths(marks or contents_headings(texts, title_at))
    for number, text in enumerate(texts):
        out.page_parts(number + 1, page_parts(text, starts.get(number, ()), starts.above(number)))
    parsed = out.parsed(title, **({"ocr": ocr} if ocr else {}))
    if not parsed.text.strip():
        raise Unreadable(_no_text(extraction))
    # the pages rendered and recognized that gave no text (an empty text layer not recognized is not one)
    parsed.blank_pages = tuple(
        number + 1
        for number, (asked, text) in enumerate(zip(read, texts))
        if isinstance(asked, Future) and not text.strip()
    )
    return parsed


def _recognizer(extraction: Extraction) -> AbstractContextManager[Any]:
    """The threads a scan's pages are recognized on (ocr/pages.py), where the ingest recognizes."""
    if not extraction.recognizes:
        return nullcontext()
    from ...ocr.pages import Recognizer

    return Recognizer(extraction)


def _recognized(page: PdfPage, text: str, extraction: Extraction, recognizer: Any) -> Future[str] | None:
    """The page's text as OCR will read it, if it is a page to recognize (ocr/pages.py)."""
    if recognizer is None:
        return None
    from ...ocr.pages import needs_recognition, pdf_page_image

    return recognizer.submit(pdf_page_image(page)) if needs_recognition(page, text, extraction) else None


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


def outline(document: PdfDocument) -> list[Heading]:
    """The document's bookmarks that point at a page, in order (none where it has no outline)."""
    import pypdfium2.raw as pdfium_c

    found = []
    for mark in document.get_toc(max_depth=OUTLINE_DEPTH):
        title = " ".join(mark.get_title().split())
        destination = mark.get_dest()
        index = destination.get_index() if destination is not None else None
        if index is None:  # a GoTo action rather than a destination
            action = pdfium_c.FPDFBookmark_GetAction(mark)
            raw = pdfium_c.FPDFAction_GetDest(document, action) if action else None
            index = pdfium_c.FPDFDest_GetDestPageIndex(document, raw) if raw else -1
            index = index if index >= 0 else None
        if title and index is not None:
            found.append((index, mark.level, title))
    return found


class PageStarts(dict):
    """0-based page index -> the heading paths that start on it, in order; `above(page)`: the path in effect
    where the page begins (the last one started on an earlier page)."""

    def __init__(self, paths: Iterable[tuple[int, tuple[str, ...]]]):
        super().__init__()
        self.pages: list[int] = []
        self.last: list[tuple[str, ...]] = []
        for page, path in sorted(
            paths, key=lambda item: item[0]
        ):  # stable: the outline's order within a page
            self.setdefault(page, []).append(path)
            if self.pages and self.pages[-1] == page:
                self.last[-1] = path
            else:
                self.pages.append(page)
                self.last.append(path)

    def above(self, page: int) -> tuple[str, ...]:
        import bisect

        at = bisect.bisect_left(self.pages, page)
        return self.last[at - 1] if at else ()


def heading_paths(headings: list[Heading]) -> PageStarts:
    """Each bookmark's page and heading path (its ancestors' titles and its own, outermost first)."""
    stack: list[tuple[int, str]] = []
    paths = []
    for page, level, title in headings:
        stack = [(lvl, text) for lvl, text in stack if lvl < level] + [(level, title)]
        paths.append((page, tuple(text for _, text in stack)))
    return PageStarts(paths)


def page_parts(
    text: str, starting: Iterable[tuple[str, ...]], above: tuple[str, ...]
) -> list[tuple[str, tuple[str, ...]]]:
    """A page's text cut where the headings starting on it begin, each part with its heading path: the text
    before the first one under the path in effect above the page. A heading whose title is not found on the
    page (after the one before it) starts where the one before it did."""
    cuts: list[tuple[int, tuple[str, ...]]] = [(0, above)]
    for path in starting:
        at = title_at(text, path[-1], cuts[-1][0])
        cuts.append((cuts[-1][0] if at is None else at, path))
    ends = [at for at, _ in cuts[1:]] + [len(text)]
    return [(text[at:end], path) for (at, path), end in zip(cuts, ends) if text[at:end].strip()]


def title_at(text: str, title: str, start: int) -> int | None:
    """Where a heading's title begins a line of the page's text (its numbering before it), from `start`."""
    words = r"\s+".join(re.escape(word) for word in title.split())
    found = re.compile(rf"^[ \t]*{NUMBERING}{words}", re.IGNORECASE | re.MULTILINE).search(text, start)
    return found.start() if found else None
