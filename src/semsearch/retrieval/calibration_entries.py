"""Short queries of a corpus of entries (a glossary, a catalogue, a dictionary's chapter: many short pieces a
document, each on its own topic). The short band's pseudo-queries (bands.py) are a sentence's first words asked
for the rest of its document: words the target no longer holds, a topic to be recognised. A short query of a
glossary is a term its entry holds verbatim, asked to find the document holding that entry: a lookup, which the
inverse cloze cannot ask, since it removes the entry. So where the sentences' rarest terms seldom recur in their
documents outside them (under RECURRING of the sentences drawn: each sentence is its own entry), the short band
is chosen by known items instead: each sampled sentence's rarest term (the keyword index's fewest documents)
asked of the index as it is, the sentence in its document, by choice.py's rule (ties to dense; one side alone
only beyond noise). Elsewhere a rare term recurs in its document (a document speaks of it: SciFact's abstracts,
Cranfield's reports, long documents of several topics) and the cloze's short queries stand.

Measured (benchmarks/results/defaults.md, "Calibration of entries"): the share whose rarest term recurs is
0.086 on the WordNet glossary and 0.07 on a catalogue of SciFact's titled summaries (both then keyword alone for
their term queries, as their real queries peak); 0.24 (Cranfield) to 0.71 on Cranfield, SciFact and their
long-document sets, whose calibrations are unchanged."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..settings import FUSION_DEPTH
from ..storage.keywordterms import STEMMER
from ..storage.store import DocumentStore
from .choice import choose
from .drawing import CLOZE, PseudoQuery
from .keywords import KeywordRetriever, query_words
from .search import DenseRetriever, Match, dense_documents
from .sweep import gains_of, sweep_ranks

RECURRING = (
    0.15  # of the sentences drawn whose rarest term recurs in their document: fewer, a corpus of entries
)
Encode = Callable[[Sequence[str]], np.ndarray]


def entry_terms(
    drawn: Sequence[PseudoQuery], store: DocumentStore, documents: Sequence[int]
) -> tuple[list[str | None], float]:
    """Each sentence's rarest term (its word of the keyword index's fewest documents; None: a crop, or no word
    the index holds) and the share of the sentences whose rarest term recurs in their document (`documents`:
    each one's pk) outside the sentence. Each document's terms are counted once, however many it gave."""
    vocabulary = KeywordRetriever(store, store.count()).vocabulary()
    counts = vocabulary.documents if vocabulary is not None else store.keyword_vocabulary()
    texts = store.get(sorted(set(documents)))
    counted: dict[int, Counter[str]] = {}
    terms: list[str | None] = []
    recurs = []
    for query, pk in zip(drawn, documents):
        words = [word for word in query_words(query.query) if not word.isdigit()]
        stems = STEMMER.terms_of(words)
        held = [
            (min(counts[t] for t in stems[w]), at, w) for at, w in enumerate(words) if _held(stems[w], counts)
        ]
        if query.cut != CLOZE or not held or pk not in texts:
            terms.append(None)
            continue
        word = min(held)[2]
        terms.append(word)
        if pk not in counted:
            counted[pk] = _terms(texts[pk]["text"])
        own = _terms(query.query)
        recurs.append(any(counted[pk][term] > own[term] for term in stems[word]))
    return terms, float(np.mean(recurs)) if recurs else 1.0


def _terms(text: str) -> Counter[str]:
    """How often each index term stands in the text."""
    words = query_words(text)
    stems = STEMMER.terms_of(words)
    return Counter(term for word in words for term in stems[word])


def _held(stems: Sequence[str], counts: Mapping[str, int]) -> bool:
    return bool(stems) and all(stem in counts for stem in stems)


def terms_asked(drawn: Sequence[PseudoQuery], documents: Sequence[int], store: DocumentStore) -> list[str]:
    """The terms `entries` asks (and encodes) of these sentences: none where they are not entries."""
    terms, recurrence = entry_terms(drawn, store, documents)
    return [term for term in terms if term is not None] if recurrence < RECURRING else []


def entries(
    drawn: Sequence[PseudoQuery],
    documents: Sequence[int],
    store: DocumentStore,
    dense: DenseRetriever,
    encode: Encode,
    rerank: int,
) -> dict[str, Any] | None:
    """Where the drawn sentences are entries (their rarest terms recur under RECURRING): the recurrence, and the
    known items' terms, sweep, ranks and the short band's choice (mode, alpha, rule); else None."""
    terms, recurrence = entry_terms(drawn, store, documents)
    if recurrence >= RECURRING:
        return None
    asked = [(term, pk) for term, pk in zip(terms, documents) if term is not None]
    texts, targets = [term for term, _ in asked], [_Target(pk) for _, pk in asked]
    dense_found = dense_documents(dense, store.passages(), encode(texts), FUSION_DEPTH, None, rerank)
    scored = KeywordRetriever(store, store.count()).top(texts, FUSION_DEPTH, None)
    keyword_found = [[Match(pk, score) for pk, score in result] for result in scored]
    ranks = sweep_ranks(targets, dense_found, keyword_found)
    mode, alpha, rule = choose({weight: gains_of(ranked) for weight, ranked in ranks.items()})
    return {
        "recurrence": round(recurrence, 4),
        "terms": len(texts),
        "sweep": {w: round(float(gains_of(r).mean()), 5) for w, r in ranks.items()},
        "ranks": ranks,
        "mode": mode,
        "alpha": alpha,
        "rule": rule,
    }


@dataclass(frozen=True)
class _Target:
    pk: int  # a known item's target: the document holding its sentence


def with_entries(bands: dict[str, dict[str, Any]], found: dict[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The bands (bands.chosen_bands) with the short band chosen by the entries' known items where the corpus is
    one of entries (`found`: `entries`' record; None: the bands as they are)."""
    if not found or "short" not in bands:
        return bands
    rule = f"entries: {found['recurrence']:.2f} of the sentences' rarest terms recur; known items, {found['rule']}"
    short = {**bands["short"], "mode": found["mode"], "alpha": found["alpha"], "rule": rule}
    return {**bands, "short": short}
