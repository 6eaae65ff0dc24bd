"""HTML with lxml: the main content only (`<main>`, `role=main` or `<article>` where the page has one; never
navigation, banners, footers, sidebars, scripts or forms), cut into sections at its headings, each with its
heading path and the id of the nearest enclosing element that has one (so `path#anchor` opens the place); the
title is the page's `<title>`, else its first heading."""

from __future__ import annotations

from ....documents import Location
from . import Parsed, Unreadable
from .blocks import Assembly

HEADINGS = {f"h{n}": n for n in range(1, 7)}
BLOCKS = set(HEADINGS) | set(
    [
        "p",
        "div",
        "li",
        "ul",
        "ol",
        "pre",
        "blockquote",
        "dd",
        "dt",
        "dl",
        "td",
        "th",
        "tr",
        "table",
        "figcaption",
        "caption",
        "section",
        "article",
        "main",
        "aside",
        "nav",
        "header",
        "footer",
        "form",
        "fieldset",
        "details",
        "summary",
        "address",
        "hr",
        "br",
    ]
)
# Never content: the page's furniture, repeated on every page, and what is not text.
FURNITURE = (
    "//script | //style | //noscript | //template | //nav | //aside | //form | //svg | //button | //iframe"
    " | //*[@role='navigation' or @role='banner' or @role='contentinfo' or @role='complementary' or @role='search']"
    " | //*[@aria-hidden='true']"
)
# Sphinx, MkDocs and Docusaurus keep their sidebars, breadcrumbs and "¶" links in classes, not elements.
FURNITURE_CLASSES = ("sphinxsidebar", "related", "headerlink", "breadcrumb", "md-sidebar", "toc", "footer")


def parse(data: bytes, kind: str = "html") -> Parsed:
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.document_fromstring(data)
    except (lxml.etree.ParserError, ValueError) as error:
        raise Unreadable(f"not HTML ({error})") from None
    title = " ".join((root.findtext(".//title") or "").split()) or None
    for element in root.xpath(FURNITURE):
        if element.getparent() is not None:
            element.drop_tree()
    for element in root.xpath("//*[@class]"):
        classes = element.get("class", "").split()
        if element.getparent() is not None and any(c in FURNITURE_CLASSES for c in classes):
            element.drop_tree()
    main = next(iter(root.xpath("//main | //*[@role='main'] | //article")), None)
    if main is None:
        main = root.find("body") if root.find("body") is not None else root
        for element in main.xpath(".//header | .//footer"):  # the page's own, outside any article
            element.drop_tree()
    out = Assembly()
    ids: list[str] = []
    for ancestor in main.iterancestors():  # ids enclosing the main content count too
        if ancestor.get("id"):
            ids.insert(0, ancestor.get("id"))
    out.place = Location(anchor=ids[-1] if ids else None)
    buffer: list[str] = []

    def flush() -> None:
        out.add(" ".join("".join(buffer).split()))
        buffer.clear()

    def walk(element, preformatted: bool = False) -> None:
        tag = element.tag if isinstance(element.tag, str) else ""
        own_id = element.get("id") if tag else None
        if own_id:
            ids.append(own_id)
        if tag in HEADINGS:
            flush()
            out.heading(HEADINGS[tag], element.text_content(), ids[-1] if ids else None)
        elif tag == "pre":
            flush()
            out.add(element.text_content())
        elif tag:
            block = tag in BLOCKS
            if block:
                flush()
            if element.text:
                buffer.append(element.text)
            for child in element:
                walk(child)
                if child.tail:
                    buffer.append(child.tail)
            if block:
                flush()
        if own_id:
            ids.pop()

    walk(main)
    flush()
    parsed = out.parsed(title)
    if not parsed.text.strip():
        raise Unreadable("no text in the page's main content")
    return parsed
