"""Long documents and hybrid retrieval (chunking.py, keywords.py, search.py), on the real model and a real SQLite
store: a sentence at the end of a long document is found with passages and not without; a document is one hit,
with its best passage; upserts and deletes take all of a document's passages; FTS5's syntax never sees a query's
characters; keyword, dense and hybrid results equal an independent computation, with and without a filter."""

from __future__ import annotations

import json

import numpy as np
import pytest
from click.testing import CliRunner
from conftest import SAMPLE, write_jsonl

from semsearch import Index
from semsearch.cli import main
from semsearch.retrieval import keywords
from semsearch.retrieval.keywords import match_expression, query_words
from semsearch.settings import DEFAULT_CHUNK_TOKENS
from semsearch.transforms import normalize_rows

# its module fixtures are built once: the whole module runs on one worker (--dist loadgroup)
pytestmark = pytest.mark.xdist_group("hybrid")

NEEDLE = "The lighthouse keeper fed seventeen hungry cats with sardines every morning."
NEEDLE_QUERY = "who fed the cats at the lighthouse"
MODULE = "pathlib"  # the filter of the filtered tests


def sample_docs() -> list[dict]:
    return [json.loads(line) for line in SAMPLE.read_text().splitlines()]


def long_document(docs: list[dict]) -> dict:
    """About 3,000 words of the sample's docstrings, the needle sentence last."""
    body = " ".join(doc["text"] for doc in docs[:120])
    return {"id": "long-1", "title": "A long manual", "text": body + " " + NEEDLE, "module": "manual"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    docs = sample_docs()
    return write_jsonl(tmp_path_factory.mktemp("hybrid") / "corpus.jsonl", [*docs, long_document(docs)])


@pytest.fixture(scope="module")
def chunked(corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("chunked") / "index"
    with Index.create(path, transform="none") as index:
        index.ingest(corpus)
    return path


@pytest.fixture(scope="module")
def whole(corpus, tmp_path_factory):
    path = tmp_path_factory.mktemp("whole") / "index"
    with Index.create(path, transform="none", chunk_tokens=0) as index:
        index.ingest(corpus)
    return path


def ids(hits) -> list[str]:
    return [hit.id for hit in hits]


def test_a_sentence_at_the_end_of_a_long_document_is_found_only_with_passages(chunked, whole):
    with Index.open(chunked) as index:
        hits = index.search(NEEDLE_QUERY, k=5, mode="dense")
        assert hits[0].id == "long-1", ids(hits)
        passage = hits[0].passage
        text = hits[0].text
        assert NEEDLE in passage["text"] and text[passage["start"] : passage["end"]] == passage["text"]
        info = index.info()
        assert info["documents"] == 301 and info["passages"] > 301 and info["long_documents"] >= 1
    with Index.open(whole) as index:
        assert "long-1" not in ids(index.search(NEEDLE_QUERY, k=10, mode="dense"))
        assert index.info()["passages"] == 301 and index.info()["long_documents"] == 0


def test_passages_fit_the_model_cover_the_text_and_overlap(chunked):
    with Index.open(chunked) as index:
        pk = index.store.existing_ids(["long-1"])["long-1"][0]
        count = int(index.store.passages().counts[index.store.passages().long == pk][0])
        spans = [index.store.spans([row])[row] for row in range(pk, pk + count)]
        text = index.store.get([pk])[pk]["text"]
        tokenizer = index.encoder.tokenizer
        lengths = [
            len(o) + tokenizer.special_tokens
            for o in tokenizer.spans([f"A long manual {text[a:b]}" for a, b in spans])
        ]
        assert max(lengths) <= index.settings.chunk_tokens == DEFAULT_CHUNK_TOKENS
        assert spans[0][0] == 0 and spans[-1][1] == len(text)
        # consecutive passages overlap (the next starts before the previous ends), and every word is in one
        # (where the previous passage's last chunk_overlap tokens are one word, the next starts after it)
        for (a_start, a_end), (b_start, _) in zip(spans, spans[1:]):
            if b_start >= a_end:
                offsets = tokenizer.spans([text[a_start:a_end]])[0]
                tail = text[a_start + offsets[-index.settings.chunk_overlap][0] : a_end].strip()
                assert not any(c.isspace() for c in tail), tail
        # a passage starts at a word, unless inside one longer than half a passage (code, URLs: cut anywhere)
        half = (index.settings.chunk_tokens - tokenizer.special_tokens) // 2 - len(
            tokenizer.spans(["A long manual"])[0]
        )
        for start, _ in spans:
            if start and not text[start - 1].isspace():
                begin = max(text.rfind(" ", 0, start), 0)
                end = text.find(" ", start) if text.find(" ", start) >= 0 else len(text)
                assert len(tokenizer.spans([text[begin:end]])[0]) > half, text[begin:end]


def test_one_hit_per_document_and_k_documents(chunked):
    with Index.open(chunked) as index:
        for mode in ("dense", "keyword", "hybrid"):
            hits = index.search("lighthouse cats sardines and file paths", k=20, mode=mode)
            assert len(hits) == 20 and len(set(ids(hits))) == 20, mode


def test_dense_search_is_the_best_passage_of_each_document_by_brute_force(chunked):
    with Index.open(chunked) as index:
        query = "read a file line by line"
        hits = index.search(query, k=10, mode="dense", rerank=0)
        rows = index.store.vector_pks()
        owners = index.store.passages().owners(rows)
        scores = normalize_rows(index.raw.get(rows)) @ normalize_rows(index.encoder.encode([query]))[0]
        best: dict[int, float] = {}
        for owner, score in zip(owners, scores):
            best[int(owner)] = max(best.get(int(owner), -9.0), float(score))
        expected = sorted(best, key=lambda pk: -best[pk])[:10]
        names = index.store.get(expected)
        assert ids(hits) == [names[pk]["id"] for pk in expected]
        assert np.allclose([h.score for h in hits], [best[pk] for pk in expected], atol=1e-5)


def deep_keyword(index: Index, query: str) -> list[tuple[str, float]]:
    """Every document matching any word, by bm25 (n above the corpus size)."""
    return [(h.id, h.score) for h in index.search(query, k=10_000, mode="keyword", per_document=1)]


@pytest.mark.parametrize("listed", [True, False])
def test_filtered_keyword_and_hybrid_equal_the_unfiltered_lists_restricted(chunked, monkeypatch, listed):
    """A filter inside the keyword search (listed pks, or read deeper) keeps exactly the allowed documents of
    the unfiltered ranking, in order; hybrid fuses the two filtered lists as the formula says."""
    if not listed:
        monkeypatch.setattr(keywords, "LISTED_ROWS", 5)
    where = [f"module={MODULE}"]
    query = "return the directory name of a path"
    with Index.open(chunked) as index:
        module = {d["id"] for d in sample_docs() if d.get("module") == MODULE}
        restricted = [(i, s) for i, s in deep_keyword(index, query) if i in module]
        asked = dict(where=where, per_document=1)  # documents: a document once, however few match
        filtered = [(h.id, h.score) for h in index.search(query, k=10, mode="keyword", **asked)]
        assert len(restricted) >= 3 and filtered == restricted[:10]
        asked = dict(asked, rerank=0)
        dense = [(h.id, h.score) for h in index.search(query, k=100, mode="dense", **asked)]
        assert {i for i, _ in dense} == module  # fewer than 100 match: all of them
        keyword = [(i, s) for i, s in restricted[:100]]
        hybrid = index.search(query, k=10, mode="hybrid", alpha=0.3, **asked)
        assert [h.id for h in hybrid] == fused(dense, keyword, 0.3)[:10]
        assert all(h.metadata["module"] == MODULE for h in hybrid)


def fused(dense, keyword, alpha) -> list[str]:
    """The convex combination of min-max normalised scores, computed here from the two lists."""
    scores: dict[str, float] = {}
    for weight, found in ((alpha, dense), (1 - alpha, keyword)):
        values = [s for _, s in found]
        low, high = min(values), max(values)
        for doc_id, score in found:
            scores[doc_id] = scores.get(doc_id, 0.0) + weight * (
                (score - low) / (high - low) if high > low else 1.0
            )
    return sorted(scores, key=lambda doc_id: -scores[doc_id])


@pytest.mark.parametrize(
    "query",
    [
        'C++ "unbalanced',
        "state-of-the-art NEAR(a b)",
        "AND OR NOT",
        "* ^ : - + ( ) {col}:x",
        "title:path",
        '""',
    ],
)
def test_query_syntax_characters_are_plain_words(chunked, query):
    with Index.open(chunked) as index:
        for mode in ("keyword", "hybrid"):
            index.search(query, k=5, mode=mode)  # never an FTS5 syntax error
    expression = match_expression(query)
    assert expression is None or all(
        part.startswith('"') and part.endswith('"') for part in expression.split(" OR ")
    )


def test_query_words_drop_stopwords_unless_nothing_is_left():
    assert query_words("the state-of-the-art C++ and the") == ["state", "art", "c"]
    assert query_words("the and") == ["the", "and"]
    assert match_expression('say "hi"') == '"say" OR "hi"'


def test_upsert_and_delete_take_every_passage_of_a_long_document(corpus, tmp_path):
    path = tmp_path / "index"
    docs = sample_docs()
    with Index.create(path, transform="whiten", dims=32) as index:
        index.ingest(corpus)
        before = index.state.passages
        pk = index.store.existing_ids(["long-1"])["long-1"][0]
        old_rows = index.store.passage_pks(np.array([pk]))
        assert len(old_rows) > 5
        shorter = {**long_document(docs), "text": "A short text about tea."}
        report = index.add([shorter])
        assert report.replaced == 1 and index.state.passages == before - len(old_rows) + 1
        assert index.vectors.count == index.state.passages == index.stats().count
        live = index.raw.get(index.store.vector_pks()).astype(np.float64)
        np.testing.assert_allclose(index.stats().covariance(), np.cov(live, rowvar=False), atol=1e-9)
        assert not index.store.spans(old_rows.tolist())  # no passage spans left behind
        assert "long-1" not in ids(index.search(NEEDLE_QUERY, k=10, mode="dense"))
        index.add([long_document(docs)])  # long again, then deleted
        assert index.search(NEEDLE_QUERY, k=1, mode="dense")[0].id == "long-1"
        assert index.delete(["long-1"]) == 1
        assert index.state.passages == index.vectors.count == index.stats().count == before - len(old_rows)
        assert "long-1" not in ids(index.search("lighthouse keeper sardines", k=10, mode="keyword"))


def run(*args):
    return CliRunner().invoke(main, [str(a) for a in args], catch_exceptions=False)


def test_cli_modes_and_chunking(corpus, tmp_path):
    path = tmp_path / "index"
    result = run("ingest", corpus, "--index", path, "--chunk-tokens", "128", "--chunk-overlap", "16")
    assert result.exit_code == 0, result.output
    assert "passages" in result.stderr
    info = json.loads(run("info", "--index", path, "--json").output)
    assert (info["chunk_tokens"], info["chunk_overlap"], info["default_mode"]) == (128, 16, "hybrid")
    # bm25 normalises by length: a 3,000-word document needs its rarer words ("cats" is in other documents)
    for mode, query in (
        ("dense", NEEDLE_QUERY),
        ("keyword", "lighthouse keeper sardines"),
        ("hybrid", NEEDLE_QUERY),
    ):
        out = run("query", query, "--index", path, "--mode", mode, "--json", "-k", "3")
        assert out.exit_code == 0, out.output
        hits = {hit["id"]: hit for hit in map(json.loads, out.output.splitlines())}
        assert "long-1" in hits and NEEDLE in hits["long-1"]["passage"]["text"], (mode, list(hits))
    rrf = run("query", NEEDLE_QUERY, "--index", path, "--fusion", "rrf", "--alpha", "0.5", "-k", "3")
    assert rrf.exit_code == 0 and "long-1" in rrf.output
    bad = run("query", "x", "--index", path, "--alpha", "2")
    assert bad.exit_code != 0 and "--alpha" in bad.output
    changed = run("ingest", corpus, "--index", path, "--chunk-tokens", "64")
    assert changed.exit_code != 0 and "chunk_tokens 128 (asked 64)" in changed.output
    overlapping = run(
        "ingest", corpus, "--index", tmp_path / "other", "--chunk-tokens", "64", "--chunk-overlap", "32"
    )
    assert (
        overlapping.exit_code != 0
        and "--chunk-overlap must be less than half the passage" in overlapping.output
    )
    assert not (tmp_path / "other").exists()  # refused before anything is written
    too_long = run("ingest", corpus, "--index", tmp_path / "other", "--chunk-tokens", "1000")
    assert (
        too_long.exit_code != 0
        and "--chunk-tokens must be at most the model's max_length (256)" in too_long.output
    )
