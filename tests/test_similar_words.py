"""Similar documents' keyword side (retrieval/similar.py, issue 35): the examples' most distinctive words, chosen
as Lucene's MoreLikeThis chooses them, checked against a count in Python over every stored document, and fused
with the examples' vector as a text query is."""

from __future__ import annotations

import math
from collections import Counter

from conftest import copy_index

from semsearch import Index
from semsearch.retrieval.keywords import query_words
from semsearch.retrieval.similar import MAX_TERMS, MIN_DOC_FREQ, Examples
from semsearch.storage.keywordterms import STEMMER


def _terms(row: dict) -> list[str]:
    return STEMMER.stems(query_words(" ".join(part for part in (row["title"], row["text"]) if part)))


def test_similar_asks_for_the_examples_distinctive_words_and_fuses_them(sample_encoded, tmp_path):
    positive, negative = ["argparse", "zipfile"], ["argparse.Action"]
    with Index.open(copy_index(sample_encoded, tmp_path / "index")) as index:
        store = index.store
        rows = store.get(store.all_pks().tolist())
        ids = {row["id"]: row for row in rows.values()}
        holding = Counter(term for row in rows.values() for term in set(_terms(row)))  # brute force
        counts = Counter(term for doc_id in positive for term in _terms(ids[doc_id]))
        alone = {  # terms some word of the examples stands for by itself (the query is made of such words)
            terms[0]
            for doc_id in positive
            for word in query_words(ids[doc_id]["title"] + " " + ids[doc_id]["text"])
            if len(terms := STEMMER.stems([word])) == 1
        }
        unlike = {term for doc_id in negative for term in _terms(ids[doc_id])}
        score = {
            term: tf * (1 + math.log(len(rows) / (holding[term] + 1)))
            for term, tf in counts.items()
            if holding[term] >= MIN_DOC_FREQ and term not in unlike and term in alone
        }
        expected = sorted(score, key=lambda term: (-score[term], term))[:MAX_TERMS]

        words = Examples.of(store, positive, negative).words(store)
        assert STEMMER.stems(words.split()) == expected and len(expected) == MAX_TERMS

        assert index.query_defaults.mode.value == "hybrid"
        hits = index.similar(positive, k=8, negative=negative, crop=0)
        vector, _ = Examples.of(store, positive, negative).vector(index.raw)
        fused = index.search_vectors(vector[None], k=11, texts=[words], crop=0)[0]  # as a text query fuses
        assert [h.id for h in hits] == [h.id for h in fused if h.id not in {*positive, *negative}][:8]
        assert not {h.id for h in hits} & {*positive, *negative}
        dense = index.search_vectors(vector[None], k=11, crop=0)[0]
        assert [h.id for h in hits] != [h.id for h in dense if h.id not in {*positive, *negative}][:8]
