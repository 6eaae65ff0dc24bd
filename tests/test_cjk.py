"""Chinese text (issue 27): keyword segmentation, sentences, passages and calibration of Chinese documents."""

from __future__ import annotations

import sqlite3

import pytest
from conftest import EIGHT, shared_data, write_jsonl

from semsearch.cjk import cjk_characters, segment, word_count
from semsearch.encoding import Encoder
from semsearch.evaluation.zh_retrieval import read_pairs, retrieval_set
from semsearch.index import Index
from semsearch.ingest.chunking import Chunker
from semsearch.ingest.documents import Document
from semsearch.retrieval import calibration
from semsearch.retrieval.calibration import sentences


def test_segment_finds_two_character_words():
    words = segment("我每天早上吃一个苹果").split()
    assert "苹果" in words and "早上" in words and "每天" in words
    assert "我每天早上吃一个苹果" not in words


def test_segment_keeps_mixed_chinese_and_english_right():
    words = segment("用iPhone拍照, state-of-the-art 模型").split()
    assert "iPhone" in words and "拍照" in words and "state-of-the-art" in words and "模型" in words
    assert segment("plain English text.") == "plain English text."  # untouched
    # kana is not broken up; Hangul runs become their bigrams (a noun is found with its particle: issue 35)
    assert "のテキスト" in segment("日本語のテキスト").split()
    assert segment("한국어 텍스트").split() == ["한국", "국어", "텍스", "스트"]


@pytest.mark.parametrize("method", ["bigram+unigram", "bigram", "jieba"])
def test_fts5_over_segmented_text_finds_each_word(method):
    if method == "jieba":
        pytest.importorskip("jieba", reason="jieba is not installed")
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='unicode61')")
    db.executemany(
        "INSERT INTO docs(rowid, text) VALUES (?, ?)", [(n, segment(t, method)) for n, t in enumerate(EIGHT)]
    )
    for word, holders in {"苹果": {0, 5}, "北京": {1}, "人工智能": {2, 3}, "机器学习": {3}}.items():
        query = " ".join(f'"{w}"' for w in segment(word, method).split())  # all of the word's parts (AND)
        found = {row for (row,) in db.execute("SELECT rowid FROM docs WHERE docs MATCH ?", (query,))}
        assert found == holders, (word, method)
    # unsegmented, unicode61 finds nothing: each run of Han characters is one token
    plain = sqlite3.connect(":memory:")
    plain.execute("CREATE VIRTUAL TABLE docs USING fts5(text, tokenize='unicode61')")
    plain.executemany("INSERT INTO docs(rowid, text) VALUES (?, ?)", list(enumerate(EIGHT)))
    assert plain.execute("SELECT rowid FROM docs WHERE docs MATCH '\"苹果\"'").fetchall() == []


def test_sentences_end_at_chinese_punctuation():
    text = "我每天早上吃一个苹果。苹果很甜！你喜欢吗？他说：“好。”然后走了"
    assert [text[s:e] for s, e in sentences(text)] == [
        "我每天早上吃一个苹果。",
        "苹果很甜！",
        "你喜欢吗？",
        "他说：“好。”",
        "然后走了",
    ]
    english = "It works. Fig. 3 shows results. Yes!"  # English as before: abbreviations do not end a sentence
    assert [english[s:e] for s, e in sentences(english)] == ["It works.", "Fig. 3 shows results.", "Yes!"]


def test_word_count_and_cjk_share():
    assert word_count("我每天早上吃一个苹果") == 5
    assert word_count("I eat an apple 每天") == 5
    assert cjk_characters("苹果 apple。") == 3
    assert word_count("用iPhone拍照。好的，ＡＢ") == 5  # punctuation is no word; full-width letters are


def test_an_unspaced_chinese_sentence_gives_a_cropped_pseudo_query():
    """A one-sentence Chinese document has words for calibration's crop (cropping.py): two characters each."""
    import numpy as np

    from semsearch.retrieval.cropping import CROP_WORDS, crop

    text = "我每天早上吃一个苹果然后去公司上班工作"  # 19 characters: 10 words
    query, rest, (start, end) = crop(text, np.random.default_rng(3))
    assert text[start:end] == query and CROP_WORDS[0] <= len(query) / 2 <= CROP_WORDS[1]
    assert rest.replace(" ", "") == text[:start] + text[end:] and query not in rest
    assert crop("我每天早上吃苹果", np.random.default_rng(3)) is None  # 4 words: too few to cut


def test_the_chunker_cuts_chinese_between_characters_within_the_budget():
    text = "".join(f"第{n}句话说的是一个很长的中文故事里面的内容，没有任何空格。" for n in range(40))
    encoder = Encoder().load()
    budget = 48
    passages = Chunker(encoder.tokenizer, budget, 8).split([Document("long", text)])[0]
    assert len(passages) > 5
    covered = set()
    for passage in passages:
        start, end = passage.span
        assert passage.embedding_text == text[start:end]
        assert len(encoder.tokenize([passage.embedding_text])[0]) <= budget  # nothing truncated
        covered.update(range(start, end))
        # cut at a sentence end (the budget holds whole sentences of this text)
        assert passage.embedding_text.endswith("。"), passage.embedding_text
    assert covered == set(range(len(text)))


@pytest.mark.slow
def test_a_corpus_of_multi_sentence_chinese_documents_is_calibrated(tmp_path, monkeypatch):
    """Pseudo-queries come from Chinese sentences (。-ended, no spaces): the index gets a calibration."""
    pairs = read_pairs(shared_data("zh", "STS-B", "STS-B.test.data"))
    lines = list(dict.fromkeys(p.text1.rstrip("。") + "。" for p in pairs))[:600]
    docs = [{"id": str(n), "text": "".join(lines[n : n + 4])} for n in range(0, len(lines), 4)]
    monkeypatch.setattr(calibration, "MIN_PASSAGES", 100)
    monkeypatch.setattr(calibration, "MIN_QUERIES", 20)
    monkeypatch.setattr(calibration, "QUERY_SHARE", 4)
    with Index.create(tmp_path / "index") as index:
        index.ingest(write_jsonl(tmp_path / "zh.jsonl", docs))
        calibrated = index.state.calibration
    assert calibrated is not None and calibrated["queries"] >= 20, calibrated
    assert calibrated["documents"] == len(docs) and set(calibrated["sides"]) >= {"dense", "keyword"}


@pytest.mark.slow
def test_retrieval_sets_are_built_from_pairs():
    pairs = read_pairs(shared_data("zh", "LCQMC", "LCQMC.valid.data"), limit=500)
    data = retrieval_set("LCQMC", pairs)
    assert data.queries and all(data.qrels[q] for q in data.queries)
    for query_id, text in data.queries.items():
        positives = {p.text2 for p in pairs if p.text1 == text and p.label == 1}
        assert {data.corpus[d] for d in data.qrels[query_id]} == positives
        assert data.corpus[data.own[query_id]] == text


def test_keyword_search_finds_two_character_chinese_words_in_an_index(tmp_path):
    """Through the real keyword engine (FTS5 and its bm25 matrix, documents and queries through one analysis):
    each word written in the corpus finds the documents holding it, and only those."""
    from semsearch import Index

    texts = {
        "1": "我每天早上吃一个苹果",
        "2": "上海的房价很高",
        "3": "北京是中国的首都",
        "4": "人工智能和机器学习正在改变世界",
        "5": "苹果公司发布了新款手机",
    }
    with Index.create(tmp_path / "index") as index:
        index.add([{"id": key, "text": text} for key, text in texts.items()])
        for word in ("苹果", "北京", "人工智能", "机器学习", "房价"):
            found = {hit.id for hit in index.search(word, k=5, mode="keyword")}
            holding = {key for key, text in texts.items() if word in text}
            assert holding <= found, (word, found)
            assert next(iter(h.id for h in index.search(word, k=1, mode="keyword"))) in holding
