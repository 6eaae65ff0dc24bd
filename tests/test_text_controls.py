"""Issue 35's text controls: highlights as the keyword analysis cuts words (checked word by word against FTS5
itself), CJK and Hangul marks, the meaning-kind sentence against a brute-force cosine, typo tolerance (a
misspelled rare word, exact words first, --typos 0, the vocabulary after writes), a bare Korean noun, the
schema-5 migration, the CLI's snippet output."""

from __future__ import annotations

import json
import re
import sqlite3
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner
from test_keyword_engine import stored

from semsearch import cjk
from semsearch.documents import Document
from semsearch.retrieval.keywords import STOPWORDS, KeywordRetriever, match_expression
from semsearch.retrieval.snippets import (
    STEM_SLACK,
    TOKEN,
    crop_window,
    marks_of,
    sentence_spans,
    snippet,
    word_marks,
)
from semsearch.retrieval.typos import CORRECTION_WEIGHT, allowed_edits
from semsearch.storage import analysis
from semsearch.storage.keywordterms import STEMMER
from semsearch.storage.schema import KEYWORD_TOKENIZER, MIGRATIONS
from semsearch.storage.store import DocumentStore

pytestmark = pytest.mark.xdist_group("text_controls")

SAMPLE = Path(__file__).resolve().parents[1] / "examples" / "sample.jsonl"
ZIP_QUERY = "how do I read a zip archive"
DOCS_TEXT = (
    "The documentation explains how to Download the Windows installer. Use gzip or bzip2 for streams; "
    "to read a ZIP archive, open it with zipfile. Archives are read lazily, and reading is fast."
)


def fts5_matches(token: str, query: str) -> bool:
    """Whether FTS5 (the index's tokenizer, the query's words ORed as keyword search sends them) matches a
    document made of this one token alone: the independent judge of a highlight."""
    db = sqlite3.connect(":memory:")
    db.execute(f"CREATE VIRTUAL TABLE t USING fts5(x, tokenize='{KEYWORD_TOKENIZER}')")
    db.execute("INSERT INTO t (x) VALUES (?)", [analysis.analyze(token)])
    return bool(db.execute("SELECT count(*) FROM t WHERE t MATCH ?", [match_expression(query)]).fetchone()[0])


def retriever(tmp_path, texts: list[str], typos: int = 2) -> KeywordRetriever:
    store = stored(
        Path(tempfile.mkdtemp(dir=tmp_path)) / "docs.db",
        [(f"d{i}", None, text) for i, text in enumerate(texts)],
    )
    return KeywordRetriever(store, store.count(), typos)


def marked_words(text: str, query: str, tmp_path) -> list[str]:
    terms = retriever(tmp_path, [text]).terms(query)
    return [text[start:end] for start, end in word_marks(text, terms)]


def test_marks_are_the_whole_words_fts5_matches_never_substrings_or_stopwords(tmp_path):
    terms = retriever(tmp_path, [DOCS_TEXT]).terms(ZIP_QUERY)
    marks = word_marks(DOCS_TEXT, terms)
    tokens = [m.span() for m in re.finditer(r"[^\W_]+", DOCS_TEXT)]
    assert set(marks) <= set(tokens)  # whole tokens only
    assert set(marks) == {span for span in tokens if fts5_matches(DOCS_TEXT[slice(*span)], ZIP_QUERY)}
    words = [DOCS_TEXT[s:e] for s, e in marks]
    assert {"ZIP", "archive", "Archives", "read", "reading"} <= set(words)  # stems: case and endings
    assert not {"documentation", "Download", "Windows", "gzip", "bzip2", "a"} & set(words)
    assert not {w.lower() for w in words} & STOPWORDS


PORTER_WORDS = (
    "sensibility generalizations relational conditional hopping happy valency ability formalize electrical "
    "hopefulness agreed plastered motoring sized feed caresses ponies ties cats triplicate digitizer operator "
    "ies sky dying lying bed"
)


def test_marks_stem_only_words_that_can_match_and_miss_none():
    """A word is stemmed for its marks only where it starts like a term less its last STEM_SLACK letters: every
    word of the sample corpus and porter's hard cases, stemmed by FTS5, meets the rule; and the marks of the
    corpus's texts for queries equal those found by stemming every word."""
    texts = [json.loads(line)["text"] for line in SAMPLE.read_text().splitlines()[:200]]
    words = {m.group() for text in texts for m in TOKEN.finditer(text) if m.group().isascii()}
    words |= set(PORTER_WORDS.split())
    stems = STEMMER.terms_of(sorted(words))
    for word, terms in stems.items():
        for term in terms:
            assert word.lower().startswith(term[: max(1, len(term) - STEM_SLACK)]), (word, term)
    for query in ("read files lines", "parse dates strings", "sensible generalization", "sort keys"):
        terms = {term: 1.0 for word in query.split() for term in STEMMER.terms_of([word])[word]}
        every = [
            [m.span() for m in TOKEN.finditer(text) if set(stems.get(m.group(), ())) & terms.keys()]
            for text in texts
        ]
        assert marks_of(texts, terms) == every, query


def test_chinese_and_hangul_marks(tmp_path):
    assert marked_words("我每天早上吃一个苹果，还喝果汁", "苹果", tmp_path) == ["苹果"]  # not 果 of 果汁
    assert marked_words("他喜欢果汁", "果", tmp_path) == ["果"]  # a lone character asked alone
    assert marked_words("김치는 배추와 고추로 만든다", "김치", tmp_path) == ["김치"]


def test_the_crop_keeps_the_marks_and_the_length(tmp_path):
    text = (
        " ".join(f"filler{i}" for i in range(100))
        + " the zip archive "
        + " ".join(f"tail{i}" for i in range(50))
    )
    terms = retriever(tmp_path, [text]).terms(ZIP_QUERY)
    made = snippet(text, word_marks(text, terms), 12, "words")
    assert len(made["text"].split()) == 12 and made["text"] in text
    assert [made["text"][s:e] for s, e in made["highlights"]] == ["zip", "archive"]
    start, _ = crop_window(text, word_marks(text, terms), 12)
    assert text[start:].startswith("filler9")  # a few words of context before the first mark


def test_a_misspelled_rare_word_finds_its_document_by_both_engines(tmp_path):
    texts = ["cardiomyopathy in older mice", "the heart of the matter", "tumour suppressor genes"]
    texts += [f"filler text number {i}" for i in range(20)]
    found = retriever(tmp_path, texts)
    for top in (lambda q: found.top([q], 3, None)[0], lambda q: found._top(q, 3, None)):  # matrix, FTS5
        assert [pk for pk, _ in top("cardiomyopahty")] == [0]  # one edit: a transposition
        assert [pk for pk, _ in top("kardiomyopaty")] == [0]  # two edits, 13 letters
        assert top("supresor") == [] and top("supressor")[0][0] == 2  # 8 letters: not 2 edits
        assert top("tumuor")[0][0] == 2  # six letters: one edit, a transposition
    assert found.terms("cardiomyopahty") == {"cardiomyopathi": CORRECTION_WEIGHT[1]}
    assert found.terms("kardiomyopaty") == {"cardiomyopathi": CORRECTION_WEIGHT[2]}
    assert (
        allowed_edits("gene", 2) == 0
        and allowed_edits("genes", 2) == 1
        and allowed_edits("suppressor", 2) == 2
    )
    assert found.top(["gen"], 3, None) == [[]]  # under five letters: exact only
    exact = KeywordRetriever(found.store, found.documents, typos=0)
    assert exact.top(["cardiomyopahty"], 3, None) == [[]] and exact._top("cardiomyopahty", 3, None) == []


def test_exact_words_are_never_corrected_and_beat_corrections(tmp_path):
    texts = ["the protein folds", "the protean folds", "a protien misprint"] + [
        f"filler {i}" for i in range(10)
    ]
    found = retriever(tmp_path, texts)
    # "protien" is in the vocabulary (document 2): it is matched exactly, never corrected to protein
    assert [pk for pk, _ in found.top(["protien"], 5, None)[0]] == [2]
    # a misspelling the vocabulary lacks reaches its corrections, each below an exact match of it
    exact = found.top(["protein"], 5, None)[0]
    corrected = dict(found.top(["proteen"], 5, None)[0])
    assert exact[0][0] == 0 and corrected and corrected[0] < exact[0][1]


def test_the_vocabulary_follows_deletes_and_upserts(tmp_path):
    texts = ["mitochondrial membranes", "membrane potential"] + [f"filler {i}" for i in range(10)]
    found = retriever(tmp_path, texts)
    assert [pk for pk, _ in found.top(["mitochondriall"], 3, None)[0]] == [0]
    with found.store.transaction():
        found.store.delete([0])
    assert found.top(["mitochondriall"], 3, None) == [[]]
    assert "mitochondri" not in found.vocabulary()
    with found.store.transaction():
        found.store.insert([Document("new", "mitochondrial ribosomes")], [50])
    assert [pk for pk, _ in found.top(["mitochondriall"], 3, None)[0]] == [50]


def test_a_bare_korean_noun_finds_the_word_with_its_particle(tmp_path):
    texts = [
        "김치는 배추와 고추로 만든다.",
        "서울은 한국의 수도이다.",
        "한글은 세종대왕이 만들었다.",
        "부산은 항구 도시이다.",
    ]
    found = retriever(tmp_path, texts + ["apple pie", "北京是中国的首都"])
    for word, pk in [("김치", 0), ("서울", 1), ("한글", 2), ("부산은", 3), ("apple", 4), ("北京", 5)]:
        assert found.top([word], 3, None)[0][0][0] == pk
        assert found._top(word, 3, None)[0][0] == pk
    assert cjk.segment("苹果 apple pie") == cjk.segment(
        "苹果 apple pie", hangul=False
    )  # no Hangul: unchanged


def test_schema_5_reanalyses_a_schema_4_store_holding_hangul(tmp_path):
    path = tmp_path / "documents.db"
    old = sqlite3.connect(path)  # a store as schema 4 made it: Hangul words whole
    old.create_function("semsearch_analyze", 1, lambda t: None if t is None else cjk.segment(t, hangul=False))
    for statements in MIGRATIONS[:4]:
        for statement in statements:
            old.execute(statement)
    old.executemany(
        "INSERT INTO documents (pk, id, title, text, hash) VALUES (?, ?, NULL, ?, '')",
        [(1, "k", "김치는 배추와 고추로 만든다"), (2, "e", "plain english words")],
    )
    old.commit()
    old.close()
    store = DocumentStore(path)
    assert store.schema_version == len(MIGRATIONS)
    assert KeywordRetriever(store, 2)._top("김치", 3, None)[0][0] == 1
    store.db.conn.execute("INSERT INTO keywords (keywords) VALUES ('integrity-check')")  # tokens as analysed
    assert "김치는" not in store.keyword_vocabulary() and "김치" in store.keyword_vocabulary()
    with store.transaction():
        store.delete([1])  # the trigger takes out exactly what migration 5 put in
    assert not [t for t in store.keyword_vocabulary() if cjk.HANGUL_RUN.search(t)]
    store.close()


def test_sentences_are_cut_at_their_ends():
    text = "First one. Second: here! Third?\n\nFourth 第五句。第六句"
    assert [text[s:e] for s, e in sentence_spans(text)] == [
        "First one.",
        "Second:",
        "here!",
        "Third?",
        "Fourth 第五句。",
        "第六句",
    ]


@pytest.fixture(scope="module")
def sample_index(sample_encoded, tmp_path_factory):
    from conftest import copy_index

    from semsearch import Index

    with Index.open(copy_index(sample_encoded, tmp_path_factory.mktemp("text") / "index")) as index:
        yield index


def test_a_dense_hit_without_words_shows_its_passage_opening_and_encodes_nothing(sample_index):
    """A hit none of whose words the query holds (found by meaning) shows its passage's first `crop` words,
    kind "passage", nothing marked; the query is encoded once, no hit's sentences are (a query by vector alone
    encodes nothing at all)."""
    query = "squeeze many files together into one bundle"
    encoder = sample_index.encoder
    calls = []
    original = encoder.encode
    encoder.encode = lambda texts, *a, **kw: calls.append(list(texts)) or original(texts, *a, **kw)
    try:
        hits = sample_index.search(query, k=10, mode="dense", crop=8)
        assert calls == [[query]]
        vector = original([query])
        calls.clear()
        by_vector = sample_index.search_vectors(vector, k=10, crop=8)[0]
        assert calls == []
    finally:
        encoder.encode = original
    plain = [hit for hit in hits if hit.snippet["kind"] == "passage"]
    assert plain and all(not word_marks(hit.snippet["text"], {"squeez": 1}) for hit in plain)
    for hit in [*plain, *by_vector]:
        part = hit.passage["text"] if hit.passage else hit.text
        assert hit.snippet["kind"] == "passage" and hit.snippet["highlights"] == []
        assert part.startswith(hit.snippet["text"]) and len(hit.snippet["text"].split()) <= 8 + 3


def test_every_hit_has_a_snippet_in_every_mode_and_the_cli_prints_it(sample_index):
    for mode in ("dense", "keyword", "hybrid"):
        for hit in sample_index.search(ZIP_QUERY, k=5, mode=mode, crop=20):
            assert set(hit.snippet) == {"text", "highlights", "kind"}
            assert len(hit.snippet["text"].split()) <= 20 + 5  # reader's words: a few punctuation runs more
            part = hit.passage["text"] if hit.passage else hit.text
            assert hit.snippet["text"] in part
            assert all(0 <= s < e <= len(hit.snippet["text"]) for s, e in hit.snippet["highlights"])
    from semsearch.cli import main

    path = str(sample_index.directory.path)
    run = CliRunner().invoke(
        main, ["query", ZIP_QUERY, "--index", path, "--mode", "keyword", "--json", "-k", "3"]
    )
    assert run.exit_code == 0, run.output
    first = json.loads(run.output.splitlines()[0])
    assert first["snippet"]["kind"] == "words" and first["snippet"]["highlights"]
    plain = CliRunner().invoke(main, ["query", ZIP_QUERY, "--index", path, "--mode", "keyword", "-k", "3"])
    assert plain.exit_code == 0 and "\x1b[" not in plain.output  # piped: no bold codes
    typo = CliRunner().invoke(
        main, ["query", "zipfile archivs", "--index", path, "--mode", "keyword", "--typos", "0"]
    )
    assert typo.exit_code == 0


def test_the_http_api_passes_typos_and_crop_on_and_refuses_bad_ones():
    pytest.importorskip("starlette")
    from semsearch.server.protocol import ApiError, ServerSettings
    from semsearch.server.schemas import search_options

    options = search_options({"typos": "0", "crop": "12"}, ServerSettings())
    assert options["typos"] == 0 and options["crop"] == 12
    for bad in ({"typos": "3"}, {"crop": "-1"}, {"typos": "many"}):
        with pytest.raises(ApiError):
            search_options(bad, ServerSettings())
