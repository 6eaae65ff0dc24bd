"""Passages that follow a document's sections, and every hit pointing back into its file (issue 34): no passage
crosses a section; each passage's stored location is right against the file's text (line numbers counted from
the raw text, the heading path read from its headings); a hit carries it in JSON and the CLI prints it; an index
made before locations still answers, and an export round trip keeps them."""

from __future__ import annotations

import json
import re
import shutil

import pytest
from click.testing import CliRunner
from conftest import REPO

from semsearch import Index
from semsearch.cli import main
from semsearch.documents import Document, Location, Section
from semsearch.ingest.chunking import Chunker

pytestmark = pytest.mark.xdist_group("locations")

TOPICS = [
    ("Installation", 1, "Install the package with the installer that ships for your platform before anything else."),
    ("Linux", 2, "On Debian and Ubuntu the apt package manager fetches the library and its compiled parts. "
     "Fedora users reach for dnf instead, and Arch keeps a package in its user repository. "
     "Each of them puts the command line tool on the path, so a shell can run it at once. "
     "Upgrades arrive with the distribution's own updates, signed by its maintainers."),
    ("Mac", 2, "Homebrew installs it."),
    ("Windows", 2, "A wheel for Windows carries everything; the installer adds a start menu entry."),
    ("Configuration", 1, "Settings live in a TOML file beside the index."),
    ("Logging", 2, "Every write appends a line to the journal with its time, its size and the user who made it. "
     "Rotated journals are compressed after a week and deleted after a year unless a retention policy says "
     "otherwise. A verbose flag prints the same lines to the terminal while a command runs, which helps when a "
     "cron job fails at night and nobody watches it."),
    ("Colours", 3, "Terminals that understand colour show warnings in yellow."),
    ("Troubleshooting", 1, "A damaged index names the file that restores it; the check command repairs the rest."),
]  # fmt: skip


def markdown() -> str:
    """A Markdown file's text: a heading per topic, its paragraph (wrapped over several lines) below."""
    out = []
    for heading, level, body in TOPICS:
        words = body.split()
        lines = [" ".join(words[i : i + 9]) for i in range(0, len(words), 9)]
        out += ["#" * level + " " + heading, "", *lines, ""]
    return "\n".join(out)


def heading_sections(text: str) -> tuple[Section, ...]:
    """A Markdown text's heading sections with their line ranges and heading paths (what a file reader gives)."""
    starts = [m.start() for m in re.finditer(r"^#+ ", text, re.M)] + [len(text)]
    sections, path = [], []
    for start, end in zip(starts, starts[1:]):
        level, heading = re.match(r"(#+) (.*)", text[start:]).groups()
        path = [*path[: len(level) - 1], heading]
        first, last = text.count("\n", 0, start) + 1, text.count("\n", 0, end - 1) + 1
        sections.append(Section(start, end, Location(line_start=first, line_end=last, headings=tuple(path))))
    return tuple(sections)


HTML_TEXT = "Intro to the guide.\nUse apt to install it on Linux machines.\nThe registry keeps your settings."
HTML_SECTIONS = (  # sibling sections: each its own passage
    Section(0, 20, Location(anchor="intro", headings=("Intro",))),
    Section(20, 61, Location(anchor="s-linux", headings=("Linux",))),
    Section(61, len(HTML_TEXT), Location(anchor="s-windows", headings=("Windows",))),
)
PDF_PAGES = [
    "The first page talks about volcanoes and lava.",
    "Page two explains how glaciers carve valleys.",
]


def documents() -> list[Document]:
    text = markdown()
    pdf = "\n".join(PDF_PAGES)
    return [
        Document(
            "notes/setup.md", text, "Setup", {"path": "notes/setup.md"}, sections=heading_sections(text)
        ),
        Document("guide.html", HTML_TEXT, "Guide", {"path": "site/guide.html"}, sections=HTML_SECTIONS),
        Document(
            "manual.pdf",
            pdf,
            None,
            sections=(
                Section(0, len(PDF_PAGES[0]), Location(page=1)),
                Section(len(PDF_PAGES[0]) + 1, len(pdf), Location(page=2)),
            ),
        ),
        Document("plain", "A note without sections about baking sourdough bread at home."),
    ]


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    path = tmp_path_factory.mktemp("locations") / "index"
    with Index.create(path) as made:
        made.add(documents())
    return path


def passages_of(index: Index, doc_id: str) -> list[tuple[tuple[int, int], dict | None]]:
    """A document's passages as stored: (span, location) per vector row."""
    store = index.store
    pk = store.existing_ids([doc_id])[doc_id][0]
    count = int(store.passages().counts_of([pk])[0])
    rows = list(range(pk, pk + count))
    spans, locations = store.spans(rows), store.locations(rows)
    text = store.get([pk])[pk]["text"]
    return [(spans.get(row, (0, len(text))), locations.get(row)) for row in rows]


def test_passages_never_cross_a_section(index):
    with Index.open(index) as opened:
        tokenizer = opened.directory.encoder.tokenizer
    doc = documents()[0]
    for merge in ("none", "same", "nested", "any"):
        spans = [p.span for p in Chunker(tokenizer, 32, 8, merge).split([doc])[0]]
        assert spans == sorted(spans)
        for start, end in spans:
            for section in doc.sections:
                body = doc.text[section.start : section.end]
                low = section.start + len(body) - len(body.lstrip())
                high = section.start + len(body.rstrip())
                inside = section.start <= start and end <= section.end
                whole = start <= low and high <= end
                apart = end <= section.start or section.end <= start
                assert inside or whole or apart, (merge, (start, end), section)
        if merge == "none":  # a passage per section at least, every word of the text in some passage
            assert len(spans) >= len(doc.sections)
            covered = " ".join(doc.text[a:b] for a, b in spans)
            assert set(doc.text.split()) <= set(covered.split())


def test_each_passage_location_is_right_against_the_raw_text(index):
    raw = markdown()  # the file as it is on disk
    with Index.open(index) as opened:
        stored = passages_of(opened, "notes/setup.md")
    assert len(stored) > 3 and all(location is not None for _, location in stored)
    for (start, end), location in stored:
        first_line = raw.count("\n", 0, start) + 1
        last_line = raw.count("\n", 0, end - 1) + 1
        assert (location["line_start"], location["line_end"]) == (first_line, last_line)
        # the heading path: the headings in force at the passage's first line, read from the raw lines
        path: list[str] = []
        for line in raw.split("\n")[:first_line]:
            if m := re.match(r"(#+) (.*)", line):
                path = [*path[: len(m.group(1)) - 1], m.group(2)]
        assert location["headings"] == path
        assert set(location) == {"line_start", "line_end", "headings"}
    # a long section is cut inside: several passages, each narrowed to its own lines
    linux = [loc for _, loc in stored if loc["headings"] == ["Installation", "Linux"]]
    assert len(linux) >= 2 and len({loc["line_start"] for loc in linux}) == len(linux)


def test_hits_carry_their_location_in_json_and_the_cli_prints_it(index):
    with Index.open(index) as opened:
        hit = next(h for h in opened.search("apt install on Linux machines", k=4) if h.id == "guide.html")
        assert hit.to_json()["location"] == {"anchor": "s-linux", "headings": ["Linux"]}
        pdf = opened.search("glaciers carve valleys", k=1, mode="keyword")[0]
        assert (pdf.id, pdf.to_json()["location"]) == ("manual.pdf", {"page": 2})
        plain = opened.search("sourdough bread", k=1, mode="keyword")[0]
        assert plain.id == "plain" and plain.to_json()["location"] is None
        homebrew = opened.search("Homebrew installs it", k=1, mode="keyword")[0]
        expected_line = markdown().split("\n").index("Homebrew installs it.") + 1
        assert homebrew.location["line_start"] <= expected_line <= homebrew.location["line_end"]
    runner = CliRunner()
    result = runner.invoke(main, ["query", "glaciers carve valleys", "--index", str(index), "-k", "1"])
    assert result.exit_code == 0, result.output
    assert "at manual.pdf (page 2)" in result.output
    result = runner.invoke(main, ["query", "apt install Linux", "--index", str(index), "--mode", "keyword"])
    assert "at site/guide.html#s-linux  Linux" in result.output  # the metadata's path, not the id
    result = runner.invoke(
        main, ["query", "Homebrew installs it", "--index", str(index), "--mode", "keyword"]
    )
    line = homebrew.location["line_start"]
    assert f"at notes/setup.md:{line}  Installation > Mac" in result.output
    result = runner.invoke(main, ["query", "Homebrew", "--index", str(index), "--json", "-k", "1"])
    assert json.loads(result.output.splitlines()[0])["location"]["headings"] == ["Installation", "Mac"]


def test_an_export_round_trip_keeps_the_locations(index, tmp_path):
    with Index.open(index) as opened:
        before = {doc.id: passages_of(opened, doc.id) for doc in documents()}
        for vectors in (False, True):
            out = tmp_path / f"export-{vectors}.jsonl"
            opened.export(out, vectors=vectors)
            path = tmp_path / f"import-{vectors}"
            result = CliRunner().invoke(main, ["ingest", str(out), "--index", str(path)])
            assert result.exit_code == 0, result.output
            with Index.open(path) as imported:
                assert {doc.id: passages_of(imported, doc.id) for doc in documents()} == before


def test_an_index_made_before_locations_answers_and_takes_sectioned_documents(tmp_path):
    path = tmp_path / "legacy"
    shutil.copytree(REPO / "tests" / "data" / "legacy-v1" / "index", path)
    with Index.open(path) as index:
        hits = index.search("parse a date from a string", k=3)
        assert hits and all(hit.location is None and hit.to_json()["location"] is None for hit in hits)
        index.add([documents()[1]])
        hit = index.search("apt install Linux machines", k=1, mode="keyword")[0]
        # that index cuts no passages: the document is one, placed at its first section
        assert (hit.id, hit.location) == ("guide.html", {"anchor": "intro", "headings": ["Intro"]})
