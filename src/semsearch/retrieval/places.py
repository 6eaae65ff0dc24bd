"""A query's ranked list, keyed by the passage: a place is a passage of a document (its vector row) with its
score, best first, and the per-document cap one step of the list.

Every step passes places: the dense side's rows (strategy.py, a row a passage), capped (`capped`: at most N
places of one document, 0 no cap; at 1 a document once at its best passage, MaxP); the keyword side's documents
by bm25 (keywords.py), each a place whose passage is chosen where it is joined (the one the query's words score
best in, passagescores.py), or, asked for several places of a document, its passages holding the query's words
(`keyword_places`); fusion (search.py) takes both.

The default cap (`per_document` None): a document once while the documents last, then, when fewer documents
match than the page needs, the further places of those that do, best first (`filled`): an index of one long
document answers k of its places."""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ..errors import SettingsError
from ..storage.passages import PassageMap
from ..storage.store import DocumentStore
from .keywords import plain_terms
from .passagescores import PassageTerms

# One query's vector rows and their scores (float64), best first: what a retriever answers (a Python pair per
# candidate cost a calibration's hundreds of searches more than the searches did)
RankedRows = tuple[np.ndarray, np.ndarray]
# long documents' words kept per store, counted in words (about 50 bytes each: a 311-page manual's ~100,000 are
# 5 MB): a query reads its keyword documents' passages again only when they were not among the last read
PASSAGE_TERMS_WORDS = 1_000_000
PASSAGE_TERMS_LOCK = threading.Lock()


class KeptTerms(OrderedDict[tuple, PassageTerms]):
    """A store's documents' PassageTerms by (content version, pk), the least recently read first, and the words
    they hold."""

    words = 0.0

    def keep(self, key: tuple, read: PassageTerms) -> None:
        for stale in [k for k in self if k[0] != key[0]]:
            self.words -= float(self.pop(stale).lengths.sum())
        self[key] = read
        self.words += float(read.lengths.sum())
        while len(self) > 1 and self.words > PASSAGE_TERMS_WORDS:
            self.words -= float(self.popitem(last=False)[1].lengths.sum())


PASSAGE_TERMS: weakref.WeakKeyDictionary[DocumentStore, KeptTerms] = weakref.WeakKeyDictionary()


@dataclass
class Match:
    """A place found: its document's pk, its score, its passage's vector row (None: not chosen yet, a keyword
    side's document), and hybrid's side scores."""

    pk: int
    score: float
    row: int | None = None
    sides: dict[str, float | None] | None = None


Found = list[Match]  # of one query, best first


@dataclass(frozen=True)
class Places:
    """One query's places as arrays, best first: document pks, scores (float64) and each place's vector row
    (None: not known, a keyword side's); `found()` is the same list as Matches."""

    pks: np.ndarray
    scores: np.ndarray
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.pks)

    def first(self, n: int) -> Places:
        return Places(self.pks[:n], self.scores[:n], None if self.rows is None else self.rows[:n])

    def found(self) -> Found:
        rows = [None] * len(self.pks) if self.rows is None else self.rows.tolist()
        return [
            Match(pk, score, row) for pk, score, row in zip(self.pks.tolist(), self.scores.tolist(), rows)
        ]

    @classmethod
    def scored(cls, pairs: Sequence[tuple[int, float]]) -> Places:
        """(pk, score) pairs, best first, without rows."""
        pks = np.fromiter((pk for pk, _ in pairs), np.int64, len(pairs))
        return cls(pks, np.fromiter((score for _, score in pairs), np.float64, len(pairs)))

    @classmethod
    def of(cls, found: Found | Places) -> Places:
        """A Found (its pks and scores) as Places; Places as they are."""
        return found if isinstance(found, Places) else cls.scored([(m.pk, m.score) for m in found])


Documents = Places  # the list at a cap of 1 (a place a document), as calibration names it


def check_cap(per_document: int | None) -> int | None:
    """How many hits one document may fill: None (the default rule), 0 (no cap) or more."""
    if per_document is None:
        return None
    if isinstance(per_document, bool) or not isinstance(per_document, int) or per_document < 0:
        raise SettingsError(f"must be an integer of 0 or more, got {per_document!r}", setting="per_document")
    return per_document


def capped(ranked: list[RankedRows], passages: PassageMap, cap: int) -> list[Places]:
    """Each query's places among its ranked rows, in their order, at most `cap` of one document (0: every
    row), every query's rows looked up at once (a lookup per query was a tenth of a calibration's searches)."""
    if not len(passages.long):  # every document one row: its own pk
        return [Places(rows, scores, rows) for rows, scores in ranked]
    counts = [len(rows) for rows, _ in ranked]
    rows = np.concatenate([rows for rows, _ in ranked] or [np.zeros(0, np.int64)]).astype(np.int64)
    scores = np.concatenate([scores for _, scores in ranked] or [np.zeros(0)])
    owners = passages.owners(rows)
    query = np.repeat(np.arange(len(ranked)), counts)
    keep = np.arange(len(rows))
    if cap:  # each row's rank among its (query, document)'s rows, in their order
        key = query * (int(owners.max(initial=0)) + 1) + owners
        order = np.argsort(key, kind="stable")
        ordered = key[order]
        starts = np.flatnonzero(np.r_[True, ordered[1:] != ordered[:-1]])
        within = np.arange(len(rows)) - np.repeat(starts, np.diff(np.r_[starts, len(rows)]))
        rank = np.empty_like(within)
        rank[order] = within
        keep = np.flatnonzero(rank < cap)
    ends = np.searchsorted(query[keep], np.arange(len(ranked)), side="right").tolist()
    return [
        Places(owners[keep[start:end]], scores[keep[start:end]], rows[keep[start:end]])
        for start, end in zip([0, *ends[:-1]], ends)
    ]


def best_passages(ranked: list[RankedRows], passages: PassageMap) -> list[Places]:
    """Each query's documents in the order of their best passage among its ranked rows (MaxP)."""
    return capped(ranked, passages, 1)


def available(passages: PassageMap, total_rows: int, allowed: np.ndarray | None, cap: int) -> int:
    """How many places a cap leaves among the documents allowed (None: all): a document's passages, at most
    `cap` of them (0: all)."""
    if allowed is None:
        documents = total_rows - int(passages.counts.sum()) + len(passages.long)
        if cap == 1 or cap == 0:
            return documents if cap == 1 else total_rows
        return documents - len(passages.long) + int(np.minimum(passages.counts, cap).sum())
    if cap == 1:
        return len(allowed)
    counts = passages.counts_of(allowed)
    return int(counts.sum() if cap == 0 else np.minimum(counts, cap).sum())


def placed(store: DocumentStore, found: list[Found], texts: Sequence[str] | None) -> list[Found]:
    """The places with their passage chosen where a side left it open (a keyword side's document): its only
    one, or of a document cut into several, the one the query's words score best in (passagescores.py)."""
    open_pks = sorted({m.pk for matches in found for m in matches if m.row is None})
    if not open_pks:
        return found
    counts = dict(zip(open_pks, store.passages().counts_of(np.array(open_pks)).tolist()))
    for n, matches in enumerate(found):
        terms = plain_terms(texts[n]) if texts else {}
        for match in matches:
            if match.row is None:
                match.row = match.pk
                scored = passages_scored(store, match.pk, counts[match.pk], terms)
                if scored is not None:
                    rows, scores = scored
                    match.row = rows[int(np.argmax(scores))]  # the first, on a tie
    return found


def passages_scored(
    store: DocumentStore, pk: int, count: int, terms: dict[str, float]
) -> tuple[list[int], np.ndarray] | None:
    """A document's passages' rows and each one's score for the query's terms (passagescores.py); None for a
    document of one passage (or gone meanwhile)."""
    if count < 2:
        return None
    read = passage_terms(store, pk, count)
    return None if read is None else (read.rows, read.scores(terms))


def passage_terms(store: DocumentStore, pk: int, count: int) -> PassageTerms | None:
    """The document's PassageTerms, kept for the store's committed content (KeptTerms: the last read, up to
    PASSAGE_TERMS_WORDS words)."""
    key = store.content_version()
    kept = PASSAGE_TERMS.setdefault(store, KeptTerms())
    with PASSAGE_TERMS_LOCK:
        if key is not None and (key, pk) in kept:
            kept.move_to_end((key, pk))
            return kept[key, pk]
    rows = [row for row in range(pk, pk + count)]
    spans = store.spans(rows)
    rows = [row for row in rows if row in spans]
    docs = store.get([pk]) if rows else {}
    if pk not in docs:
        return None
    locations = store.locations(rows)
    body = docs[pk]["text"]
    read = PassageTerms.of(
        rows,
        [body[start:end] for start, end in map(spans.get, rows)],
        [locations.get(row, {}).get("headings") or () for row in rows],
    )
    if key is not None:
        with PASSAGE_TERMS_LOCK:
            kept.keep((key, pk), read)
    return read


def keyword_places(
    store: DocumentStore,
    documents: Sequence[Sequence[tuple[int, float]]],
    texts: Sequence[str],
    cap: int,
    n: int,
) -> list[Found]:
    """Each query's n best keyword places from its documents by bm25 (best first): a document of one passage
    that passage; of several, its passages holding the query's words, each scored its document's score times
    its passage score's share of the best one's (passagescores.py); at most `cap` a document (0: all), by score,
    ties in the documents' order. A place scores at most its document, so documents are opened in their order
    only until n places score at least the next document: the first n at any n are the same (nested, as
    bm25's documents are)."""
    passages = store.passages()
    out = []
    for scored, text in zip(documents, texts):
        terms = plain_terms(text)
        places: Found = []
        for at, (pk, score) in enumerate(scored):
            places += document_places(store, passages, pk, score, terms, cap)
            following = scored[at + 1][1] if at + 1 < len(scored) else -np.inf
            if sum(match.score >= following for match in places) >= n:
                break
        out.append(sorted(places, key=lambda match: -match.score)[:n])  # stable: the documents' order on ties
    return out


def document_places(
    store: DocumentStore, passages: PassageMap, pk: int, score: float, terms: dict[str, float], cap: int
) -> Found:
    """One keyword document's places, best first (keyword_places)."""
    scored = passages_scored(store, pk, int(passages.counts_of(np.array([pk]))[0]), terms)
    if scored is None:
        return [Match(pk, score, pk)]
    rows, scores = scored
    best = float(scores.max())
    order = sorted(range(len(rows)), key=lambda i: (-scores[i], i))
    chosen = [i for i in order if scores[i] > 0 or i == order[0]][: cap or None]
    return [Match(pk, score * (float(scores[i]) / best if best > 0 else 1.0), rows[i]) for i in chosen]
