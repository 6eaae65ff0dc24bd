"""A manual's own signposts (issue 52): a PDF written here by fpdf2 (examples/make_manual.py) with an outline, a
contents page of dot leaders and a back-of-book index. Its sections carry their heading paths from the outline,
its contents and index pages are cut into no passage, so a section's title finds the section's page, not the
contents page, on every side of the search; the ingest's bar and summary count passages."""

import importlib.util
import json

import pytest
from conftest import REPO, command_here

from semsearch import Index
from semsearch.documents import Document
from semsearch.ingest.listings import is_listing, listed_place
from semsearch.ingest.sources.formats import pdf


@pytest.fixture(scope="module")
def manual_module():
    spec = importlib.util.spec_from_file_location("make_manual", REPO / "examples" / "make_manual.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def manual(manual_module, tmp_path_factory):
    return manual_module.write_manual(tmp_path_factory.mktemp("manual") / "manual.pdf")


@pytest.fixture(scope="module")
def manual_index(manual, tmp_path_factory):
    path = tmp_path_factory.mktemp("index") / "manual"
    with Index.create(path) as index:
        index.ingest(manual)
    return path


def test_the_outline_gives_each_section_its_heading_path(manual, manual_module):
    parsed = pdf.parse(manual.read_bytes())
    by_page = {}
    for section in parsed.sections:
        by_page.setdefault(section.location.page, []).append(section.location.headings)
    for chapter, section, page in manual_module.section_pages():
        number = list(manual_module.CHAPTERS).index(chapter) + 1
        assert by_page[page][-1] == (f"{number} {chapter}", section)
    assert by_page[1] == [()] and by_page[2] == [()]  # before the outline's first heading: none
    # a page where a chapter and its first section start is cut where the section's title is
    [chapter_part, section_part] = [s for s in parsed.sections if s.location.page == 6 - 1]
    assert parsed.text[chapter_part.start : chapter_part.end].strip() == "2 Storing Data"
    assert parsed.text[section_part.start : section_part.end].startswith("2.1 Tables and Columns")


def test_without_an_outline_the_headings_come_from_the_contents_page(manual_module, tmp_path):
    bare = manual_module.write_manual(tmp_path / "bare.pdf", outline=False)
    assert not pdf.outline(pdfium_document(bare))
    parsed = pdf.parse(bare.read_bytes())
    last = {section.location.page: section.location.headings for section in parsed.sections}
    for _, section, page in manual_module.section_pages():
        assert last[page][-1] == section  # the contents' page numbers, found where the title begins a line


def pdfium_document(path):
    import pypdfium2

    return pypdfium2.PdfDocument(path.read_bytes())


def test_contents_and_index_pages_are_listings_and_cut_into_no_passage(manual, manual_index):
    parsed = pdf.parse(manual.read_bytes())
    listings = [s.location.page for s in parsed.sections if is_listing(parsed.text[s.start : s.end])]
    assert listings == [2, 11]  # the contents page and the index, nothing else
    spans = _passage_pages(manual_index, manual)
    assert 2 not in spans and 11 not in spans and {3, 6, 10} <= spans


def _passage_pages(index_path, manual) -> set[int]:
    """The pages the index's passages of the manual are on (from the chunker, as the ingest cut them)."""
    from semsearch.documents import passage_locations
    from semsearch.ingest.creation import make_chunker

    parsed = pdf.parse(manual.read_bytes())
    doc = Document("manual.pdf", parsed.text, parsed.title, sections=parsed.sections)
    with Index.open(index_path) as index:
        chunker = make_chunker(index.settings, lambda: index.directory.encoder)
        [passages] = chunker.split([doc])
        assert index.state.rows == len(passages)  # the index holds what this chunker cuts
    return {place.page for place in passage_locations(doc, [p.span for p in passages])}


@pytest.mark.parametrize("mode", ["hybrid", "keyword", "dense"])
def test_a_section_title_finds_its_section_not_the_contents(manual_index, manual_module, mode):
    with Index.open(manual_index) as index:
        for _, section, page in manual_module.section_pages():
            [hit] = index.search(section, k=1, mode=mode)
            location = hit.to_json()["location"]
            assert location["page"] == page, (mode, section, location)
            assert location["headings"][-1] == section


def test_a_document_that_is_all_listing_keeps_its_passages(manual_index):
    words = [
        "alpha",
        "beta",
        "gamma",
        "delta",
        "epsilon",
        "zeta",
        "theta",
        "kappa",
        "lambda",
        "sigma",
        "omega",
    ]
    contents = "\n".join(f"{n} The {words[n % 11]} section . . . . . . . . . . {n + 2}" for n in range(1, 40))
    doc = Document("contents", contents)
    from semsearch.ingest.creation import make_chunker

    with Index.open(manual_index) as index:
        chunker = make_chunker(index.settings, lambda: index.directory.encoder)
        [passages] = chunker.split([doc])
        assert len(passages) > 1 and passages[0].span[0] == 0
        prose = "A paragraph of prose that runs on and on about nothing in particular. " * 30
        [mixed] = chunker.split([Document("mixed", contents + "\n" + prose)])
    assert all(span_start >= len(contents) - 80 for span_start, _ in (p.span for p in mixed))


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        ("2.2 Advanced Indexing . . . . . . . . . . 168", 2),
        ("Classes . . . . . . . . . . . . . 16, 52", 2),
        ("histogram, 45, 67", 2),
        ("Preface ........ vii", 2),
        ("%*% . . . . . . . . . . 24", 2),
        ("1 Introduction 1", 1),
        ("Mazda RX4 21.0 6 160 110", 0),  # a row of data
        ("setosa 5.1 3.5 1.4 0.2", 0),
        ("the civil", 0),  # a word's tail that reads as a roman numeral
        ("42", 0),
    ],
)
def test_a_line_lists_a_place_when_it_ends_in_page_references_after_words(line, kind):
    assert listed_place(line) == kind


def test_tables_and_prose_are_not_listings():
    table = "\n".join(f"sample{n} {n * 1.5:.1f} {n} {n * 3}" for n in range(1, 30))
    counts = "\n".join(f"setosa {n}" for n in range(1, 30))  # rows ending in integers, no leaders
    prose = "\n".join(["The server listens on port 8080 and keeps a cache of 512"] + ["More words here."] * 9)
    assert not any(is_listing(text) for text in (table, counts, prose))


def test_the_ingest_bar_counts_passages_and_the_summary_their_rate(manual, tmp_path):
    result = command_here("ingest", manual, "--index", tmp_path / "index")
    assert result.returncode == 0, result.stderr
    with Index.open(tmp_path / "index") as index:
        passages = index.state.rows
    assert f"{passages}/{passages} [" in result.stderr and "passage" in result.stderr
    assert "1/1 docs" in result.stderr
    summary = result.stderr.strip().splitlines()[-1]
    assert "passages/s" in summary and f"; {passages} passages" in summary, summary
    hits = command_here("query", "Replication", "--index", tmp_path / "index", "--json").stdout.splitlines()
    assert json.loads(hits[0])["location"] == {"page": 9, "headings": ["3 Operations", "Replication"]}


def test_no_place_of_a_manual_is_on_its_contents_or_index(manual_index):
    with Index.open(manual_index) as index:
        for mode in ("hybrid", "keyword", "dense"):
            hits = index.search("indexing compression replication backup", k=10, per_document=0, mode=mode)
            pages = [hit.to_json()["location"]["page"] for hit in hits]
            assert not {2, 11} & set(pages), (mode, pages)  # the contents and index hold every word asked
            assert (
                len(hits) == 10 if mode != "keyword" else len(hits) >= 5
            )  # keyword: passages with the words
