"""The keyword engine (issue 25): the bm25 matrix ranks as BM25 computed independently here from the FTS5 index's
own tokens and as FTS5's bm25 itself, keeps query-term frequency, and follows the store's writes."""

from __future__ import annotations

import json
import math
import sqlite3

import numpy as np
import pytest
from conftest import SCIFACT_GROUP

from semsearch.evaluation.keyword_reference import plain_top
from semsearch.evaluation.query_styles import STYLES, query_styles
from semsearch.ingest.documents import Document
from semsearch.retrieval import keywords
from semsearch.retrieval.bm25matrix import TITLE_WEIGHT, Bm25Matrix
from semsearch.retrieval.keywords import KeywordRetriever, query_words
from semsearch.storage.schema import KEYWORD_TOKENIZER
from semsearch.storage.store import DocumentStore

# with the other modules of the SciFact chain, on one worker (conftest.SCIFACT_GROUP)
pytestmark = SCIFACT_GROUP


def stored(path, docs: list[tuple[str, str | None, str]]) -> DocumentStore:
    store = DocumentStore(path)
    with store.transaction():
        store.insert([Document(i, text, title) for i, title, text in docs], range(len(docs)))
    return store


def brute_bm25(store: DocumentStore, text: str) -> dict[int, float]:
    """BM25 as FTS5 defines it (k1 1.2, b 0.75, IDF log((N - n + .5) / (n + .5)) floored at 1e-6, a title's
    occurrences weighted TITLE_WEIGHT, a query word said twice counted twice), from each document's tokens as
    FTS5 indexed them, in plain Python."""
    db = store.db.conn
    db.execute("CREATE VIRTUAL TABLE IF NOT EXISTS temp.t_tokens USING fts5vocab(main, keywords, 'instance')")
    tf: dict[tuple[str, int], float] = {}
    length: dict[int, int] = {}
    for term, doc, col in db.execute("SELECT term, doc, col FROM temp.t_tokens"):
        tf[term, doc] = tf.get((term, doc), 0.0) + (TITLE_WEIGHT if col == "title" else 1.0)
        length[doc] = length.get(doc, 0) + 1
    n_docs = db.execute("SELECT count(*) FROM documents").fetchone()[0]
    average = sum(length.values()) / n_docs
    # the query's terms: each word as FTS5's tokenizer makes it (a one-word FTS5 table of its own)
    words = sqlite3.connect(":memory:")
    words.execute(f"CREATE VIRTUAL TABLE q USING fts5(w, tokenize='{KEYWORD_TOKENIZER}')")
    words.execute("CREATE VIRTUAL TABLE stems USING fts5vocab(q, 'instance')")
    scores: dict[int, float] = {}
    for word in query_words(text):
        words.execute("DELETE FROM q")
        words.execute("INSERT INTO q (w) VALUES (?)", [word])
        for (term,) in words.execute("SELECT term FROM stems").fetchall():
            holders = [doc for (t, doc) in tf if t == term]
            idf = math.log((n_docs - len(holders) + 0.5) / (len(holders) + 0.5))
            idf = idf if idf > 0 else 1e-6
            for doc in holders:
                f = tf[term, doc]
                norm = 1.2 * (1 - 0.75 + 0.75 * length[doc] / average)
                scores[doc] = scores.get(doc, 0.0) + idf * f * 2.2 / (f + norm)
    return scores


@pytest.fixture(scope="module")
def scifact_store(scifact_subset, tmp_path_factory):
    corpus, queries, _ = scifact_subset
    docs = [json.loads(line) for line in corpus.read_text().splitlines()]
    store = stored(
        tmp_path_factory.mktemp("kw") / "docs.db", [(d["_id"], d.get("title"), d["text"]) for d in docs]
    )
    yield store, list(queries.values())
    store.close()


@pytest.mark.slow
def test_matrix_and_fts5_rank_as_an_independent_bm25_on_scifact(scifact_store):
    store, queries = scifact_store
    retriever = KeywordRetriever(store, store.count(), typos=0)  # bm25 of the words as written
    matrix = Bm25Matrix.read(store)
    for text in queries[:15] + [queries[0] + " " + queries[1] + " cells cells"]:
        expected = brute_bm25(store, text)
        best = sorted(expected.items(), key=lambda item: (-item[1], item[0]))[:10]
        from_matrix = retriever.top([text], 10, None)[0]
        from_fts5 = retriever._top(text, 10, None)
        for found in (from_matrix, from_fts5):
            assert [pk for pk, _ in found] == [pk for pk, _ in best]
            assert np.allclose([s for _, s in found], [s for _, s in best], rtol=1e-9)
        assert retriever.matrix() is not None and retriever.matrix().key == matrix.key  # the matrix answered


def test_a_repeated_query_word_weighs_more(tmp_path):
    docs = [("a", None, "alpha gamma"), ("b", None, "beta gamma"), ("c", None, "beta delta")]
    docs += [(f"f{i}", None, f"filler{i} words") for i in range(10)]
    store = stored(tmp_path / "docs.db", docs)
    retriever = KeywordRetriever(store, store.count())
    ids = {pk: doc_id for pk, (doc_id, _, _) in enumerate(docs)}
    for top in (lambda t: retriever.top([t], 3, None)[0], lambda t: retriever._top(t, 3, None)):
        once, twice = top("alpha beta"), top("alpha beta beta")
        assert ids[once[0][0]] == "a"  # alpha is rarer: it wins when each word is said once
        assert ids[twice[0][0]] in {"b", "c"} and ids[twice[-1][0]] == "a"  # beta said twice outweighs it
        expected = brute_bm25(store, "alpha beta beta")
        assert [s for _, s in twice] == pytest.approx(sorted(expected.values(), reverse=True)[:3], rel=1e-9)
    # FTS5's own bm25 scores the repeated OR term again too: the plain reference agrees
    assert ids[plain_top(store, "alpha beta beta", 3)[-1][0]] == "a"
    store.close()


def test_the_matrix_follows_writes_and_filters(tmp_path):
    docs = [(f"d{i}", f"title {i}", f"common words and term{i % 5}") for i in range(30)]
    store = stored(tmp_path / "docs.db", docs)
    retriever = KeywordRetriever(store, store.count())
    first = retriever.top(["term3"], 10, None)[0]
    matrix = retriever.matrix()
    assert matrix is not None and {pk for pk, _ in first} == {3, 8, 13, 18, 23, 28}
    allowed = np.array([8, 18, 20], dtype=np.int64)
    assert [pk for pk, _ in retriever.top(["term3"], 10, allowed)[0]] == sorted([8, 18])
    with store.transaction():
        store.delete([8])
    assert 8 not in {pk for pk, _ in retriever.top(["term3"], 10, None)[0]}
    assert retriever.matrix() is not matrix  # read anew after the write
    with store.transaction():  # inside a transaction: FTS5 answers, seeing the transaction's own rows
        store.insert([Document("new", "term3 term3 term3")], [100])
        inside = retriever.top(["term3"], 10, None)[0]
        assert inside[0][0] == 100
        assert retriever.matrix() is None
    assert retriever.top(["term3"], 10, None)[0][0][0] == 100  # committed: the matrix has it
    with pytest.raises(RuntimeError), store.transaction():
        store.insert([Document("gone", "term3 term3 term3 term3")], [101])
        raise RuntimeError("rolled back")
    assert 101 not in {pk for pk, _ in retriever.top(["term3"], 10, None)[0]}
    store.close()


def test_query_styles_are_deterministic_and_long_queries_are_long(scifact_subset, tmp_path):
    from semsearch.evaluation.datasets import BeirData

    corpus, queries, qrels = scifact_subset
    data = BeirData("scifact", corpus, queries, qrels)
    first, again = query_styles(data), query_styles(data)
    assert first == again and set(first) == set(STYLES)
    words = {
        style: np.mean([len(keywords.WORD.findall(t)) for t in first[style].values()]) for style in STYLES
    }
    assert words["short"] <= 4 < words["asis"] < words["paragraph"]
    repeated = next(t for q, t in first["repeated"].items() if t != first["asis"][q])
    assert any(count > 1 for count in np.unique(query_words(repeated), return_counts=True)[1])


@pytest.mark.slow
def test_bench_reports_the_plain_fts5_reference_and_latency_percentiles(
    scifact_subset, scifact_bench_work, tmp_path
):
    import shutil

    from click.testing import CliRunner
    from conftest import BENCH_ENCODING, beir_directory

    from semsearch.cli import main

    root = beir_directory(scifact_subset, tmp_path / "scifact-mini")
    shutil.copytree(scifact_bench_work, tmp_path, dirs_exist_ok=True)  # the corpus encoded once for the run
    arguments = ["bench", "--beir", str(root), "--modes", "dense,keyword,hybrid", "--transforms", "none"]
    arguments += [
        "--dims",
        "all",
        *BENCH_ENCODING,
        "--out",
        str(tmp_path / "out"),
        "--work",
        str(tmp_path),
    ]
    result = CliRunner().invoke(main, arguments)
    assert result.exit_code == 0, result.output
    rows = json.loads((tmp_path / "out" / "results.json").read_text())
    by_system = {(row["system"], row.get("mode")): row for row in rows}
    keyword, plain = by_system["semsearch", "keyword"], by_system["plain FTS5 bm25", "keyword"]
    assert ("semsearch", "dense") in by_system and ("semsearch", "hybrid") in by_system
    for row in rows:
        assert 0 < row["query_ms"] <= row["query_ms_p90"]
    assert 0.3 < plain["ndcg@10"] <= 1 and abs(keyword["ndcg@10"] - plain["ndcg@10"]) < 0.1
    assert "plain FTS5 bm25" in (tmp_path / "out" / "results.md").read_text()


def test_documents_and_queries_pass_through_the_one_analysis(tmp_path, monkeypatch):
    """What analysis.analyze returns is what the keyword index holds and what a query looks for, on both engines
    (here an analysis that spells `colour` as `color`: a segmenter plugs in the same way)."""
    from semsearch.storage import analysis

    monkeypatch.setattr(analysis, "analyze", lambda text: text.replace("colour", "color"))
    store = stored(
        tmp_path / "docs.db", [("a", "colour", "of the sky"), ("b", None, "colorless green ideas")]
    )
    assert store.db.execute("SELECT count(*) FROM keywords WHERE keywords MATCH 'colour'").fetchone()[0] == 0
    retriever = KeywordRetriever(store, store.count())
    for top in (lambda t: retriever._top(t, 5, None), lambda t: retriever.top([t], 5, None)[0]):
        assert [pk for pk, _ in top("colour")] == [0] and [pk for pk, _ in top("color")] == [0]
    with store.transaction():
        store.delete([0])  # the delete analyses the old text as the insert did: no token left behind
    assert store.db.execute("SELECT count(*) FROM keywords WHERE keywords MATCH 'color'").fetchone()[0] == 0
    assert store.db.execute("INSERT INTO keywords (keywords) VALUES ('integrity-check')") is not None
    store.close()


def test_a_read_only_store_is_ranked_by_the_matrix(tmp_path):
    path = tmp_path / "ro" / "docs.db"
    path.parent.mkdir()
    stored(path, [(f"d{i}", None, f"words term{i % 3}") for i in range(9)]).close()
    path.parent.chmod(0o555)
    try:
        store = DocumentStore(path, read_only=True)
        retriever = KeywordRetriever(store, store.count())
        assert [pk for pk, _ in retriever.top(["term1 term1"], 5, None)[0]] == [1, 4, 7]
        assert retriever.matrix() is not None
        store.close()
    finally:
        path.parent.chmod(0o755)


def test_a_large_store_reads_its_matrix_once_quiet(tmp_path, monkeypatch):
    """Over MATRIX_AT_ONCE documents a one-off query is answered by FTS5; the matrix is read by a later query,
    and after a write only once the content has stayed unchanged QUIET_READS times the last read's duration."""
    monkeypatch.setattr(keywords, "MATRIX_AT_ONCE", 5)
    store = stored(tmp_path / "docs.db", [(f"d{i}", None, f"words term{i % 3}") for i in range(9)])
    retriever = KeywordRetriever(store, store.count())
    expected = retriever._top("term2", 5, None)
    assert retriever.top(["term2"], 5, None)[0] == expected and keywords.MATRICES[store].matrix is None
    assert [pk for pk, _ in retriever.top(["term2"], 5, None)[0]] == [pk for pk, _ in expected]
    assert keywords.MATRICES[store].matrix is not None  # the second query read it
    monkeypatch.setattr(keywords, "QUIET_READS", 1e9)
    with store.transaction():
        store.delete([2])
    for _ in range(3):  # not quiet for long enough: FTS5 answers, with the write seen
        assert [pk for pk, _ in retriever.top(["term2"], 5, None)[0]] == [5, 8]
        assert keywords.MATRICES[store].matrix is None
    monkeypatch.setattr(keywords, "QUIET_READS", 0)
    assert [pk for pk, _ in retriever.top(["term2"], 5, None)[0]] == [5, 8]
    assert keywords.MATRICES[store].matrix is not None
    store.close()
