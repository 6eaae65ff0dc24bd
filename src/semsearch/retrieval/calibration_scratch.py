"""The calibration's scratch copy (calibration.py): its pseudo-queries searched in the index as it would be with
their sentences taken out of their documents, the index itself unchanged. Dense: the index read a little deeper
than asked, the targets' rows dropped and their new vectors scored in (ScratchDense); keyword: bm25 inside a
SQLite savepoint in which the targets' texts are changed, then rolled back (store.scratch), ranked by a matrix of
that content read once (bm25matrix.py), not by an FTS5 query each (30 ms each on SciFact's paragraphs)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from ..settings import FUSION_DEPTH
from ..storage.keywordterms import STEMMER
from ..storage.rawvectors import RawVectors
from ..storage.store import DocumentStore
from .bm25matrix import Bm25Matrix
from .keywords import KeywordRetriever, query_words
from .search import DenseRetriever, Documents, RankedRows, dense_documents, listed
from .strategy import Ranked
from .vectorindex import VectorIndex, one_faiss_thread

# Rows the scratch copy reads beyond those asked (ScratchDense): more than the targets' rows a query finds among
# its first ones (its own target's; a paragraph's, its off-topic targets' too)
SHALLOW = 64
SCORED = 4_000_000  # scores of a flat-sq8 index's rows held at once (float32, 16 MB): queries in batches
DECODED = 16_000_000  # a flat-sq8 index's decoded floats held at most (64 MB: 125,000 rows at 128 dims)

Encode = Callable[[Sequence[str]], np.ndarray]


class Drawn(Protocol):
    pk: int  # the target document
    query: str  # the sentence (or span) taken out
    rest: str  # the document's text without it


class Targets(Protocol):
    """calibration.Targets: the pseudo-queries' documents as the scratch copy holds them."""

    queries: Sequence[Drawn]
    rows: np.ndarray  # the new passages' vector rows, sorted
    vectors: np.ndarray | None  # their raw vectors (None: not encoded yet)
    dropped: np.ndarray  # every row the targets had, sorted

    def encoded(self, encode: Encode) -> Targets: ...


@dataclass
class OverlaidRaw:
    """Raw vectors with some rows replaced (the scratch copy's targets)."""

    base: RawVectors
    rows: np.ndarray  # sorted
    vectors: np.ndarray

    def get(self, pks: np.ndarray) -> np.ndarray:
        out = self.base.get(pks)
        if not len(self.rows):
            return out
        at = np.minimum(np.searchsorted(self.rows, pks), len(self.rows) - 1)
        replaced = self.rows[at] == pks
        out[replaced] = self.vectors[at[replaced]]
        return out


@dataclass
class ScratchDense:
    """The dense retriever of the index with the targets' rows replaced by their new vectors: the index's rows
    read, theirs dropped and the new ones scored in (the same ranking a vector index holding the new rows would
    give, up to its approximation). Read SHALLOW rows deeper than asked, and as deep again as the targets had
    rows only for a query whose shallow read holds so many of theirs that fewer than asked are left (every row
    the targets had deeper took two thirds of a calibration's dense searches: bands-cost.md)."""

    base: DenseRetriever
    dropped: np.ndarray  # every row the targets had, sorted
    raw: OverlaidRaw
    _held: tuple[np.ndarray, np.ndarray] | None = field(default=None, init=False)  # held_vectors, once

    @property
    def vectors(self) -> VectorIndex:
        return self.base.vectors

    def candidates(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> Ranked:
        """The n best rows of each query as (row, score) pairs, best first."""
        return [listed(ranked) for ranked in self.ranked_rows(queries, n, allowed)]

    def ranked_rows(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> list[RankedRows]:
        projected = self.base.transform.project(queries)
        new_scores = (
            projected @ self.base.transform.project(self.raw.vectors).T
            if len(self.raw.rows)
            else np.zeros((len(projected), 0), np.float32)
        )
        out: list[RankedRows] = [(np.zeros(0, np.int64), np.zeros(0)) for _ in queries]
        dropped = np.zeros(int(self.dropped.max()) + 1 if len(self.dropped) else 0, dtype=bool)
        dropped[self.dropped] = True  # a flag per row: faster than np.isin per query
        todo, extra = np.arange(len(queries)), min(len(self.dropped), SHALLOW)
        while len(todo):
            again = []
            for query, (rows, found) in zip(
                todo, self._base_rows(queries[todo], projected[todo], n + extra, allowed)
            ):
                gone = np.zeros(len(rows), dtype=bool)
                gone[rows < len(dropped)] = dropped[rows[rows < len(dropped)]]
                kept = np.flatnonzero(~gone)
                if len(kept) < n and len(rows) == n + extra and extra < len(self.dropped):
                    again.append(query)  # rows left unread may belong: read as deep as the targets had rows
                    continue
                scores = np.concatenate([found, new_scores[query]])
                every = np.concatenate([rows, self.raw.rows])
                keep = np.concatenate([kept, np.arange(len(rows), len(every))])
                best = keep[np.argsort(-scores[keep], kind="stable")[:n]]
                out[query] = (every[best], scores[best])
            todo, extra = np.array(again, dtype=np.int64), len(self.dropped)
        return out

    def _base_rows(
        self, queries: np.ndarray, projected: np.ndarray, k: int, allowed: np.ndarray | None
    ) -> list[RankedRows]:
        """The index's k best rows of each query, as base.ranked_rows ranks them (ties by row). A flat-sq8
        index's codes are decoded once and scored by one product per batch of queries: FAISS's SQ8 scan
        decodes every row for every query (a renewal's 495 searches of STS-B dev's 2,648 rows: 66 CPU-ms
        against 26 in all). The same rows up to a product's rounding (1e-7). Flat's own search is such a
        product already; the approximate kinds, and a flat-sq8 index too large to hold decoded, FAISS's."""
        vectors = self.vectors
        if allowed is not None or vectors.kind != "flat-sq8" or vectors.count * vectors.dim > DECODED:
            return self.base.ranked_rows(queries, k, allowed)
        if self._held is None:
            self._held = vectors.held_vectors()
        ids, held = self._held
        k = min(k, len(ids))
        if k == 0:
            return [(np.zeros(0, np.int64), np.zeros(0)) for _ in queries]
        out: list[RankedRows] = []
        step = max(1, SCORED // max(len(ids), 1))
        for start in range(0, len(projected), step):
            scores = np.asarray(projected[start : start + step], np.float32) @ held.T
            best = (
                np.argpartition(-scores, k - 1, axis=1)[:, :k]
                if k < len(ids)
                else np.tile(np.arange(len(ids)), (len(scores), 1))
            )
            rows, found = ids[best], np.take_along_axis(scores, best, 1).astype(np.float64)
            order = np.lexsort((rows, -found))  # each query's: ties by row
            out += zip(np.take_along_axis(rows, order, 1), np.take_along_axis(found, order, 1))
        return out


def rankings(
    targets: Targets,
    store: DocumentStore,
    dense: DenseRetriever,
    encode: Encode,
    rerank: int,
    asked: Sequence[str] | None = None,
    encode_targets: Encode | None = None,
) -> tuple[list[Documents], list[Documents]]:
    """Each pseudo-query's dense and keyword documents (FUSION_DEPTH of each) in the scratch copy; `asked`: the
    texts searched (None: the pseudo-queries themselves). The dense side (the targets not yet encoded, by
    `encode_targets`, None: `encode`; the queries; their search) runs on a thread of its own while the keyword
    side, which needs only the texts, ranks: they take turns at the GIL, the model and the vector products run
    without it. The dense side reads nothing from SQLite (the passage map is read here, first)."""
    queries = [q.query for q in targets.queries] if asked is None else list(asked)
    passages = store.passages()

    def dense_side() -> list[Documents]:
        encoded = targets if targets.vectors is not None else targets.encoded(encode_targets or encode)
        vectors = encode(queries)
        scratch = ScratchDense(dense, encoded.dropped, OverlaidRaw(dense.raw, encoded.rows, encoded.vectors))
        return dense_documents(scratch, passages, vectors, FUSION_DEPTH, None, rerank)

    # a core a side: FAISS's OpenMP threads would spin against the keyword side's (a SciFact renewal: 4.03
    # CPU-s and 2.65 s with them, 3.90 and 2.61 without, alternated)
    with one_faiss_thread(), ThreadPoolExecutor(1) as beside:
        dense_found = beside.submit(dense_side)
        keyword_found = _keyword_documents(targets, store, queries)
        return dense_found.result(), keyword_found


def _keyword_documents(targets: Targets, store: DocumentStore, queries: list[str]) -> list[Documents]:
    """Each query's keyword documents (FUSION_DEPTH) with the targets' texts changed (store.scratch)."""
    with store.scratch({q.pk: q.rest for q in targets.queries}):
        keyword = KeywordRetriever(store, store.count())
        # the scratch content's bm25 matrix, read once: FTS5 ranking each query took 30 ms of SciFact's
        matrix = Bm25Matrix.read(store, scratch=True)
        if matrix is None:  # over MAX_POSTINGS: FTS5 ranks
            keyword_found = [Documents.scored(found) for found in keyword.top(queries, FUSION_DEPTH, None)]
        else:  # every query's words stemmed in one pass of the stemmer, not one each (a fifth of this side)
            STEMMER.terms_of([word for text in queries for word in query_words(text)])
            terms = [keyword.terms(text) for text in queries]
            keyword_found = [Documents(*found) for found in matrix.top_many(terms, FUSION_DEPTH, None)]
    return keyword_found
