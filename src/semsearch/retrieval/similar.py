"""Documents like the ones given: a query vector made of the examples' stored raw vectors, searched as any query
vector is (transform, candidates, rerank by the raw vectors, filters, pages), the examples themselves left out.

A document is its passages' mean direction: each passage's raw vector normalised, their mean (a document of one
passage is its vector); benchmarks/controls.py compares it on a SciFact subset with scoring each candidate by its
best passage against any of the example's passages (max over passages: recall@10 0.980 against 0.956, a search
per passage, 8x the time) and with a query by the example's text (0.984). Several examples
are their mean; negative examples push away as Qdrant's recommend does (its average_vector strategy): 2 x mean(positive) - mean(negative).

The keyword side, as Lucene's MoreLikeThis and Elasticsearch's more_like_this make one: the examples' most
distinctive words, each term (the keyword index's own, stems) scored by its count in the examples times its
inverse document frequency in the index (Lucene's classic 1 + ln(N / (df + 1))), the MAX_TERMS best of those
held by at least MIN_DOC_FREQ documents (one held by the examples alone finds nothing else), less every term of
a negative example (Elasticsearch's `unlike`). Those words are the keyword query, fused with the vector side as
hybrid search fuses a text query (the index's default mode and weight); a dense default keeps the vectors alone."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import DataError, SettingsError
from ..storage.keywordterms import STEMMER
from ..storage.passages import PassageMap
from ..storage.rawvectors import RawVectors
from ..storage.store import DocumentStore
from ..transforms import normalize_rows
from .keywords import KeywordRetriever, query_words

MAX_TERMS = 25  # Lucene's and Elasticsearch's max_query_terms
MIN_DOC_FREQ = 2  # documents holding a term (the examples' own count): fewer find nothing beside them


def document_vectors(raw: RawVectors, passages: PassageMap, pks: Sequence[int]) -> np.ndarray:
    """Each document's unit mean of its normalised passage vectors, a row per pk."""
    pks = np.asarray(pks, dtype=np.int64)
    if not len(pks):
        return np.empty((0, raw.dim), dtype=np.float32)
    counts = passages.counts_of(pks)
    rows = np.concatenate([np.arange(pk, pk + n) for pk, n in zip(pks, counts)])
    vectors = normalize_rows(raw.get(rows).astype(np.float32))
    owner = np.repeat(np.arange(len(pks)), counts)
    sums = np.zeros((len(pks), vectors.shape[1]), dtype=np.float64)
    np.add.at(sums, owner, vectors)
    return normalize_rows((sums / counts[:, None]).astype(np.float32))


def example_vector(positive: np.ndarray, negative: np.ndarray) -> np.ndarray:
    """The query vector of these examples' document vectors (rows), positive and negative."""
    mean = positive.mean(axis=0)
    if len(negative):
        mean = 2 * mean - negative.mean(axis=0)
    return normalize_rows(mean[None].astype(np.float32))[0]


@dataclass(frozen=True)
class Examples:
    """The documents a similar search starts from: positive and negative pks."""

    positive: list[int]
    negative: list[int]
    passages: PassageMap

    @classmethod
    def of(cls, store: DocumentStore, ids: Sequence[str], negative: Sequence[str] = ()) -> Examples:
        """The examples by id; an id not stored is an error naming it."""
        ids, negative = list(dict.fromkeys(map(str, ids))), list(dict.fromkeys(map(str, negative)))
        if not ids:
            raise SettingsError("name at least one document to find documents like it", setting="ids")
        found = store.existing_ids(ids + negative)
        if missing := [doc_id for doc_id in ids + negative if doc_id not in found]:
            raise DataError(f"no document with id {', '.join(map(repr, missing[:5]))} in {store.path.parent}")
        pks = [found[doc_id][0] for doc_id in ids], [found[doc_id][0] for doc_id in negative]
        return cls(*pks, store.passages())

    def vector(self, raw: RawVectors) -> tuple[np.ndarray, frozenset[int]]:
        """The query vector (raw space) and the pks to leave out of the results (every example)."""
        positive = document_vectors(raw, self.passages, self.positive)
        negative = document_vectors(raw, self.passages, self.negative)
        return example_vector(positive, negative), frozenset(self.positive + self.negative)

    def words(self, store: DocumentStore) -> str:
        """The keyword side's query (the module's docstring): the examples' most distinctive words, one for
        each term chosen, best first ("" if none qualifies)."""
        vocabulary = KeywordRetriever(store, store.count()).vocabulary()
        if vocabulary is None:
            return ""
        counts, negative = _term_counts(store, self.positive), _term_counts(store, self.negative)
        # a word that is the term alone stands for it ("add_argument" is two terms: it would bring the other)
        surface = {
            terms[0]: word for word, terms in STEMMER.terms_of(list(counts.words)).items() if len(terms) == 1
        }
        documents = max(store.count(), 1)
        scored = {
            term: tf * (1 + np.log(documents / (vocabulary.documents[term] + 1)))
            for term, tf in counts.terms.items()
            if vocabulary.documents.get(term, 0) >= MIN_DOC_FREQ
            and term not in negative.terms
            and term in surface
        }
        best = sorted(scored, key=lambda term: (-scored[term], term))[:MAX_TERMS]
        return " ".join(surface[term] for term in best)


@dataclass(frozen=True)
class _Counts:
    words: dict[str, int]  # each word of the texts (query_words: lower-cased, stopwords out) and its count
    terms: dict[str, int]  # each keyword-index term of them and its count


def _term_counts(store: DocumentStore, pks: Sequence[int]) -> _Counts:
    """How often the documents' titles and texts say each word and each term, as the keyword index cuts them."""
    words: dict[str, int] = {}
    for row in store.get(list(pks)).values():
        for word in query_words(" ".join(part for part in (row["title"], row["text"]) if part)):
            words[word] = words.get(word, 0) + 1
    terms: dict[str, int] = {}
    for word, stems in STEMMER.terms_of(list(words)).items():
        for term in stems:
            terms[term] = terms.get(term, 0) + words[word]
    return _Counts(words, terms)
