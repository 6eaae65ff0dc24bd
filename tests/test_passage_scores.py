"""Keyword places inside a long document: a passage scores by BM25 over the document's own passages, a query
word counting where a passage's words stem to it and under the headings its section sits (retrieval/
passagescores.py). A real Markdown manual, parsed, encoded and indexed; searched by keyword at no cap."""

from __future__ import annotations

from pathlib import Path

import pytest

from semsearch import Index

FILLER = (
    "The examples below use the plotting library with its default theme, and every figure is saved to a file "
    "in the working directory so that it can be compared with the reference output later on. "
)
SECTIONS = {
    "Scatter plots": "Points are drawn one per observation; colour and size may carry two more variables. ",
    "Histograms": "The hist function counts values into bins and draws one bar per bin; choose the bins. ",
    "Bar charts": "Bars stand for categories; unlike a histogram, the gaps between bars carry no meaning. ",
    "Box plots": "A box spans the quartiles and its whiskers reach the extremes within 1.5 box lengths. ",
}


def manual(folder: Path, sections: dict[str, str]) -> Path:
    folder.mkdir(exist_ok=True)
    body = "".join(
        f"## {title}\n\n{FILLER * 3}{text}\n\n{FILLER * 3}\n\n" for title, text in sections.items()
    )
    (folder / "plotting.md").write_text(f"# Plotting\n\n{body}")
    return folder


@pytest.fixture(scope="module")
def indexed(tmp_path_factory):
    work = tmp_path_factory.mktemp("passage-scores")
    index = Index.create(work / "index")
    index.ingest(manual(work / "docs", SECTIONS))
    yield work, index
    index.close()


def first_place(index: Index, query: str) -> dict:
    hits = index.search(query, k=10, mode="keyword", per_document=0)
    assert hits and {hit.id for hit in hits} == {"plotting.md"}
    return hits[0].location or {}


def test_a_section_title_finds_its_section_before_a_passage_that_only_mentions_it(indexed):
    _, index = indexed
    # "histograms" stems to the term "histogram": the Bar charts passage says it once in its text, the
    # Histograms section in its heading (weighted as a title), its text never
    assert first_place(index, "histograms")["headings"][-1] == "Histograms"
    assert first_place(index, "whiskers quartiles")["headings"][-1] == "Box plots"


def test_a_rare_word_outweighs_one_on_every_page(indexed):
    _, index = indexed
    # "plotting", "figure" are in every passage (idf near zero inside the document): "observation" decides
    assert first_place(index, "plotting figure observation")["headings"][-1] == "Scatter plots"


def test_a_changed_document_is_scored_from_its_new_text(indexed):
    work, index = indexed
    assert first_place(index, "whiskers")["headings"][-1] == "Box plots"
    moved = dict(SECTIONS)
    moved["Box plots"] = "A box spans the quartiles of the sample. "
    moved["Scatter plots"] += "Whiskers are not drawn here. "
    index.ingest(manual(work / "docs", moved))
    assert first_place(index, "whiskers")["headings"][-1] == "Scatter plots"
