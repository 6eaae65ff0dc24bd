"""A corpus of entries (calibration_entries.py), on the real model, FAISS and SQLite: WordNet glosses grouped into
glossary documents by their lexicographer file, "lemmas: gloss." a line. Their sentences' rarest terms seldom
recur in their documents, so the short band is chosen by known items (each sentence's rarest term asked of the
index as it is), whose ranks are those of real searches and which find their documents by their words more
than by their meaning."""

from __future__ import annotations

import pytest
from conftest import shared_data

from semsearch import Index
from semsearch.evaluation.datasets import load_beir
from semsearch.evaluation.longdoc_sets import GLOSSARY_ENTRIES
from semsearch.evaluation.longdoc_sets import glossary as longdoc_glossary
from semsearch.retrieval.calibration import documents_of
from semsearch.retrieval.calibration_entries import RECURRING, entries, entry_terms, terms_asked, with_entries
from semsearch.retrieval.choice import choose
from semsearch.retrieval.drawing import CLOZE, PseudoQuery, sentences
from semsearch.retrieval.search import DenseRetriever
from semsearch.retrieval.sweep import RANKS, gains_of

DOCUMENTS = 40  # of GLOSSARY_ENTRIES glosses each
OPTIONS = dict(transform="none", chunk_tokens=64, index_type="flat")


@pytest.fixture(scope="module")
def glossary(tmp_path_factory):
    """DOCUMENTS glossary documents of WordNet glosses (evaluation/longdoc_sets.py's, as the benchmark's)."""
    root = tmp_path_factory.mktemp("glossary")
    built = load_beir(longdoc_glossary(shared_data("wordnet", "corpus.jsonl"), root / "set", DOCUMENTS, 100))
    index = Index.create(root / "index", **OPTIONS)
    index.ingest(built.corpus_path)
    yield index
    index.close()


@pytest.mark.slow
def test_a_glossarys_short_band_is_chosen_by_its_entries_rarest_terms_asked_as_known_items(glossary):
    store = glossary.store
    rows = store.get(store.content_names()[0].tolist())
    every = [  # every entry of every document (one a document, as a calibration draws, is too few to judge)
        PseudoQuery(pk, row["text"][s:e], "", (s, e), CLOZE)
        for pk, row in rows.items()
        for s, e in sentences(row["text"])
    ]
    terms, recurrence = entry_terms(every, store, [q.pk for q in every])
    assert len(every) > 0.9 * DOCUMENTS * GLOSSARY_ENTRIES and recurrence < RECURRING
    assert all(term is None or term in query.query.lower() for term, query in zip(terms, every))
    drawn = every[::4]
    documents = documents_of(drawn, False, store)
    terms = entry_terms(drawn, store, documents)[0]
    assert terms_asked(drawn, documents, store) == [term for term in terms if term is not None]
    recurrence = entry_terms(drawn, store, documents)[1]
    dense = DenseRetriever(glossary.transform, glossary.vectors, glossary.raw)
    found = entries(drawn, documents, store, dense, glossary.encoder.encode, glossary.settings.rerank)
    assert found is not None and found["recurrence"] == round(recurrence, 4)
    ids = {pk: row["id"] for pk, row in store.get(documents).items()}
    asked = [(term, ids[pk]) for term, pk in zip(terms, documents) if term is not None]
    for side, weight in (("dense", "1.0"), ("keyword", "0.0")):  # the ranks of real searches
        hits = glossary.search_many([term for term, _ in asked], k=10, mode=side, crop=0, per_document=1)
        ranks = [
            next((r for r, hit in enumerate(hit_list, 1) if hit.id == doc), 0)
            for (_, doc), hit_list in zip(asked, hits)
        ]
        assert found["ranks"][weight] == "".join(RANKS[r] for r in ranks), side
    assert (found["mode"], found["alpha"], found["rule"]) == choose(
        {weight: gains_of(ranked) for weight, ranked in found["ranks"].items()}
    )
    assert (
        found["sweep"]["0.0"] > found["sweep"]["1.0"]
    )  # a rare term: found by its word more than its meaning
    bands = {name: {"mode": "hybrid", "alpha": 0.8, "rule": "index"} for name in ("short", "sentence")}
    chosen = with_entries(bands, found)
    assert (chosen["short"]["mode"], chosen["short"]["alpha"]) == (found["mode"], found["alpha"])
    assert chosen["short"]["rule"].startswith("entries: ")
    assert chosen["sentence"] == bands["sentence"] and with_entries(bands, None) == bands
