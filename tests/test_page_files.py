"""The search page in headless Chromium over a real folder (a PDF of several pages written here with fpdf2,
Markdown and text files) ingested by `semsearch ingest` and served by a real `semsearch` server: a place is
clicked and its file opens at it (the PDF at its page: the address and the bytes served; a text file as its lines,
the matched ones marked and scrolled to, a hostile file's markup shown as text); the search lives in the address
(`/?q=...` runs it, back and forward return to each search); a folder's `size` and `modified` offer ranges whose
counts and filters agree with the files on disk."""

from __future__ import annotations

import datetime
import os
from pathlib import Path

import httpx
import pytest
import traversal
from test_page import TIMEOUT_MS, browser, expected_ids, served, wait_for_ids  # noqa: F401
from test_server import QUERY, running_server

pytestmark = pytest.mark.xdist_group("page")
pytest.importorskip("fpdf", reason="fpdf2 (the test extra) writes the PDF")

PDF_PAGES = [
    "Introduction to the garden manual. Soil, water and light.",
    "Chapter two: pruning roses in early spring with sharp shears.",
    "Chapter three: the lighthouse keeper's compost heap turns every autumn.",
    "Index of plants and tools.",
]
MARKED_LINE = 150  # where the long notes file says what is searched for
SIZES = 12  # text files of growing sizes and dates: more values than the page offers one button each


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> tuple[Path, Path]:
    base = tmp_path_factory.mktemp("page-files")
    docs, index = base / "docs", base / "index"
    (docs / "notes").mkdir(parents=True)
    traversal.write_pdf(docs / "manual.pdf", PDF_PAGES)
    lines = [f"Line {n} of the long notes, about nothing much." for n in range(1, 300)]
    lines[MARKED_LINE - 1] = "The heron nests beside the old mill pond every April."
    (docs / "notes" / "long.md").write_text("# Long notes\n\n" + "\n".join(lines[2:]) + "\n")
    (docs / "hostile.md").write_text(
        '# Hostile\n\nquokka <script>window.__pwned = 1</script> <img src=x onerror="window.__pwned = 2">\n'
    )
    for n in range(SIZES):
        path = docs / f"size-{n:02d}.txt"
        path.write_text(f"Ledger page {n} of the size sample.\n" + "padding words here. " * (n * n * 20))
        when = datetime.datetime(2020 + n // 4, 1 + n % 12, 15, tzinfo=datetime.timezone.utc).timestamp()
        os.utime(path, (when, when))
    done = traversal.subprocess.run(
        [*traversal.SEMSEARCH, "ingest", str(docs), "--index", str(index), "--quiet"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return docs, index


@pytest.fixture(scope="module")
def files_url(folder):
    with running_server(folder[1]) as url:
        yield url


def place_href(page, doc_id: str) -> str:
    selector = f'#results li[data-id="{doc_id}"] a.place'
    page.wait_for_selector(selector, timeout=TIMEOUT_MS)
    return page.get_attribute(selector, "href")


def test_a_pdf_place_opens_the_pdf_at_its_page(browser, folder, files_url):  # noqa: F811
    docs, _ = folder
    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page.goto(files_url + "/?q=" + "lighthouse keeper compost heap")
    href = place_href(page, "manual.pdf")
    assert href.startswith("/files/") and href.endswith("manual.pdf#page=3")
    with page.expect_response(lambda response: "/files/" in response.url, timeout=TIMEOUT_MS) as opened:
        page.click('#results li[data-id="manual.pdf"] a.place')
    response = opened.value
    assert response.status == 200 and response.headers["content-type"] == "application/pdf"
    # the bytes served at that address (Chromium hands its PDF viewer's page, not the file, to Playwright)
    fetched = httpx.get(files_url + href.split("#")[0], timeout=60)
    assert fetched.content == (docs / "manual.pdf").read_bytes()
    page.wait_for_url("**/files/**manual.pdf#page=3", timeout=TIMEOUT_MS)
    page.close()


def test_a_text_place_opens_at_its_marked_lines(browser, folder, files_url):  # noqa: F811
    page = browser.new_page(viewport={"width": 1200, "height": 700}, bypass_csp=True)
    page.goto(files_url + "/")
    page.fill("#q", "heron nests mill pond")
    page.press("#q", "Enter")
    href = place_href(page, "notes/long.md")
    assert "#L" in href
    page.click('#results li[data-id="notes/long.md"] a.place')
    page.wait_for_url("**/files/**long.md#L*", timeout=TIMEOUT_MS)
    page.wait_for_selector(".line.marked", timeout=TIMEOUT_MS)
    marked = page.eval_on_selector_all(".line.marked", "lines => lines.map(l => [l.id, l.textContent])")
    assert f"L{MARKED_LINE}" in [line_id for line_id, _ in marked]
    assert any("heron nests beside the old mill pond" in text for _, text in marked)
    # scrolled to: the first marked line is in the window, and the page is well below its top
    top = page.evaluate("document.querySelector('.line.marked').getBoundingClientRect().top")
    assert 0 <= top <= 700 and page.evaluate("window.scrollY") > 1000
    page.go_back()  # the search again, from the address
    page.wait_for_selector('#results li[data-id="notes/long.md"]', timeout=TIMEOUT_MS)
    assert page.input_value("#q") == "heron nests mill pond"
    page.close()


def test_a_hostile_file_opens_as_text(browser, files_url):  # noqa: F811
    page = browser.new_page()  # the lines page's own policy in force
    dialogs = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.goto(files_url + "/files/hostile.md#L3")
    page.wait_for_selector("#L3.marked", timeout=TIMEOUT_MS)
    assert "<script>window.__pwned = 1</script>" in page.text_content("#L3")
    assert page.locator("#lines script, #lines img").count() == 0
    assert page.evaluate("window.__pwned") is None and dialogs == []
    page.close()


def test_the_search_is_in_the_address(browser, served):  # noqa: F811
    path, url = served
    first, second = QUERY, "read and write compressed files"
    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page.goto(url + "/?q=" + first.replace(" ", "+"))  # opening the address runs its search
    wait_for_ids(page, expected_ids(path, first, k=10))
    assert page.input_value("#q") == first
    page.fill("#q", second)
    page.press("#q", "Enter")
    wait_for_ids(page, expected_ids(path, second, k=10))
    assert "q=read+and+write+compressed+files" in page.url
    page.click("#facets .facet-value[data-field=kind][data-value=odd]")
    odd = expected_ids(path, second, k=10, where=["kind=odd"])
    wait_for_ids(page, odd)
    assert "where=kind%3Dodd" in page.url
    page.go_back()
    wait_for_ids(page, expected_ids(path, second, k=10))
    assert page.input_value("#filter-inputs input[data-field=kind]") == ""
    page.go_back()
    wait_for_ids(page, expected_ids(path, first, k=10))
    assert page.input_value("#q") == first
    page.go_forward()
    wait_for_ids(page, expected_ids(path, second, k=10))
    page.go_forward()
    wait_for_ids(page, odd)
    assert page.input_value("#filter-inputs input[data-field=kind]") == "=odd"
    page.goto(url + "/?q=" + first.replace(" ", "+") + "&where=year%3E%3D2010&where=year%3C2015&mode=keyword")
    ranged = expected_ids(path, first, k=10, where=["year>=2010", "year<2015"], mode="keyword")
    wait_for_ids(page, ranged)  # a range of the address as the year box's LOW..HIGH
    assert page.input_value("#filter-inputs input[data-field=year]") == "2010..2015"
    assert page.input_value("#mode") == "keyword"
    page.close()


def test_size_and_modified_offer_ranges(browser, folder, files_url):  # noqa: F811
    docs, index = folder
    sizes = {
        path.relative_to(docs).as_posix(): path.stat().st_size for path in docs.rglob("*") if path.is_file()
    }
    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page.goto(files_url + "/?q=ledger+page")
    for field in ("size", "modified"):
        page.wait_for_selector(f"#facets .facet-ranges[data-field={field}] button", timeout=TIMEOUT_MS)
        assert page.locator(f"#facets .facet-value[data-field={field}][data-value]").count() == 0
    ranges = page.eval_on_selector_all(
        "#facets .facet-ranges[data-field=size] button", "bs => bs.map(b => [b.dataset.range, b.textContent])"
    )
    assert 3 <= len(ranges) <= 5
    counted = 0
    for bounds, label in ranges:  # each count is of the files on disk in that range
        low, high = (int(side) if side else None for side in bounds.split(".."))
        inside = [
            n for n, size in sizes.items() if (low is None or size >= low) and (high is None or size < high)
        ]
        assert label.endswith(f"({len(inside)})"), (bounds, label, sizes)
        counted += len(inside)
    assert counted == len(sizes)
    dates = page.eval_on_selector_all(
        "#facets .facet-ranges[data-field=modified] button", "bs => bs.map(b => b.dataset.range)"
    )
    assert len(dates) >= 2 and all(len(side) in (0, 10) for d in dates for side in d.split(".."))
    bounds = ranges[-1][0]
    page.click(f'#facets .facet-ranges[data-field=size] button[data-range="{bounds}"]')
    low = int(bounds.split("..")[0])
    wanted = expected_ids(index, "ledger page", k=10, where=[f"size>={low}"])
    wait_for_ids(page, wanted)
    assert all(sizes[doc_id] >= low for doc_id in wanted)
    assert page.input_value("#filter-inputs input[data-field=size]") == bounds
    assert "where=size%3E%3D" in page.url
    page.close()


def test_places_of_one_document_show_under_it(browser, folder, files_url):  # noqa: F811
    """The hit JSON of places (several hits of one id, as the per-document cap gives them): the server's real
    answer, its PDF hit repeated at other pages, grouped under one document with a link to each page."""
    import json

    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)

    def with_places(route):
        body = route.fetch().json()
        pdf = next(hit for hit in body["hits"] if hit["id"] == "manual.pdf")
        more = [
            {**pdf, "score": pdf["score"] / n, "location": {"page": n, "url": f"/files/manual.pdf#page={n}"}}
            for n in (1, 4)
        ]
        body["hits"] = body["hits"][:1] + more[:1] + body["hits"][1:] + more[1:]
        route.fulfill(status=200, content_type="application/json", body=json.dumps(body))

    page.route("**/search?*", with_places)
    page.goto(files_url + "/?q=lighthouse+keeper+compost")
    page.wait_for_selector('#results li[data-id="manual.pdf"][data-places="3"]', timeout=TIMEOUT_MS)
    ids = page.eval_on_selector_all("#results > li", "items => items.map(item => item.dataset.id)")
    assert ids.count("manual.pdf") == 1 and len(ids) == len(set(ids))
    links = page.eval_on_selector_all(
        '#results li[data-id="manual.pdf"] .hit-place a.place',
        "links => links.map(a => a.getAttribute('href'))",
    )
    assert len(links) == 3 and {"/files/manual.pdf#page=1", "/files/manual.pdf#page=4"} < set(links)
    assert any(link.endswith("manual.pdf#page=3") for link in links)  # the server's own hit
    assert "places" in page.text_content("#status")
    page.close()


def test_with_a_search_key_a_place_opens_with_the_key(browser, folder):  # noqa: F811
    from test_server import SEARCHER

    with running_server(folder[1], search_key=SEARCHER) as url:
        page = browser.new_page(viewport={"width": 1200, "height": 700}, bypass_csp=True)
        page.goto(url + "/?q=heron+nests+mill+pond")
        page.wait_for_selector("#key-box:not([hidden])", timeout=TIMEOUT_MS)
        page.fill("#key", SEARCHER)
        page.dispatch_event("#key", "change")
        page.wait_for_selector('#results li[data-id="notes/long.md"] a.place', timeout=TIMEOUT_MS)
        page.click('#results li[data-id="notes/long.md"] a.place')
        page.wait_for_url("blob:**", timeout=TIMEOUT_MS)  # fetched with the key, opened from what came
        page.wait_for_selector(f"#L{MARKED_LINE}.marked", timeout=TIMEOUT_MS)
        assert "heron nests" in page.text_content(f"#L{MARKED_LINE}")
        page.close()
