"""Real documentation HTML: Django's documentation as Debian ships it (`apt-get install
python-django-doc`; or another Sphinx package's with a module index of synopses, --html: sphinx-doc,
python-scrapy-doc), ingested as a folder with passages that follow its sections, against each page as one JSONL
line of its whole text or of its main content (Python's own html.parser, as a conversion script would),
written to benchmarks/results/html-docs.md and html-docs.json (each known item's scores in
html-docs-items.json, for html_docs_pool.py).

    python -m benchmarks html_docs [--html /usr/share/doc/python-django-doc/html] [--work DIR]
                                             [--merges nested,none] [--sentences 300] [--seed 34]
                                             [--text-kb N] [--exclude PREFIX,PREFIX]

--merges: chunking.MERGES' policies, and `siblings` (siblings_joinable: measured here, not in semsearch).

The pages: every page but the release notes, the index pages and the highlighted sources (`_modules/`) (with
--text-kb, the known items' pages, smallest first, up to half that much whole-page text, then others drawn at
random up to all of it: a run on a shared machine in the time there was; with --exclude, not the pages under
those prefixes, e.g. statsmodels' `generated/` one-function pages). The
known items: each module of the module index (py-modindex.html) with a synopsis, the synopsis as the query, the
page it links as the one relevant page; nDCG@10 (one relevant page: 1 / log2(rank + 1) within the top 10) for
dense, keyword and hybrid search with the defaults. Each row is an ingest with the defaults into its own index,
the rows of one run side by side: a JSONL's from the JSONL file (converted before the clock starts), the
folder's from the HTML files (reading and parsing included) to the published index. Below the table, each
folder row's difference from the whole page per known item (`paired`): its mean, standard error and how many
queries rank their page higher or lower, so that a gap of a rank or two on a few queries is read as such.

The anchors: sentences sampled from the pages' paragraphs (the first sentence of a paragraph of 8 to 60 words
in the main content; lxml reads the page, independent of the reader measured), each searched by keyword in the
folder's index; a hit on the sentence's page is right when its `anchor` is the id of the sentence's innermost
enclosing section, or of an element inside that section that holds the sentence.

The folder's reader: semsearch's own (`Index.ingest(DIR)`, as `semsearch ingest DIR` reads a folder) by
default; `--reader standin` measures the stand-in the first results were made with before that reader landed:
lxml, the main content (the element Django's theme puts it in), a Section per stretch of text between section
boundaries, its anchor the innermost section's id, its headings the sections' own headings.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import shutil
import sys
import time
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path

import numpy as np

from benchmarks.suite import OUT, Rows, made_by, markdown_table

CLAIM = "Real documentation HTML as a folder (passages by section) at least as good as each page as one JSONL line"

DEFAULT_HTML = Path("/usr/share/doc/python-django-doc/html")
# not documentation pages: release notes (Django's releases/, Sphinx's changes.html, Scrapy's news.html), the
# indexes, highlighted sources, a 404 page
SKIPPED = (
    "releases/", "changes.html", "news.html", "404.html", "_modules/", "_static/", "_images/", "genindex",
    "search.html", "py-modindex",
)  # fmt: skip
MAIN_IDS = ("yui-main", "main", "content")  # where a theme puts the main content (Django's theme: yui-main)
BLOCKS = {
    "p", "div", "section", "pre", "li", "ul", "ol", "dl", "dt", "dd", "table", "tr", "h1", "h2", "h3", "h4",
    "h5", "h6", "blockquote", "br", "article", "main", "header", "footer", "nav", "aside", "figure",
}  # fmt: skip
HIDDEN = {"script", "style", "noscript", "template"}
VOID = {"br", "img", "meta", "link", "hr", "input"}  # no end tag: no depth inside the main content
MODES = ("dense", "keyword", "hybrid")


def package(root: Path) -> str:
    """The documentation package a folder of /usr/share/doc belongs to (its folder's name), for the report."""
    return root.parent.name if root.name == "html" else root.name


def pages(root: Path) -> list[Path]:
    return sorted(
        p for p in root.rglob("*.html") if not any(s in p.relative_to(root).as_posix() for s in SKIPPED)
    )


# ---- the JSONL baselines: Python's own html.parser, the whole text or the main content ---------------------


class TextParser(HTMLParser):
    """The text of a page (block elements end lines), all of it or only that inside the main content."""

    def __init__(self, main_only: bool):
        super().__init__(convert_charrefs=True)
        self.main_only, self.depth, self.hidden, self.parts, self.title = main_only, 0, 0, [], ""
        self.in_title = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag in HIDDEN:
            self.hidden += 1
        if tag == "title":
            self.in_title = True
        if self.depth:
            self.depth += tag not in VOID
        elif attrs.get("id") in MAIN_IDS or attrs.get("role") == "main":
            self.depth = 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_endtag(self, tag):
        if tag in VOID:  # html.parser ends a self-closed <img ... /> too: it must not close an element
            return
        if tag in HIDDEN:
            self.hidden = max(0, self.hidden - 1)
        if tag == "title":
            self.in_title = False
        if self.depth:
            self.depth -= 1
        if tag in BLOCKS:
            self.parts.append("\n")

    def handle_data(self, data):
        if self.in_title:
            self.title += data
        elif not self.hidden and (self.depth or not self.main_only):
            self.parts.append(data)


def page_record(path: Path, root: Path, main_only: bool) -> dict:
    parser = TextParser(main_only)
    parser.feed(path.read_text(encoding="utf-8", errors="replace"))
    text = re.sub(r"\n\s*\n+", "\n\n", "".join(parser.parts).replace("\u00b6", "")).strip()
    return {"id": path.relative_to(root).as_posix(), "title": parser.title.strip(), "text": text}


# ---- STAND-IN folder reader (until issue 34's HTML reader lands): lxml, sections with anchors ---------------


def main_element(tree):
    """The element a theme puts the main content in (Django's: id yui-main; Sphinx's, Read the Docs':
    role=main), or None."""
    found = next((tree.getroot().get_element_by_id(i, None) for i in MAIN_IDS), None)
    return found if found is not None else next(iter(tree.xpath("//*[@role='main']")), None)


def is_section(element) -> bool:
    return element.tag == "section" or "section" in (element.get("class") or "").split()


def heading_of(element) -> str | None:
    for child in element:
        if isinstance(child.tag, str) and re.fullmatch(r"h[1-6]", child.tag):
            return " ".join(child.text_content().replace("\u00b6", "").split())
    return None


def standin_document(path: Path, root: Path):
    """A page as a Document with Sections (STAND-IN reader)."""
    import lxml.html

    from semsearch.documents import Document, Location, Section

    tree = lxml.html.parse(str(path))
    title = (tree.findtext(".//title") or "").strip()
    main = main_element(tree)
    main = main if main is not None else tree.getroot()
    parts: list[str] = []
    sections: list[Section] = []
    stack: list[tuple[str | None, str | None]] = []  # open sections: (id, heading)
    begun = [0]

    def close() -> None:
        """The text since the last boundary becomes a section at the innermost open section."""
        start, end = begun[0], sum(map(len, parts))
        if end > start and stack:
            anchor = next((a for a, _ in reversed(stack) if a), None)
            headings = tuple(h for _, h in stack if h)
            sections.append(Section(start, end, Location(anchor=anchor, headings=headings)))
        elif end > start and sections:  # text outside any section joins the previous one
            last = sections.pop()
            sections.append(Section(last.start, end, last.location))
        elif end > start:
            sections.append(Section(start, end, Location()))
        begun[0] = end

    def walk(element) -> None:
        if not isinstance(element.tag, str) or element.tag in HIDDEN:
            if element.tail:
                parts.append(element.tail)
            return
        opened = is_section(element)
        if opened:
            close()
            stack.append((element.get("id"), heading_of(element)))
        if element.tag in BLOCKS:
            parts.append("\n")
        if element.text:
            parts.append(element.text)
        for child in element:
            walk(child)
        if element.tag in BLOCKS:
            parts.append("\n")
        if opened:
            close()
            stack.pop()
        if element.tail:
            parts.append(element.tail)

    walk(main)
    close()
    text = "".join(parts).replace("\u00b6", " ")
    rel = path.relative_to(root).as_posix()
    return Document(rel, text, title or None, {"path": rel}, sections=tuple(sections) or None)


# ---- the known items and the sentences -----------------------------------------------------------------


def known_items(root: Path, ids: set[str]) -> list[tuple[str, str]]:
    """(synopsis, page) for each module of the module index with a synopsis whose page is in the corpus. The
    synopsis is the row's last cell: a module with platforms has them in an <em> beside its link ("(Unix)")."""
    import lxml.html

    tree = lxml.html.parse(str(root / "py-modindex.html"))
    out = []
    for row in tree.iter("tr"):
        cells = row.findall("td")
        link, em = row.find(".//a"), cells[-1].find(".//em") if cells else None
        if link is None or em is None or not (em.text_content() or "").strip():
            continue
        page = link.get("href").split("#")[0]
        if page in ids:
            out.append((" ".join(em.text_content().split()), page))
    return out


def sample_sentences(root: Path, files: list[Path], n: int, seed: int) -> list[dict]:
    """Sentences from the pages' paragraphs, each with the anchors that are right for it."""
    import lxml.html

    rng = np.random.default_rng(seed)
    found = []
    for path in files:
        main = main_element(lxml.html.parse(str(path)))
        if main is None:
            continue
        for p in main.iter("p"):
            text = " ".join(p.text_content().split())
            sentence = re.split(r"(?<=[.!?])\s", text)[0]
            if not 8 <= len(sentence.split()) <= 60:
                continue
            right, node = [], p
            while node is not None:  # ids of the elements holding it, up to its innermost section
                if node.get("id"):
                    right.append(node.get("id"))
                if is_section(node):
                    break
                node = node.getparent()
            if node is None or not right:
                continue
            found.append({"page": path.relative_to(root).as_posix(), "sentence": sentence, "right": right})
    chosen = rng.choice(len(found), size=min(n, len(found)), replace=False)
    return [found[i] for i in sorted(chosen)]


# ---- runs -------------------------------------------------------------------------------------------------


def ndcg_at_10(hits: list[str], answer: str) -> float:
    return next((1 / math.log2(rank + 2) for rank, doc in enumerate(hits[:10]) if doc == answer), 0.0)


def with_merge(policy: str):
    """Index ingests whose chunker joins sections by `policy` (chunking.MERGES, or siblings_joinable)."""
    from semsearch.ingest import chunking
    from semsearch.operations import writes

    chunking.MERGES.setdefault("siblings", siblings_joinable)

    original = writes.make_chunker

    def patched(settings, encoder):
        chunker = original(settings, encoder)
        return replace(chunker, merge=policy) if chunker is not None else None

    writes.make_chunker = patched
    return original


def siblings_joinable(first, then) -> bool:
    """Measured, not in chunking.MERGES: a section joins the passage its previous sibling (or the same place)
    begun, so a hub page's short sections (a paragraph per linked page under one heading) share passages as a
    whole page's windows do."""
    return first.page == then.page and then.headings[:-1] == first.headings[:-1]


def without_outline():
    """The HTML reader as it was before a page's outline became a section of its own (formats/html.py): files
    parsed in this process for it (the pool's workers would read with the reader as it is)."""
    from semsearch.ingest.sources import files
    from semsearch.ingest.sources.formats import html

    original, pool_from = html.with_outline, files.POOL_FROM
    html.with_outline, files.POOL_FROM = (lambda parsed: parsed), 10**9

    def undo() -> None:
        html.with_outline, files.POOL_FROM = original, pool_from

    return undo


GAINS: dict[tuple[str, str], list[float]] = {}  # (row, mode) -> each known item's nDCG@10, for `paired`


def paired(rows: list[dict], against: str = "whole page JSONL") -> list[str]:
    """Each folder row's difference from `against` per known item, by mode: the mean, its standard error
    (the known items paired), and how many rank their page higher and lower: whether "at least as good" is
    beyond the noise of so few queries."""
    lines = []
    for row in rows:
        name = row["corpus"]
        if not name.startswith("folder") or (against, "hybrid") not in GAINS:
            continue
        parts = []
        for mode in MODES:
            diff = np.subtract(GAINS[(name, mode)], GAINS[(against, mode)])
            error = diff.std(ddof=1) / math.sqrt(len(diff)) if len(diff) > 1 else 0.0
            parts.append(
                f"{mode} {diff.mean():+.3f} (standard error {error:.3f}; {int((diff > 0).sum())} higher, "
                f"{int((diff < 0).sum())} lower)"
            )
        lines.append(f"- {name} minus {against}, per known item: " + "; ".join(parts) + ".")
    return lines + [""] if lines else []


def items_record(root: Path, pages: int, queries: list[tuple[str, str]], rows: list[dict]) -> str:
    """Each known item's nDCG@10 by corpus and mode (GAINS), with the queries: what html_docs_pool.py pools
    over packages, item by item."""
    scores = {row["corpus"]: {mode: GAINS[(row["corpus"], mode)] for mode in MODES} for row in rows}
    record = {"package": package(root), "html": str(root), "pages": pages, "queries": queries, "ndcg": scores}
    return json.dumps(record, separators=(",", ":"))


def measured(name: str, work: Path, make, queries, sentences) -> dict:
    """An index built by `make(index_path)` (timed), searched by the known items (and the sentences)."""
    from semsearch import Index

    path = work / name
    shutil.rmtree(path, ignore_errors=True)
    began = time.perf_counter()
    make(path)
    seconds = time.perf_counter() - began
    row: dict = {"corpus": name, "ingest s": round(seconds, 1)}
    with Index.open(path) as index:
        row["passages"] = index.state.rows
        for mode in MODES:
            scores = [
                ndcg_at_10([h.id for h in index.search(q, k=10, mode=mode)], answer) for q, answer in queries
            ]
            row[f"nDCG@10 {mode}"] = round(float(np.mean(scores)), 3)
            GAINS[(name, mode)] = scores
        if sentences:
            on_page = right = 0
            for s in sentences:
                hit = next(
                    (h for h in index.search(s["sentence"], k=10, mode="keyword") if h.id == s["page"]), None
                )
                if hit is None:
                    continue
                on_page += 1
                right += bool(hit.location) and hit.location.get("anchor") in s["right"]
            row["page found"] = f"{on_page}/{len(sentences)}"
            row["anchor right (of found)"] = round(right / max(1, on_page), 3)
            row["anchor right (all)"] = round(right / len(sentences), 3)
    row["size MB"] = round(sum(f.stat().st_size for f in path.rglob("*") if f.is_file()) / 1e6, 1)
    return row


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--html", type=Path, default=DEFAULT_HTML)
    parser.add_argument("--work", type=Path, default=Path("/tmp/semsearch-html-docs"))
    parser.add_argument("--merges", default="nested,none")
    parser.add_argument("--sentences", type=int, default=300)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--reader", choices=("auto", "semsearch", "standin"), default="auto")
    parser.add_argument("--no-jsonl", action="store_true", help="the folder's rows only (quality alone)")
    parser.add_argument(
        "--without-outline",
        action="store_true",
        help="also each folder row without a page's outline passage",
    )
    parser.add_argument("--out", default="html-docs", help="results name in benchmarks/results/")
    parser.add_argument(
        "--exclude", default="", help="PREFIX,PREFIX: pages whose relative path starts so are left out"
    )
    parser.add_argument(
        "--text-kb", type=int, default=0, help="pages up to this much whole-page text (0: all): half answers"
    )


def run(config: argparse.Namespace) -> Rows:
    if not (config.html / "py-modindex.html").is_file():
        sys.exit(
            f"{config.html} holds no Sphinx module index: apt-get install python-django-doc, or give --html"
        )
    from semsearch import Index

    reader = config.reader
    if reader == "auto":
        try:
            import semsearch.ingest.sources  # noqa: F401  (the file readers)

            reader = "semsearch"
        except ImportError:
            reader = "standin"
    root = config.html
    excluded = tuple(prefix for prefix in config.exclude.split(",") if prefix)
    files = [f for f in pages(root) if not f.relative_to(root).as_posix().startswith(excluded)]
    if (
        config.text_kb
    ):  # the known items' pages, smallest first, to half the budget; then others drawn at random
        items = {page for _, page in known_items(root, {f.relative_to(root).as_posix() for f in files})}
        sizes = {f: len(page_record(f, root, False)["text"]) for f in files}
        answers = sorted((f for f in files if f.relative_to(root).as_posix() in items), key=sizes.get)
        rest = [files[i] for i in np.random.default_rng(config.seed).permutation(len(files))]
        keep, total = [], 0
        for share, pool in ((0.5, answers), (1.0, [f for f in rest if f not in answers])):
            for f in pool:
                if total + sizes[f] <= share * config.text_kb * 1000:
                    keep.append(f)
                    total += sizes[f]
        files = sorted(keep)
    ids = {f.relative_to(root).as_posix() for f in files}
    queries = known_items(root, ids)
    sentences = sample_sentences(root, files, config.sentences, config.seed)
    work = config.work
    work.mkdir(parents=True, exist_ok=True)
    print(f"{len(files)} pages, {len(queries)} known items, {len(sentences)} sentences", flush=True)

    def jsonl(main_only: bool):
        corpus = work / f"pages-{'main' if main_only else 'whole'}.jsonl"  # converted before the clock starts
        with open(corpus, "w") as out:
            for f in files:
                out.write(json.dumps(page_record(f, root, main_only), ensure_ascii=False) + "\n")

        def make(path: Path) -> None:
            Index.create(path).ingest(corpus)

        return make

    folder_dir = work / "pages"  # the chosen pages, linked at their relative paths: the folder ingested
    shutil.rmtree(folder_dir, ignore_errors=True)
    for f in files:
        link = folder_dir / f.relative_to(root)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(f)

    def folder(policy: str):
        def make(path: Path) -> None:
            original = with_merge(policy)
            try:
                if reader == "semsearch":
                    Index.create(path).ingest(folder_dir)
                else:
                    Index.create(path).add([standin_document(f, root) for f in files])
            finally:
                from semsearch.operations import writes

                writes.make_chunker = original

        return make

    rows = []
    if not config.no_jsonl:
        rows += [
            measured("whole page JSONL", work, jsonl(False), queries, []),
            measured("main content JSONL", work, jsonl(True), queries, []),
        ]
    print(markdown_table(rows), flush=True)
    for policy in config.merges.split(","):
        rows.append(measured(f"folder ({policy})", work, folder(policy), queries, sentences))
        print(markdown_table(rows[-1:]), flush=True)
        if config.without_outline:
            undo = without_outline()
            try:
                rows.append(
                    measured(f"folder ({policy}), no outline", work, folder(policy), queries, sentences)
                )
            finally:
                undo()
            print(markdown_table(rows[-1:]), flush=True)
    text_mb = sum(len(page_record(f, root, False)["text"]) for f in files) / 1e6
    lines = [
        "# Real documentation HTML: a folder's sections against whole pages as JSONL",
        "",
        made_by(),
        "",
        f"Data: [{config.out}.json]({config.out}.json); each known item's scores: "
        f"[{config.out}-items.json]({config.out}-items.json)."
        + (
            " The same without the page's outline: [html-docs-outline.md](html-docs-outline.md)."
            if config.out == "html-docs"
            else ""
        ),
        "",
        f"{package(root)} {root} ({len(files)} pages, {text_mb:.1f} MB of whole-page text), {len(queries)} known items "
        f"(module synopsis -> its page), {len(sentences)} sentences for the anchors. Every ingest with the "
        "defaults, one after another in one run (timings: ratios only; the machine is shared). "
        + (
            "The folder is read by semsearch's own HTML reader (`ingest DIR`)."
            if reader == "semsearch"
            else "**The folder's reader here is the benchmark's STAND-IN** (lxml; see the script), not "
            "semsearch's own, which had not landed when this ran."
        ),
        "",
        *markdown_table(rows),
        *paired(rows),
        *paired(rows, "main content JSONL"),
    ]
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / f"{config.out}.md").write_text("\n".join(lines) + "\n")
    (OUT / f"{config.out}.json").write_text(json.dumps(rows, indent=1) + "\n")
    (OUT / f"{config.out}-items.json").write_text(items_record(root, len(files), queries, rows) + "\n")
    print("\n".join(lines))
    return rows
