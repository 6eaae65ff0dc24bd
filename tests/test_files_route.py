"""`serve`'s /files route on a real folder ingested by `semsearch ingest` and a real server on 127.0.0.1: the
files the index holds come back byte for byte (a text file as a page of its escaped lines, HTML sandboxed), hits
carry `location.url` that opens them, and every traversal form of tests/traversal.py (encodings of `..` and `/`,
absolute paths, NUL bytes, links out, a link swapped in after the ingest, a deleted document's file, files never
recorded, a folder swapped for a link) is refused without one byte of what it aimed at."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import traversal
from test_server import SEARCHER, running_server

httpx = pytest.importorskip("httpx")
pytest.importorskip("fpdf", reason="fpdf2 (the test extra) writes the PDF")
pytestmark = pytest.mark.xdist_group("files-route")


@pytest.fixture(scope="module")
def layout(tmp_path_factory) -> traversal.Layout:
    return traversal.build(tmp_path_factory.mktemp("files-route"), traversal.SEMSEARCH)


@pytest.fixture(scope="module")
def url(layout):
    with running_server(layout.index) as base:
        yield base


def test_every_traversal_form_is_refused(layout, url):
    tried = traversal.forms(layout)
    assert len(tried) > 400
    for what, target in tried:
        answer = traversal.request(url, target)
        assert answer.status in (400, 404), (what, target, answer.status, answer.body[:200])
        assert not traversal.leaked(answer), (what, target, traversal.leaked(answer))


def test_the_files_held_come_back_as_they_are(layout, url):
    for what, target, expected in traversal.served_right(layout):
        answer = traversal.request(url, target)
        assert answer.status == 200 and answer.body == expected, (what, answer.status, answer.body[:200])
    pdf = traversal.request(url, "/files/manual.pdf")
    assert pdf.headers["content-type"] == "application/pdf" and pdf.body.startswith(b"%PDF-")
    html = traversal.request(url, "/files/page.html")
    assert html.headers["content-type"].startswith("text/html")
    assert "sandbox" in html.headers["content-security-policy"]  # none of its scripts would run
    lines = traversal.request(url, "/files/notes.md")
    assert lines.headers["content-type"].startswith("text/html")
    assert b'id="L3"' in lines.body and b"The zebra crossing rules." in lines.body
    assert b"script-src 'self'" in lines.headers["content-security-policy"].encode()
    assert traversal.request(url, "/files/notes.md?raw=1").headers["content-type"].startswith("text/plain")


def test_hits_carry_the_address_that_opens_their_place(url):
    hits = httpx.get(f"{url}/search", params={"q": "zebra", "k": 10}, timeout=60).json()["hits"]
    places = {hit["id"]: hit["location"]["url"] for hit in hits if "url" in (hit.get("location") or {})}
    assert places["manual.pdf"].startswith("/files/") and "#page=" in places["manual.pdf"]
    assert places["notes.md"].split("#")[1].startswith("L")
    assert "sub/gone.md" not in places and "link.txt" in places  # the link's document is held, its file not
    for doc_id, place in places.items():
        status = httpx.get(url + place.split("#")[0], timeout=60).status_code
        assert status == (404 if doc_id in ("link.txt", "linkdir/secret2.txt", "sub/swap.md") else 200), (
            doc_id
        )


def test_no_files_and_the_search_key(layout):
    with running_server(layout.index, files=False) as base:
        assert httpx.get(f"{base}/files/notes.md", timeout=60).status_code == 404
        hits = httpx.get(f"{base}/search", params={"q": "zebra"}, timeout=60).json()["hits"]
        assert hits and not any("url" in (hit.get("location") or {}) for hit in hits)
    with running_server(layout.index, search_key=SEARCHER) as base:
        assert traversal.request(base, "/files/notes.md?raw=1").status == 401
        assert traversal.request(base, "/files/notes.md?raw=1", key="wrong").status == 403
        answer = traversal.request(base, "/files/notes.md?raw=1", key=SEARCHER)
        assert answer.status == 200 and answer.body == (layout.docs / "notes.md").read_bytes()


def test_a_folder_swapped_for_a_link_serves_nothing(tmp_path_factory):
    """The ingested folder itself replaced by a link to another holding a file at a recorded path."""
    base = tmp_path_factory.mktemp("swapped")
    docs, other = base / "docs", base / "other"
    docs.mkdir()
    other.mkdir()
    (docs / "notes.md").write_text("# Notes\n\nAbout harbours.\n")
    (other / "notes.md").write_bytes(b"# Notes\n\n" + traversal.SECRET + b"\n")
    layout = traversal.Layout(base, docs, base / "index", other / "notes.md")
    done = traversal.subprocess.run(
        [*traversal.SEMSEARCH, "ingest", str(docs), "--index", str(layout.index), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    with running_server(layout.index) as url:
        assert traversal.request(url, "/files/notes.md").status == 200
        os.rename(docs, base / "docs-moved")
        os.symlink(other, docs)
        for target in ("/files/notes.md", "/files/notes.md?raw=1", "/files/docs/notes.md"):
            answer = traversal.request(url, target)
            assert answer.status == 404 and not traversal.leaked(answer), target
    assert Path(docs).is_symlink()


def test_files_named_alone_are_served_too(tmp_path):
    """`semsearch ingest pdfs/manual.pdf notes.md`: the files are recorded as a folder's are, and served."""
    (tmp_path / "pdfs").mkdir()
    traversal.write_pdf(tmp_path / "pdfs" / "manual.pdf", ["First page.", "The walrus chapter.", "Last."])
    (tmp_path / "notes.md").write_text("# Notes\n\nAbout walruses.\n")
    (tmp_path / "corpus.jsonl").write_text('{"id": "j1", "text": "walrus facts", "path": "notes.md"}\n')
    index = tmp_path / "index"
    done = traversal.subprocess.run(
        [
            *traversal.SEMSEARCH,
            "ingest",
            "pdfs/manual.pdf",
            "notes.md",
            "corpus.jsonl",
            "--index",
            str(index),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    with running_server(index) as url:
        hits = httpx.get(f"{url}/search", params={"q": "walrus"}, timeout=60).json()["hits"]
        places: dict[str, str | None] = {}  # each document's best place (fewer match than k: more follow)
        for hit in hits:
            places.setdefault(hit["id"], (hit.get("location") or {}).get("url"))
        assert places["manual.pdf"] == "/files/pdfs/manual.pdf#page=2"
        assert places["j1"] is None  # a JSON line's `path` is no file the index read
        for target, name in (
            ("/files/pdfs/manual.pdf", "pdfs/manual.pdf"),
            ("/files/manual.pdf", "pdfs/manual.pdf"),
        ):
            answer = traversal.request(url, target)
            assert answer.status == 200 and answer.body == (tmp_path / name).read_bytes()
        answer = traversal.request(url, "/files/notes.md?raw=1")
        assert answer.status == 200 and answer.body == (tmp_path / "notes.md").read_bytes()
        assert traversal.request(url, "/files/corpus.jsonl").status == 404  # read, but not a document file


def test_the_mcp_hit_and_the_address_of_each_kind(layout, url):
    """The MCP tool's hit of a real search carries the same address; place_url for each kind and odd names."""
    from semsearch import Index
    from semsearch.placeurl import place_url
    from semsearch.server.mcp_tools import search_job

    query = "a name with a space, a hash"
    with Index.open(layout.index) as index:
        hit = next(hit for hit in index.search(query, k=10) if hit.id == traversal.ODD_NAME)
        answer = search_job(index, query, 10, [], None, {}, True)
        shaped = next(shaped for shaped in answer["hits"] if shaped["id"] == traversal.ODD_NAME)
        unplaced = search_job(index, query, 10, [], None, {}, False)
    assert all("url" not in (shaped["location"] or {}) for shaped in unplaced["hits"])  # MCP over stdio
    address = shaped["location"]["url"]
    assert address == place_url(hit.metadata, hit.location)
    assert address.split("#")[0].endswith(
        "/docs/odd%20name%20%231%20%C3%BC%3F.md"
    )  # the ingest's absolute path
    assert (
        traversal.request(url, address.split("#")[0] + "?raw=1").body
        == (layout.docs / traversal.ODD_NAME).read_bytes()
    )
    pdf = {"path": "pdfs/m.pdf", "type": "pdf"}
    assert (
        place_url(pdf, {"page": 7}) == "/files/pdfs/m.pdf#page=7"
        and place_url(pdf, None) == "/files/pdfs/m.pdf"
    )
    text = {"path": "/home/me/../me/notes.txt", "type": "text"}
    assert place_url(text, {"line_start": 3, "line_end": 3}) == "/files/home/me/notes.txt#L3"
    assert (
        place_url({"path": "../up/a.md", "type": "markdown"}, {"line_start": 2, "line_end": 9})
        == "/files/up/a.md#L2-L9"
    )
    assert place_url({"path": "s/a.html", "type": "html"}, {"anchor": "x y"}) == "/files/s/a.html#x%20y"
    assert place_url({"path": "a.md"}, {"line_start": 1}) is None  # no file kind: a JSON line's own `path`
    assert place_url({"path": "..", "type": "text"}, None) is None
