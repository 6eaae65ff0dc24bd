"""Emacs Org mode files (formats/org.py): a real .org file written here, read with its headings as each
section's path and its lines, then ingested in a folder with the real model and found by a sentence in its
section."""

from __future__ import annotations

from pathlib import Path

import pytest
from click.testing import CliRunner

from semsearch import Index
from semsearch.cli import main
from semsearch.ingest.sources import open_source

pytest.importorskip("orgparse", reason="the files extra reads .org files: pip install 'semsearch[files]'")

# (line, the heading path of the section holding it); a sentence line is one the search looks for
LINES = [
    ("#+TITLE: Kitchen garden", []),
    ("#+AUTHOR: A. Gardener", []),
    ("Notes kept through the growing season.", []),
    ("* Tomatoes", ["Tomatoes"]),
    ("Tomato plants want full sun and a sheltered wall.", ["Tomatoes"]),
    ("** TODO [#A] Pinch out the side shoots   :weekly:", ["Tomatoes", "Pinch out the side shoots"]),
    ("Remove the shoots that grow between the stem and a leaf.", ["Tomatoes", "Pinch out the side shoots"]),
    ("*** Tools", ["Tomatoes", "Pinch out the side shoots", "Tools"]),
    (
        "A clean pair of snips keeps the cuts from rotting.",
        ["Tomatoes", "Pinch out the side shoots", "Tools"],
    ),
    ("* Compost", ["Compost"]),
    ("Turn the heap every fortnight so that air reaches its middle.", ["Compost"]),
    ("- grass clippings", ["Compost"]),
    ("- coffee grounds", ["Compost"]),
]
SENTENCES = [n for n, (line, _) in enumerate(LINES) if line.endswith(".") and not line.startswith("#")]


@pytest.fixture
def garden(tmp_path: Path) -> Path:
    path = tmp_path / "notes" / "garden.org"
    path.parent.mkdir()
    path.write_text("\n".join(line for line, _ in LINES) + "\n")
    (path.parent / "readme.md").write_text("# Other notes\n\nA Markdown file beside the Org file.\n")
    return path


def test_an_org_file_is_cut_at_its_headings(garden):
    ((_, doc),) = open_source(garden).entries()
    assert doc.title == "Kitchen garden" and doc.metadata["type"] == "org"
    assert doc.text == garden.read_text()  # the source as it is, as for Markdown
    for n in SENTENCES:
        line, path = LINES[n]
        start = doc.text.index(line)
        (section,) = (s for s in doc.sections if s.start <= start < s.end)
        assert list(section.location.headings) == path, line
        assert section.location.line_start <= n + 1 <= section.location.line_end


def test_an_org_file_is_ingested_and_found_in_its_section(garden, tmp_path):
    index = tmp_path / "index"
    result = CliRunner().invoke(main, ["ingest", str(garden.parent), "--index", str(index), "--quiet"])
    assert result.exit_code == 0, result.output
    with Index.open(index) as opened:
        assert len(opened) == 2
        (hit,) = opened.search("how often should I turn the compost heap", k=1, where=["type=org"])
        assert hit.id == "garden.org" and hit.title == "Kitchen garden"
        assert hit.location["headings"] == ["Compost"]
        line = next(n + 1 for n, (text, _) in enumerate(LINES) if "fortnight" in text)
        assert hit.location["line_start"] <= line <= hit.location["line_end"]
        (hit,) = opened.search("snips for cutting the side shoots", k=1)
        assert hit.id == "garden.org"
        assert hit.location["headings"] == ["Tomatoes", "Pinch out the side shoots", "Tools"]
