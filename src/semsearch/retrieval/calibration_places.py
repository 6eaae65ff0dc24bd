"""Calibration on places (calibration.py's inverse cloze asked of passages). Where an index holds fewer documents
than the pseudo-queries it wants (one manual, a book, a few long reports), a search answers places, and a
document's rest always holds its sentence's neighbours: every query finds its document first whatever the weight
(one 311-page manual: 1.000 at every weight). So there the query is a sentence lying inside a passage, and its
target that passage, re-encoded without it: the place. A neighbour passage holding part of the sentence (the
passages' overlap) is left out of the scratch copy, as a document's passages holding its query are (cropping.py).

Passages are read in the draw's order (drawing.py: keys of their document's content and their place in it), one
sentence a passage (drawn by the passage's key), no two sharing a passage, SCANNED passages read at most per
query wanted. Ranked as a search of places ranks them: dense, the scratch copy's vector rows (ScratchDense: the
targets' rows replaced by their new vectors), re-scored by the raw vectors as queries are; keyword, bm25 over
the passages as documents (their texts as the scratch holds them, each under its document's title), FUSION_DEPTH
of each. Its cost: a document's sentences found once, and one passage encoded again a query."""

from __future__ import annotations

import bisect
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from ..cjk import word_count
from ..documents import Document
from ..settings import FUSION_DEPTH
from ..storage.keywordterms import term_rows
from ..storage.store import DocumentStore
from . import drawing
from .bm25matrix import SCRATCH, Bm25Matrix
from .calibration_scratch import OverlaidRaw, ScratchDense
from .drawing import CLOZE, PseudoQuery
from .keywords import KeywordRetriever
from .search import DenseRetriever, Documents, rerank
from .vectorindex import one_faiss_thread

Encode = Callable[[Sequence[str]], np.ndarray]
REST_WORDS = 8  # a passage keeps at least these words without its sentence (else it is no place to find)


@dataclass(frozen=True)
class PlaceTargets:
    """The places drawn, as the scratch copy holds them: each query's `pk` its place (the row holding all of
    its sentence), `rest` that passage without the sentence; each place's row with its text to encode (`rows`,
    `texts`, sorted by row); `dropped` those rows and their neighbours holding part of a sentence (left out);
    `passages` every row's (row, title, text) as the scratch's keyword side ranks them, those neighbours
    left out."""

    queries: list[PseudoQuery]
    rows: np.ndarray
    texts: list[str]
    dropped: np.ndarray
    passages: list[tuple[int, str | None, str]]
    vectors: np.ndarray | None = None

    def encoded(self, encode: Encode) -> PlaceTargets:
        return replace(self, vectors=encode(self.texts) if self.texts else np.zeros((0, 0), np.float32))


def drawn_places(
    store: DocumentStore,
    count: int,
    seed: int,
    cut: Callable[[Sequence[Document]], Sequence[Sequence[Any]]],
    words: tuple[int, int],
    scanned: int,
) -> PlaceTargets:
    """Up to `count` places of the index's documents (see the module's docstring), reading `scanned` passages
    at most per place wanted; `words`: a sentence's words at least and at most."""
    pks, keys = drawing.document_keys(store, seed)
    docs = store.get(pks.tolist())
    counts = store.passages().counts_of(pks)
    spans = store.spans([int(pk) + i for pk, n in zip(pks, counts) if n > 1 for i in range(n)])
    spans.update({int(pk): (0, len(docs[int(pk)]["text"])) for pk, n in zip(pks, counts) if n == 1})
    owner = np.repeat(np.arange(len(pks)), counts)
    places = np.concatenate([np.arange(n) for n in counts]) if len(counts) else np.zeros(0, np.int64)
    order = np.argsort(drawing.mixed(keys[owner], places), kind="stable")[: scanned * count]
    found: dict[int, list[tuple[int, int]]] = {}  # a document's sentences fitting `words`, found once
    taken: set[int] = set()
    chosen: list[tuple[PseudoQuery, int, list[int]]] = []  # (query, document pk, its rows)
    for at in order.tolist():
        if len(chosen) == count:
            break
        document, row = int(pks[owner[at]]), int(pks[owner[at]]) + int(places[at])
        text = docs.get(document, {}).get("text", "")
        if row in taken or row not in spans:
            continue
        if document not in found:
            found[document] = [
                (s, e) for s, e in drawing.sentences(text) if words[0] <= word_count(text[s:e]) <= words[1]
            ]
        start, end = spans[row]
        fitting = _inside(found[document], start, end)
        if not fitting:
            continue
        key = int(drawing.mixed(keys[owner[at]][None], places[at][None])[0])
        s, e = fitting[int(drawing.generator(key).integers(len(fitting)))]
        rest = _without(text, (start, end), (s, e))
        if word_count(rest) < REST_WORDS:
            continue
        holding = [
            r
            for r in (row - 1, row, row + 1)
            if document <= r < document + counts[owner[at]]
            and r in spans
            and spans[r][0] < e
            and s < spans[r][1]
        ]
        if taken.intersection(holding):
            continue
        taken.update(holding)
        chosen.append((PseudoQuery(row, text[s:e], rest, (s, e), CLOZE, key), document, holding))
    return place_targets(chosen, docs, counts, pks, spans, cut)


def place_targets(
    chosen: list[tuple[PseudoQuery, int, list[int]]],
    docs: dict[int, dict[str, Any]],
    counts: np.ndarray,
    pks: np.ndarray,
    spans: dict[int, tuple[int, int]],
    cut: Callable[[Sequence[Document]], Sequence[Sequence[Any]]],
) -> PlaceTargets:
    """The places chosen as the scratch copy holds them (PlaceTargets): each place's own row re-encoded without
    its sentence; a neighbour holding part of it (the passages' overlap) left out of both sides."""
    title_of = {int(pk): docs.get(int(pk), {}).get("title") for pk in pks}
    texts = {q.pk: _without(docs[document]["text"], spans[q.pk], q.span) for q, document, _ in chosen}
    rows = sorted(texts)
    owners = {q.pk: document for q, document, _ in chosen}
    parts = cut([Document(str(r), texts[r], title_of[owners[r]]) for r in rows])
    encoded = [" ".join(p.embedding_text for p in passage) for passage in parts]
    gone = {r for q, _, holding in chosen for r in holding if r != q.pk}
    passages = []
    for pk, n in zip(pks.tolist(), counts.tolist()):
        text = docs.get(pk, {}).get("text", "")
        for r in range(pk, pk + n):
            if r not in gone:
                start, end = spans.get(r, (0, len(text)))
                passages.append((r, title_of[pk], texts.get(r, text[start:end])))
    return PlaceTargets(
        [q for q, _, _ in chosen],
        np.asarray(rows, dtype=np.int64),
        encoded,
        np.asarray(sorted([*rows, *gone]), dtype=np.int64),
        passages,
    )


def _inside(sentences: list[tuple[int, int]], start: int, end: int) -> list[tuple[int, int]]:
    """The sentences (sorted spans) lying wholly within [start, end)."""
    first = bisect.bisect_left(sentences, (start, start))
    out = []
    for s, e in sentences[first:]:
        if s >= end:
            break
        if e <= end:
            out.append((s, e))
    return out


def _without(text: str, span: tuple[int, int], taken: tuple[int, int]) -> str:
    """The passage `span` of the text without what of `taken` it holds, its two sides joined by a space."""
    start, end = span
    before, after = text[start : max(start, min(end, taken[0]))], text[min(end, max(start, taken[1])) : end]
    return " ".join(part for part in (before.strip(), after.strip()) if part)


def place_rankings(
    targets: PlaceTargets,
    store: DocumentStore,
    dense: DenseRetriever,
    encode: Encode,
    rerank_depth: int,
    asked: Sequence[str],
    encode_targets: Encode | None = None,
) -> tuple[list[Documents], list[Documents]]:
    """Each asked text's dense and keyword places (FUSION_DEPTH of each, a place's pk its row) in the
    scratch copy; the dense side on a thread of its own while the keyword side ranks (as rankings does)."""

    def dense_side() -> list[Documents]:
        encoded = targets if targets.vectors is not None else targets.encoded(encode_targets or encode)
        vectors = encode(list(asked))
        scratch = ScratchDense(dense, encoded.dropped, OverlaidRaw(dense.raw, encoded.rows, encoded.vectors))
        depth = max(FUSION_DEPTH, rerank_depth)
        ranked = scratch.ranked_rows(vectors, depth, None)
        if rerank_depth:
            ranked = rerank(scratch.raw, vectors, ranked, depth)
        return [_placed(rows, scores) for rows, scores in ranked]

    with one_faiss_thread(), ThreadPoolExecutor(1) as beside:
        dense_found = beside.submit(dense_side)
        matrix = Bm25Matrix.of_rows(SCRATCH, term_rows(targets.passages), len(targets.passages))
        keyword = KeywordRetriever(store, store.count())
        terms = [keyword.terms(text) for text in asked]
        found = matrix.top_many(terms, FUSION_DEPTH, None)
        keyword_found = [_placed(rows, scores) for rows, scores in found]
        return dense_found.result(), keyword_found


def _placed(rows: np.ndarray, scores: np.ndarray) -> Documents:
    """Ranked rows as places, best first, FUSION_DEPTH of them."""
    rows = np.asarray(rows, np.int64)[:FUSION_DEPTH]
    return Documents(rows, np.asarray(scores, np.float64)[:FUSION_DEPTH], rows)
