"""Places as results (issue 52): a search ranks passages; `per_document` caps the hits one document fills
(default: a document once while k documents match, then the further places of those that do); every surface
answers one hit shape that carries its passage, not its whole document, unless full text is asked. Checked on
the real model, FAISS and SQLite against a brute force over the stored vectors."""

from __future__ import annotations

import asyncio
import json
import re

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SAMPLE, write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.retrieval.hits import hit_json
from semsearch.storage.keywordterms import STEMMER
from semsearch.transforms import normalize_rows

pytestmark = pytest.mark.xdist_group("places")

QUERY = "read the lines of a file"


def sample_docs() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


@pytest.fixture(scope="module")
def places_index(tmp_path_factory):
    """The sample's 300 docstrings and two long manuals made of 100 of them each (module=manual)."""
    docs = sample_docs()
    manuals = [
        {
            "id": f"manual-{n}",
            "title": f"Manual {n}",
            "text": " ".join(d["text"] for d in part),
            "module": "manual",
        }
        for n, part in enumerate((docs[:100], docs[100:200]))
    ]
    root = tmp_path_factory.mktemp("places")
    path = root / "index"
    with Index.create(path, transform="none") as index:
        index.ingest(write_jsonl(root / "corpus.jsonl", [*docs, *manuals]))
    with Index.open(path) as index:
        yield index


def brute_force(index: Index, query: str, cap: int, owners_allowed: set[int] | None = None) -> list[tuple]:
    """Every place by cosine of the stored vectors, at most `cap` of a document (0: all): (id, start)."""
    rows = index.store.vector_pks()
    owners = index.store.passages().owners(rows)
    scores = normalize_rows(index.raw.get(rows)) @ normalize_rows(index.encoder.encode([query]))[0]
    spans = index.store.spans(rows.tolist())
    ids = {pk: doc["id"] for pk, doc in index.store.get(sorted(set(owners.tolist()))).items()}
    held: dict[int, int] = {}
    out = []
    for i in sorted(range(len(rows)), key=lambda i: (-scores[i], rows[i])):
        owner = int(owners[i])
        if (owners_allowed is not None and owner not in owners_allowed) or (
            cap and held.get(owner, 0) >= cap
        ):
            continue
        held[owner] = held.get(owner, 0) + 1
        out.append((ids[owner], spans[int(rows[i])][0] if int(rows[i]) in spans else None, float(scores[i])))
    return out


def agree(hits, brute: list[tuple], k: int, slack: float = 0.01) -> None:
    """The hits are k distinct places of the brute force's best (the index's codes may swap places whose
    scores are within `slack`), at its scores, best first."""
    got, scores = places(hits), {(i, s): score for i, s, score in brute}
    assert len(got) == len(set(got)) == k
    assert all(scores[place] >= brute[k - 1][2] - slack for place in got)
    assert np.allclose([h.score for h in hits], [scores[place] for place in got], atol=slack)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)


def places(hits) -> list[tuple]:
    return [(h.id, h.passage["start"] if h.passage else None) for h in hits]


@pytest.mark.parametrize("cap", [0, 1, 2])
def test_dense_places_at_each_cap_are_the_brute_force_ones(places_index, cap):
    hits = places_index.search(QUERY, k=20, mode="dense", rerank=0, per_document=cap)
    agree(hits, brute_force(places_index, QUERY, cap), 20)
    counts: dict[str, int] = {}
    for hit in hits:
        counts[hit.id] = counts.get(hit.id, 0) + 1
    assert max(counts.values()) <= (cap or 20) and (cap == 1 or max(counts.values()) > 1)


def test_the_default_is_a_document_once_while_k_documents_match(places_index):
    default = places_index.search(QUERY, k=10, mode="dense", rerank=0)
    assert places(default) == places(places_index.search(QUERY, k=10, mode="dense", rerank=0, per_document=1))
    assert len({h.id for h in default}) == 10


def test_fewer_documents_than_k_fill_with_their_further_places(places_index):
    """Filtered to the two manuals, -k 10 answers both at their best place, then 8 further places, best first,
    each place once; the brute force over the manuals' rows agrees."""
    where = ["module=manual"]
    hits = places_index.search(QUERY, k=10, mode="dense", rerank=0, where=where)
    pks = {pk for _, (pk, _) in places_index.store.existing_ids(["manual-0", "manual-1"]).items()}
    once = brute_force(places_index, QUERY, 1, pks)
    assert places(hits[:2]) == [place[:2] for place in once]  # each document once, at its best place
    further = [p for p in brute_force(places_index, QUERY, 0, pks) if p[:2] not in places(hits[:2])]
    agree(hits[2:], further, 8)
    assert {h.id for h in hits} == {"manual-0", "manual-1"} and len(set(places(hits))) == 10
    # pages continue each other exactly, at the default and at no cap, in every mode
    for mode in ("dense", "keyword", "hybrid"):
        for cap in (None, 0):
            whole = places(places_index.search(QUERY, k=12, mode=mode, where=where, per_document=cap))
            paged = [
                places(
                    places_index.search(QUERY, k=4, offset=offset, mode=mode, where=where, per_document=cap)
                )
                for offset in (0, 4, 8)
            ]
            assert sum(paged, []) == whole and len(set(whole)) == len(whole) == 12, (mode, cap)


def test_keyword_and_hybrid_places_hold_the_query_and_the_cap(places_index):
    for mode in ("keyword", "hybrid"):
        hits = places_index.search(QUERY, k=15, mode=mode, per_document=3)
        assert len(set(places(hits))) == 15
        counts: dict[str, int] = {}
        for hit in hits:
            counts[hit.id] = counts.get(hit.id, 0) + 1
        assert 1 < max(counts.values()) <= 3, mode  # some document holds several places, none more than 3
    # each place holds a query word as the keyword index stems it ("reads", "files"), in its text or headings
    asked = set(STEMMER.stems(["read", "lines", "file"]))
    for hit in places_index.search(QUERY, k=10, mode="keyword", per_document=0, where=["module=manual"]):
        said = re.findall(r"\w+", " ".join([hit.passage["text"], *(hit.location or {}).get("headings", ())]))
        assert asked & set(STEMMER.stems(said)), hit.passage


def test_similar_facets_and_rerank_work_at_any_cap(places_index):
    for cap in (None, 0, 2):
        similar = places_index.similar(["manual-0"], k=10, per_document=cap)
        assert len(similar) == 10 and "manual-0" not in {h.id for h in similar}
        ranked = places_index.search(QUERY, k=10, mode="dense", rerank=50, per_document=cap)
        assert len(set(places(ranked))) == 10
    counted = [
        places_index.search(QUERY, k=10, facets="module", where=["module=manual"], per_document=cap).facets
        for cap in (None, 0, 1)
    ]
    assert counted[0] == counted[1] == counted[2] == {"module": {"manual": 2}}  # documents, not places


def test_a_hit_carries_its_passage_not_its_document_unless_asked(places_index):
    hits = places_index.search(QUERY, k=10, where=["module=manual"], per_document=0)
    shaped = hit_json(hits[0])
    assert set(shaped) == {
        "id",
        "score",
        "title",
        "metadata",
        "passage",
        "location",
        "snippet",
        "scores",
        "text",
    }
    assert (
        shaped["text"] == shaped["passage"]["text"] != hits[0].text
    )  # the place's passage, not the document
    assert shaped["passage"]["text"] == hits[0].text[shaped["passage"]["start"] : shaped["passage"]["end"]]
    assert hit_json(hits[0], full_text=True)["text"] == hits[0].text
    path = str(places_index.directory.path)
    run = CliRunner().invoke(main, ["query", QUERY, "--index", path, "--where", "module=manual", "--json"])
    assert run.exit_code == 0, run.output
    lines = [json.loads(line) for line in run.output.splitlines()]
    assert len(lines) == 10 and all(hit["text"] == hit["passage"]["text"] != "" for hit in lines)
    assert max(len(line) for line in run.output.splitlines()) < 8_000
    full = CliRunner().invoke(main, ["query", QUERY, "--index", path, "-k", "2", "--json", "--full-text"])
    assert all(json.loads(line)["text"] for line in full.output.splitlines())
    human = CliRunner().invoke(main, ["query", QUERY, "--index", path, "--where", "module=manual", "-k", "6"])
    assert human.exit_code == 0, human.output
    tops = [line for line in human.output.splitlines() if line[:4].strip().rstrip(".").isdigit()]
    shown = places_index.search(QUERY, k=6, where=["module=manual"])
    assert [line.split()[2] for line in tops] == list(dict.fromkeys(h.id for h in shown))
    assert len(tops) == 2 and len(shown) == 6
    assert human.output.count("another place of") == 4
    capped = CliRunner().invoke(main, ["query", QUERY, "--index", path, "--per-document", "1", "--json"])
    assert len({json.loads(line)["id"] for line in capped.output.splitlines()}) == 10


def test_the_http_api_and_mcp_take_per_document_and_full_text(places_index):
    httpx = pytest.importorskip("httpx")
    pytest.importorskip("starlette")
    from test_server import running_server

    path = places_index.directory.path
    want = places(places_index.search(QUERY, k=6, where=["module=manual"], per_document=0))
    with running_server(path) as url, httpx.Client(base_url=url, timeout=60) as client:
        asked = {"q": QUERY, "k": 6, "where": "module=manual", "per_document": 0}
        got = client.get("/search", params=asked).json()
        assert [(h["id"], h["passage"]["start"]) for h in got["hits"]] == want
        assert all(h["text"] == h["passage"]["text"] for h in got["hits"])
        full = client.post("/search", json={**asked, "where": ["module=manual"], "full_text": True}).json()
        assert all(h["text"] and len(h["text"]) > len(h["passage"]["text"]) for h in full["hits"])
        batch = client.post("/search/batch", json={"queries": [QUERY], "k": 6, "per_document": 0}).json()
        assert len(batch["results"][0]["hits"]) == 6
        bad = client.get("/search", params={"q": QUERY, "per_document": -1})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "bad_parameter"
    pytest.importorskip("mcp")
    pytest.importorskip("jsonschema")
    from semsearch.server.mcp_tools import Served, Tools

    async def read(request, job, *args):
        return job(places_index, *args)

    tools = Tools([Served("places", read)])
    answer = asyncio.run(
        tools.call("search", {"query": QUERY, "k": 6, "where": ["module=manual"], "per_document": 0})
    )
    hits = answer.structured_content["hits"]
    assert [(h["id"], h["passage"]["start"]) for h in hits] == want and all(
        h["text"] == h["passage"]["text"] for h in hits
    )


def test_langchain_answers_places(places_index):
    pytest.importorskip("langchain_core")
    from semsearch.integrations.langchain import SemsearchVectorStore

    with SemsearchVectorStore(places_index.directory.path) as store:
        found = store.similarity_search(QUERY, k=5, filter=["module=manual"])
        assert len(found) == 5 and {doc.id for doc in found} <= {"manual-0", "manual-1"}
        for doc in found:
            assert len(doc.page_content) < 3_000 and doc.metadata["document_id"] == doc.id
            assert doc.metadata["end"] - doc.metadata["start"] == len(doc.page_content)
        assert len({(doc.id, doc.metadata["start"]) for doc in found}) == 5
        chosen = store.max_marginal_relevance_search(QUERY, k=3, fetch_k=8, filter=["module=manual"])
        assert len(chosen) == 3
