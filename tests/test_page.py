"""The search page in a real browser: headless Chromium (Debian's package) driven by Playwright. It types a
query, checks the results against Index.search, applies a filter, clicks a facet value, turns a page and follows
a hit's "similar" link (each against Index.search or Index.similar), checks the marks against the API's
highlights, saves screenshots; documents holding `<script>` and `<img onerror>` show as text and run nothing.
Skipped where Chromium is not installed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import threading
from pathlib import Path

import pytest
from test_server import ADMIN, QUERY, SEMSEARCH, admin, running_server

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("page")

httpx = pytest.importorskip("httpx")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The README's picture of the page is this test's screenshot when SEMSEARCH_SCREENSHOT names where (e.g.
# benchmarks/results/serve.png); the facets, pages and similar pictures go beside it (page-facets.png, ...).
# A plain run leaves the repository as it was.
SCREENSHOT = "SEMSEARCH_SCREENSHOT"
ARGS = [
    "--no-sandbox",
    "--headless",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
TIMEOUT_MS = 30_000
# Pages open with bypass_csp: Playwright's waits evaluate strings, which the page's policy forbids.


@pytest.fixture(scope="module")
def browser():
    if not Path(CHROMIUM).exists():
        pytest.skip(
            "no Chromium: install Debian's package (apt-get install -y chromium; `make test` does as root)"
        )
    sync_api = pytest.importorskip(
        "playwright.sync_api", reason="playwright is not installed (the test extra)"
    )
    with sync_api.sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def index_copy(sample_encoded, tmp_path):
    from conftest import copy_index

    return copy_index(sample_encoded, tmp_path / "index")


@pytest.fixture(scope="module")
def served(sample_encoded, tmp_path_factory):
    """One server over a copy of the sample for the tests that only read: (its index, its URL)."""
    from conftest import copy_index

    path = copy_index(sample_encoded, tmp_path_factory.mktemp("page") / "index")
    with running_server(path) as url:
        yield path, url


def screenshot_path(name: str, tmp_path: Path) -> Path:
    """Where a screenshot goes: beside SEMSEARCH_SCREENSHOT's if it is set, else the test's own folder."""
    if named := os.environ.get(SCREENSHOT):
        return Path(named).with_name(name) if name != "serve.png" else Path(named)
    return tmp_path / name


def save_screenshot(page, name: str, tmp_path: Path) -> None:
    path = screenshot_path(name, tmp_path)
    page.screenshot(path=str(path), full_page=False)
    assert path.read_bytes().startswith(b"\x89PNG")


def result_ids(page) -> list[str]:
    return page.eval_on_selector_all("#results li", "items => items.map(item => item.dataset.id)")


def expected_ids(path: Path, query: str, **options) -> list[str]:
    from semsearch import Index

    with Index.open(path) as index:  # the page shows a document once, its places under it
        return list(dict.fromkeys(hit.id for hit in index.search(query, **options)))


def wait_for_ids(page, ids: list[str]) -> None:
    page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('#results li')].map(li => li.dataset.id)) === "
        "JSON.stringify(ids)",
        arg=ids,
        timeout=TIMEOUT_MS,
    )


def test_search_as_you_type_filter_and_keyboard(browser, served, tmp_path):
    index_copy, url = served
    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page.goto(url + "/")
    page.wait_for_selector("#filter-inputs input[data-field=kind]", timeout=TIMEOUT_MS)
    assert page.text_content("#info-list").count("300") >= 1  # the info panel: documents
    # and the isotropy figures, the spectrum drawn raw against transformed from the API's numbers
    assert "mean cosine" in page.text_content("#info-list")
    assert page.eval_on_selector_all("#spectrum polyline", "lines => lines.length") == 2
    page.type("#q", QUERY, delay=20)  # as a person types: debounced, searched once typing stops
    wait_for_ids(page, expected_ids(index_copy, QUERY, k=10))
    assert "10 results in" in page.text_content("#status")
    marks = page.eval_on_selector_all("#results mark", "marks => marks.map(m => m.textContent.toLowerCase())")
    assert {"date", "string"} <= set(marks)
    # the snippet's highlights as the server made them: whole words, never a piece of one
    beside = page.eval_on_selector_all(
        "#results mark",
        "marks => marks.map(m => (m.previousSibling ? m.previousSibling.textContent.slice(-1) : ' ') +"
        " (m.nextSibling ? m.nextSibling.textContent.slice(0, 1) : ' '))",
    )
    assert beside and not any(char.isalnum() for pair in beside for char in pair)

    page.fill("#filter-inputs input[data-field=kind]", "odd")
    page.fill("#filter-inputs input[data-field=year]", ">= 2010")
    wanted = expected_ids(index_copy, QUERY, k=10, where=["kind=odd", "year>=2010"])
    wait_for_ids(page, wanted)
    metadata = page.eval_on_selector_all("#results li .meta", "rows => rows.map(r => r.textContent)")
    assert all("kind: odd" in row for row in metadata)
    save_screenshot(page, "serve.png", tmp_path)

    page.focus("#q")
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.id") == wanted[0]
    page.keyboard.press("ArrowDown")
    assert page.evaluate("document.activeElement.dataset.id") == wanted[1]
    page.keyboard.press("Escape")
    assert page.evaluate("document.activeElement.id") == "q"

    page.fill("#filter-inputs input[data-field=year]", "< lots")  # a bad filter: the API's message
    page.wait_for_selector("#status.error", timeout=TIMEOUT_MS)
    assert "year" in page.text_content("#status")
    page.close()


def test_phone_width(browser, served):
    index_copy, url = served
    page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, bypass_csp=True)
    page.goto(url + "/")
    page.type("#q", QUERY)
    wait_for_ids(page, expected_ids(index_copy, QUERY, k=10))
    assert page.evaluate("document.documentElement.scrollWidth") <= 390
    page.close()


def page_marks(page) -> list[list[str]]:
    return page.eval_on_selector_all(
        "#results li", "items => items.map(li => [...li.querySelectorAll('mark')].map(m => m.textContent))"
    )


def test_facets_pages_similar_and_marks(browser, served, tmp_path):
    from semsearch import Index

    path, url = served
    with Index.open(path) as index:
        fields = index.info()["fields"]
        first = index.search(QUERY, k=10, facets=fields)
        second = [hit.id for hit in index.search(QUERY, k=10, offset=10)]
        odd = [hit.id for hit in index.search(QUERY, k=10, where=["kind=odd"])]
    page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
    page.goto(url + "/")
    page.wait_for_selector("#filter-inputs input[data-field=kind]", timeout=TIMEOUT_MS)
    page.fill("#q", QUERY)
    wait_for_ids(page, [hit.id for hit in first])
    # each hit's marks are <mark> elements holding exactly the spans the API's highlights name
    assert page_marks(page) == [
        [hit.snippet["text"][start:end] for start, end in hit.snippet["highlights"]] for hit in first
    ]
    # the facet counts as buttons, one per value the index counts for the query, for the fields of few values;
    # a field of many numbers as ranges (year: 20 values), one of many strings (module: 46) none
    few = [name for name in fields if len(first.facets[name]) <= 8]
    assert few == ["kind"]
    page.wait_for_selector("#facets .facet-ranges[data-field=year]", timeout=TIMEOUT_MS)
    shown = page.eval_on_selector_all(
        "#facets .facet-value[data-value]",
        "bs => bs.map(b => [b.dataset.field, b.dataset.value, b.textContent])",
    )
    assert shown == [
        [name, value, f"{value} ({count})"] for name in few for value, count in first.facets[name].items()
    ]
    assert page.locator("#facets [data-field=module]").count() == 0
    ranges = page.eval_on_selector_all(
        "#facets .facet-ranges[data-field=year] button", "bs => bs.map(b => [b.dataset.range, b.textContent])"
    )
    years = [2000 + i % 20 for i in range(300)]  # the sample's years (conftest.encoded_once), counted here
    assert len(ranges) >= 4
    for bounds, label in ranges:
        low, high = (float(side) if side else None for side in bounds.split(".."))
        inside = [y for y in years if (low is None or y >= low) and (high is None or y < high)]
        assert label.endswith(f"({len(inside)})"), (bounds, label)
    assert sum(int(label.rsplit("(", 1)[1].rstrip(")")) for _, label in ranges) == 300

    page.click("#next")  # page 2 is Index.search's offset 10
    wait_for_ids(page, second)
    assert page.text_content("#page") == "page 2" and not page.is_disabled("#previous")
    save_screenshot(page, "page-pages.png", tmp_path)
    page.click("#previous")
    wait_for_ids(page, [hit.id for hit in first])

    page.click("#facets .facet-value[data-field=kind][data-value=odd]")  # a value filters the results
    wait_for_ids(page, odd)
    assert page.input_value("#filter-inputs input[data-field=kind]") == "=odd"
    save_screenshot(page, "page-facets.png", tmp_path)

    example = odd[0]  # its "similar" link: Index.similar's hits under the filter the page shows
    with Index.open(path) as index:
        alike = [hit.id for hit in index.similar([example], k=10, where=["kind=odd"])]
    page.click(f'#results li[data-id="{example}"] .similar')
    wait_for_ids(page, alike)
    assert example not in alike and example in page.text_content("#status")
    save_screenshot(page, "page-similar.png", tmp_path)
    page.close()


def test_documents_cannot_run_code_in_the_page(browser, index_copy):
    hostile = [
        {
            "id": "<img src=x onerror=window.__pwned=1>",
            "title": "<script>window.__pwned = 2</script>zebra marker",
            "text": 'zebra marker <img src=x onerror="window.__pwned=3; alert(3)"> and <b>bold</b>',
            "note": "<svg onload=alert(4)>",
        },
        {"id": "x2", "title": "zebra marker two", "text": "zebra marker <iframe src=javascript:alert(5)>"},
    ]
    with running_server(index_copy, api_key=ADMIN) as url:
        assert httpx.post(f"{url}/documents", json=hostile, headers=admin(), timeout=60).status_code == 200
        # Without the page's Content-Security-Policy (which would stop inline code anyway): the rendering
        # alone must keep the documents inert.
        page = browser.new_page(bypass_csp=True)
        dialogs = []
        page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
        page.goto(url + "/")
        page.type("#q", "zebra marker <img src=x onerror=alert(6)>")
        page.wait_for_function("document.querySelectorAll('#results li').length === 10", timeout=TIMEOUT_MS)
        page.wait_for_timeout(300)  # time for anything that would run to run
        titles = page.eval_on_selector_all("#results .title", "ts => ts.map(t => t.textContent)")
        assert hostile[0]["title"] in titles and "zebra marker two" in titles
        text = page.text_content("#results")
        assert 'onerror="window.__pwned=3; alert(3)"' in text and "<svg onload=alert(4)>" in text
        assert hostile[0]["id"] in text
        assert page.evaluate("window.__pwned") is None and dialogs == []
        # the marks of a hostile snippet hold its text as text: the words asked, `<img` left as it stands
        marks = page.eval_on_selector_all("#results mark", "ms => ms.map(m => m.textContent.toLowerCase())")
        assert {"zebra", "marker", "img", "onerror"} <= set(marks)
        assert "<img" in text and page.locator("#results .passage *:not(mark)").count() == 0
        assert (
            page.locator("#results img, #results script, #results svg, #results iframe, #results b").count()
            == 0
        )
        page.close()


def test_the_page_picks_an_index_of_several(browser, sample_encoded, tmp_path):
    from conftest import copy_index

    from semsearch import Index

    code = copy_index(sample_encoded, tmp_path / "code")
    even = copy_index(sample_encoded, tmp_path / "even")
    with Index.open(even) as index:
        index.delete(where=["kind=odd"])
    command = [*SEMSEARCH, "serve", "--index", str(code), "--index", str(even), "--port", "0"]
    process = subprocess.Popen(command, stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"serving (http://127\.0\.0\.1:\d+)/", process.stderr.readline())[1]
        threading.Thread(target=process.stderr.read, daemon=True).start()
        page = browser.new_page(viewport={"width": 1200, "height": 900}, bypass_csp=True)
        page.goto(url + "/")
        page.wait_for_selector(
            "#index-box:not([hidden]) #index option[value=even]", state="attached", timeout=TIMEOUT_MS
        )
        assert page.eval_on_selector_all("#index option", "options => options.map(o => o.textContent)") == [
            "code",
            "even",
        ]
        page.select_option("#index", "even")
        page.wait_for_function(
            "document.querySelector('#info-list').textContent.includes('150')", timeout=TIMEOUT_MS
        )
        page.fill("#q", QUERY)
        page.press("#q", "Enter")
        wanted = expected_ids(even, QUERY, k=10)
        wait_for_ids(page, wanted)
        assert "index=even" in page.url
        page.goto(page.url)  # the address keeps the index chosen
        wait_for_ids(page, wanted)
        assert page.eval_on_selector("#index", "select => select.value") == "even"
        page.close()
    finally:
        process.terminate()
        process.wait(30)
