"""The search page in a real browser: headless Chromium (Debian's package) driven by Playwright. It types a
query, checks the results against Index.search, applies a filter, saves a screenshot; documents holding
`<script>` and `<img onerror>` show as text and run nothing. Skipped where Chromium is not installed."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from test_server import ADMIN, QUERY, admin, running_server

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("page")

httpx = pytest.importorskip("httpx")
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# The README's picture of the page is this test's screenshot when SEMSEARCH_SCREENSHOT names where (e.g.
# benchmarks/results/serve.png); a plain run leaves the repository as it was.
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


def result_ids(page) -> list[str]:
    return page.eval_on_selector_all("#results li", "items => items.map(item => item.dataset.id)")


def expected_ids(path: Path, query: str, **options) -> list[str]:
    from semsearch import Index

    with Index.open(path) as index:
        return [hit.id for hit in index.search(query, **options)]


def wait_for_ids(page, ids: list[str]) -> None:
    page.wait_for_function(
        "ids => JSON.stringify([...document.querySelectorAll('#results li')].map(li => li.dataset.id)) === "
        "JSON.stringify(ids)",
        arg=ids,
        timeout=TIMEOUT_MS,
    )


def test_search_as_you_type_filter_and_keyboard(browser, index_copy, tmp_path):
    with running_server(index_copy) as url:
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
        marks = page.eval_on_selector_all(
            "#results mark", "marks => marks.map(m => m.textContent.toLowerCase())"
        )
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
        screenshot = Path(os.environ.get(SCREENSHOT, tmp_path / "serve.png"))
        page.screenshot(path=str(screenshot), full_page=False)
        assert screenshot.read_bytes().startswith(b"\x89PNG")

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


def test_phone_width(browser, index_copy):
    with running_server(index_copy) as url:
        page = browser.new_page(viewport={"width": 390, "height": 844}, is_mobile=True, bypass_csp=True)
        page.goto(url + "/")
        page.type("#q", QUERY)
        wait_for_ids(page, expected_ids(index_copy, QUERY, k=10))
        assert page.evaluate("document.documentElement.scrollWidth") <= 390
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
