"""HTML with lxml: the main content only (`<main>`, `role=main` or `<article>` where the page has one; never
navigation, banners, footers, sidebars, scripts or forms), cut into sections at its headings, each with its
heading path and the id of the nearest enclosing element that has one (so `path#anchor` opens the place); the
title is the page's `<title>`, else its first heading. After the text, the page's outline (its title and
headings) is a section of its own."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from ....documents import Location, Section
from . import Format, Parsed, Unreadable
from .blocks import Assembly

if TYPE_CHECKING:
    from lxml.html import HtmlElement

FORMATS = (Format("html", (".html", ".htm", ".xhtml"), libraries=("lxml.html",)),)
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
# Themes (Sphinx, MkDocs, Docusaurus, ...) keep their sidebars, breadcrumbs and "¶" links in classes and ids.
FURNITURE_NAMES = {
    "related",
    "headerlink",
    "toc",
    "footer",
    "header",
    "nav",
    "navigation",
    "menu",
    "skip-link",
}
FURNITURE_PARTS = ("sidebar", "navbar", "breadcrumb", "global-nav", "footer")
# A block that is mostly links (a menu, a table of contents, "previous | up | next") is furniture too.
LINK_SHARE, LINKS = 0.6, 3
LINK_BLOCKS = ("div", "ul", "ol", "table", "dl", "p")
CONTENT_SHARE = 0.8  # of the page's prose: the element holding it is the page's content
NOT_WORD = re.compile(r"\W+")


def _chars(text: str | None) -> int:
    return len("".join(text.split())) if text else 0


def furniture(body: HtmlElement, by_links: bool = True) -> list[HtmlElement]:
    """The elements under `body` that are the site's furniture: named so (class or id), or (`by_links`) mostly
    links and not most of the page (a page that is a list of links keeps its list), nor most of the element
    that holds the page's prose (an index page's table of contents, below its heading and introduction). One
    pass from the leaves up counts each element's characters, linked characters and prose (word characters
    outside links and named furniture)."""
    elements = list(body.iter())
    found: list[HtmlElement] = []
    inside: set[HtmlElement] = set()
    for element in elements:
        if not isinstance(element.tag, str) or element.getparent() in inside:
            inside.add(element)
        elif element is not body and _named(element):
            found.append(element)
            inside.add(element)
    chars: dict[HtmlElement, int] = {}
    linked: dict[HtmlElement, int] = {}
    links: dict[HtmlElement, int] = {}
    prose: dict[HtmlElement, int] = {}
    for element in reversed(elements):  # children before their parents
        text, link, count = _chars(element.text), 0, 0
        words = 0 if element in inside else _words(element.text)
        for child in element:
            text += chars.get(child, 0) + _chars(child.tail)
            link += linked.get(child, 0)
            count += links.get(child, 0)
            words += 0 if element in inside else prose.get(child, 0) + _words(child.tail)
        if element.tag == "a":
            link, count, words = text, count + 1, 0
        chars[element], linked[element], links[element], prose[element] = text, link, count, words
    page, content = chars.get(body, 0), _content(body, prose)
    within = set(content.iter())
    for element in elements:
        if element in inside or element.getparent() in inside:
            inside.add(element)
            continue
        text = chars[element]
        most = page / 2 if element not in within or element is content else chars[content] / 2
        linky = (
            by_links
            and element.tag in LINK_BLOCKS
            and links[element] >= LINKS
            and 0 < text < most
            and linked[element] / text >= LINK_SHARE
        )
        if element is not body and linky:
            found.append(element)
            inside.add(element)
    return found


def _named(element: HtmlElement) -> bool:
    names = f"{element.get('class', '')} {element.get('id', '')}".lower().split()
    return any(name in FURNITURE_NAMES or any(part in name for part in FURNITURE_PARTS) for name in names)


def _words(text: str | None) -> int:
    return len(NOT_WORD.sub("", text)) if text else 0


def _content(body: HtmlElement, prose: dict[HtmlElement, int]) -> HtmlElement:
    """The deepest element holding CONTENT_SHARE of the page's prose: where its content is (body if none)."""
    total, element = prose.get(body, 0), body
    while total:
        holder = next((child for child in element if prose.get(child, 0) >= CONTENT_SHARE * total), None)
        if holder is None:
            return element
        element = holder
    return element


def parse(data: bytes, kind: str = "html") -> Parsed:
    """The page's main content; a page whose content is all links (an index page of a documentation site,
    smaller than its sidebar) is read again keeping the blocks of links, rather than refused as empty."""
    try:
        return _parsed(data, by_links=True)
    except Unreadable as error:
        if "no text" not in str(error):
            raise
        return _parsed(data, by_links=False)


def _parsed(data: bytes, by_links: bool) -> Parsed:
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.document_fromstring(data)
    except (lxml.etree.ParserError, ValueError) as error:
        raise Unreadable(f"not HTML ({error})") from None
    title = " ".join((root.findtext(".//title") or "").split()) or None
    for element in cast("list[HtmlElement]", root.xpath(FURNITURE)):
        if element.getparent() is not None:
            element.drop_tree()
    for element in furniture(body if (body := root.find("body")) is not None else root, by_links):
        element.drop_tree()
    main = next(iter(cast("list[HtmlElement]", root.xpath("//main | //*[@role='main'] | //article"))), None)
    if main is None:
        main = body if (body := root.find("body")) is not None else root
        enclosing = cast("list[HtmlElement]", main.xpath(".//header | .//footer"))
        for element in enclosing:  # the page's own, outside any article
            element.drop_tree()
    out = Assembly()
    ids: list[str] = []
    for ancestor in main.iterancestors():  # ids enclosing the main content count too
        if ancestor_id := ancestor.get("id"):
            ids.insert(0, ancestor_id)
    out.place = Location(anchor=ids[-1] if ids else None)
    buffer: list[str] = []

    def flush() -> None:
        out.add(" ".join("".join(buffer).split()))
        buffer.clear()

    def walk(element: HtmlElement, preformatted: bool = False) -> None:
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
    return with_outline(parsed)


def with_outline(parsed: Parsed) -> Parsed:
    """The page with its outline after its text, a section of its own (no anchor: the page): its title and its
    headings in order, what a theme's sidebar table of contents lists and the main content leaves out. A
    passage that sums the page up: known-item hybrid search on Django's pages 0.930 -> 0.944, keyword 0.851
    -> 0.857, nothing lower (benchmarks/results/html-docs-outline.md). Not for a page of fewer than two."""
    headings = list(dict.fromkeys(s.location.headings[-1] for s in parsed.sections if s.location.headings))
    if len(headings) < 2:
        return parsed
    outline = f"{parsed.title or headings[0]}: {'; '.join(headings)}"
    text = f"{parsed.text}\n\n{outline}"
    return replace(
        parsed,
        text=text,
        sections=[*parsed.sections, Section(len(text) - len(outline), len(text), Location())],
    )
