"""Search as composable steps over one ranked list of places (places.py: a passage of a document and its
score): prefilter (the documents a `where` allows) -> candidates from each retriever the mode uses -> fuse ->
cap (at most `per_document` places of one document) -> join with the stored documents (hits.py).

- dense: the vector index's passages (strategy.py; rows of the documents allowed), re-scored by the raw vectors
  when asked (rerank), capped (at 1: a document by its best passage, MaxP), read deeper until enough places.
- keyword: bm25 over the documents (keywords.py), the filter applied inside; a document a place (its passage
  chosen at the join), or with several places a document allowed, its passages holding the query's words.
- hybrid: both lists, FUSION_DEPTH deep (or k), fused by place: a convex combination of each side's min-max
  normalised scores, `alpha` the dense side's weight, a document's keyword score counting for each of its places
  and a place missing from one side taking that side's 0 (Bruch et al., TOIS 2023); or reciprocal rank fusion.

The default cap (None): 1 while documents last; a query that finds fewer documents than its page needs goes on
with their further places (the same steps with no cap), best first, each place once.

Pages (`offset`): a query's ranked list is built in windows, the first W deep, then twice, four times ... as deep:
the first window is the steps above at depth W, each further window appends, in its own order, the places
that the same steps twice as deep find and the list does not hold yet (nor its document past the cap). A page is a slice of that list, reading
the windows up to offset + k, so every page continues the one before exactly (no hit twice, none skipped) in
every mode and index type: a deeper search never reorders what a shallower one ranked (re-scoring a larger
candidate set, fusing deeper lists, an approximate index asked for more would). A hit's score is the one of the
window that found it. W depends on the query's steps, never on its page (first_window): hybrid FUSION_DEPTH
(fusion's depth), keyword and exact dense PAGE_WINDOW, rerank its own depth, hnsw its efSearch (at most
PAGE_WINDOW; where each document is one passage), ivf, pq and a filter's approximate search TUNED_K (the depth their parameters are tuned at: a
first page costs what a plain query of 10 does). Where the first window is nested (its first d documents are
those the steps find at depth d: exact scoring, bm25 with ties by pk, the same rerank or graph candidates at
every depth up to W), it is computed only as deep as the page needs, plus one document: a score tied across
that cut is left to the whole window (which of tied rows FAISS keeps depends on the depth); rows tied within
it go by pk.

Size: the steps of one path, a query to its page of joined hits with their snippets, kept together so the
order they run in reads from top to bottom."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from ..errors import DataError, IndexStateError, SettingsError
from ..settings import (
    FUSION_DEPTH,
    MAX_OFFSET,
    RRF_K,
    Fusion,
    SearchMode,
    check_k,
)
from ..storage.filters import Condition
from ..storage.passages import PassageMap
from ..storage.rawvectors import RawVectors
from ..storage.store import DocumentStore
from ..transforms import Transform, normalize_rows
from . import strategy
from .hits import Hit, Results, join
from .keywords import KeywordRetriever
from .places import (
    Documents,
    Found,
    Match,
    Places,
    RankedRows,
    available,
    capped,
    check_cap,
    keyword_places,
    placed,
)
from .query import QueryOptions
from .vectorindex import TUNED_K, VectorIndex

# the list's types and the hit's, where callers have always found them
__all__ = ["Documents", "Found", "Hit", "Match", "Places", "RankedRows", "Request", "Results", "search"]
Where = Sequence[str | Condition] | dict[str, Any] | None
Ranked = strategy.Ranked
PAGE_WINDOW = FUSION_DEPTH  # the first window's depth (pages: above)
Joiner = Callable[..., list[list[Hit]]]  # hits.join's signature


@dataclass(frozen=True)
class Request:
    """What a search asks: raw query vectors (dense side) and/or texts (keyword side), one per query."""

    k: int
    options: QueryOptions
    vectors: np.ndarray | None = None
    texts: Sequence[str] | None = None
    where: Where = None
    offset: int = 0  # hits skipped: the page starts there
    exclude: frozenset[int] = frozenset()  # document pks never returned (similar's examples)
    per_document: int | None = None  # hits one document may fill (0: no cap; None: the default rule, above)

    @classmethod
    def checked(
        cls,
        k: int,
        options: QueryOptions,
        vectors: np.ndarray | None,
        texts: Sequence[str] | None,
        where: Where,
        dim: int,
        offset: int = 0,
        exclude: frozenset[int] = frozenset(),
        per_document: int | None = None,
    ) -> Request:
        """A request whose inputs are those its mode needs."""
        check_k(k)
        check_offset(offset)
        check_cap(per_document)
        mode = options.mode
        if vectors is not None:
            vectors = np.asarray(vectors, dtype=np.float32)
            if vectors.ndim != 2 or vectors.shape[1] != dim:
                raise DataError(
                    f"query vectors of shape {vectors.shape}; this index's vectors have {dim} dimensions"
                )
        if mode is not SearchMode.DENSE and texts is None:
            raise SettingsError(f"{mode} search needs the queries' text", setting="mode")
        if mode is not SearchMode.KEYWORD and vectors is None:
            raise SettingsError(f"{mode} search needs query vectors", setting="mode")
        return cls(k, options, vectors, texts, where, offset, exclude, per_document)

    @property
    def count(self) -> int:
        return len(self.texts) if self.texts is not None else len(self.vectors)


class Retriever(Protocol):
    vectors: VectorIndex
    raw: RawVectors

    def ranked_rows(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> list[RankedRows]: ...


def conditions(where: Where) -> list[Condition]:
    """`where` as conditions: FIELD=VALUE strings (or Conditions), or a {field: value} dict meaning `=`."""
    if not where:
        return []
    if isinstance(where, dict):
        return [Condition(str(key), "=", str(value)) for key, value in where.items()]
    return [c if isinstance(c, Condition) else Condition.parse(c) for c in where]


def allowed_rows(store: DocumentStore, where: Where) -> np.ndarray | None:
    """The document pks a filter allows, or None without a filter."""
    parsed = conditions(where)
    return store.matching_pks(parsed) if parsed else None


@dataclass
class DenseRetriever:
    """Candidate vector rows from the vector index, in the transform's space. Unfiltered: the approximate search
    with its tuned parameters. Filtered: exact, by the strategy strategy.py states (few rows allowed: scored
    exactly; many: the index with the rows as a selector, tuned for the selectivity, verified)."""

    transform: Transform
    vectors: VectorIndex
    raw: RawVectors

    def candidates(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> Ranked:
        """The n best vector rows of each query as (row, score) pairs, best first, ties by row."""
        return [listed(ranked) for ranked in self.ranked_rows(queries, n, allowed)]

    def ranked_rows(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> list[RankedRows]:
        """`candidates` as arrays: unfiltered where the index's own scores rank, straight from FAISS's."""
        projected = self.transform.project(queries)
        found = strategy.unfiltered_arrays(self.vectors, projected, n) if allowed is None else None
        if found is not None:
            scores, ids = found[0].astype(np.float64), found[1]
            order = np.lexsort((ids, -scores))  # each query's: ties by row, as at any other depth
            ids, scores = np.take_along_axis(ids, order, 1), np.take_along_axis(scores, order, 1)
            return [(row[row != -1], score[row != -1]) for row, score in zip(ids, scores)]  # no padding
        exact = strategy.Exact(self.vectors, lambda pks: self.transform.project_float32(self.raw.get(pks)))
        if allowed is None:  # pq: its candidates re-scored
            pairs = strategy.unfiltered(exact, projected, n)
        else:
            pairs = strategy.filtered(exact, projected, n, allowed)
        return [rows_of(sorted(rows, key=by_score)) for rows in pairs]  # ties by pk, as at any other depth


def rows_of(pairs: Sequence[tuple[int, float]]) -> RankedRows:
    """(row, score) pairs as RankedRows."""
    documents = Documents.scored(pairs)
    return documents.pks, documents.scores


def listed(ranked: RankedRows) -> list[tuple[int, float]]:
    """RankedRows as (row, score) pairs."""
    return list(zip(ranked[0].tolist(), ranked[1].tolist()))


def by_score(pair: tuple[int, float]) -> tuple[float, int]:
    return -pair[1], pair[0]


def rerank(raw: RawVectors, queries: np.ndarray, ranked: list[RankedRows], k: int) -> list[RankedRows]:
    """Re-score candidates by cosine of the raw encoder vectors (the full model's own similarity)."""
    queries = normalize_rows(np.asarray(queries, dtype=np.float32))
    counts = [len(rows) for rows, _ in ranked]
    every = np.concatenate([rows for rows, _ in ranked] or [np.zeros(0, np.int64)]).astype(np.int64)
    # every query's rows read at once (a read per query was most of a calibration's hundreds of reranks)
    held, at = np.unique(every, return_inverse=True)
    vectors = normalize_rows(raw.get(held)) if len(held) else np.zeros((0, queries.shape[1]), np.float32)
    # each query's rows gathered into one buffer (unbuffered: its indices are in range): a fresh array of over
    # a megabyte (memory.LARGE_BLOCK) is mapped and unmapped each time where the heap has no room to spare (a
    # calibration's 391 deep reranks on Cranfield: 118,000 page faults, 0.37 s against 0.11)
    gathered = np.empty((max(counts, default=0), vectors.shape[1]), vectors.dtype)
    out: list[RankedRows] = []
    for query, end, count in zip(queries, np.cumsum(counts).tolist(), counts):
        pks = every[end - count : end]
        scores = np.take(vectors, at[end - count : end], axis=0, out=gathered[:count], mode="clip") @ query
        order = np.argsort(-scores, kind="stable")[:k]
        out.append((pks[order], scores[order].astype(np.float64)))
    return out


def dense_places(
    retriever: Retriever,
    passages: PassageMap,
    queries: np.ndarray,
    n: int,
    allowed: np.ndarray | None,
    rerank_depth: int,
    cap: int = 1,
) -> list[Places]:
    """The n best places of each query, at most `cap` of a document (0: no cap; 1: documents by their best
    passage). `rerank_depth` places' rows are taken from the index and re-scored by the raw vectors first (0:
    not re-scored). Passages are read deeper, 4x at a time, for a query whose candidates hold fewer places than
    wanted while more rows remain; no more places are wanted than the cap leaves (a folder of 50 pages read
    every row of each query to find 100: half of its calibration's 10 s)."""
    rows = None if allowed is None else passages.rows_of(allowed)
    total = retriever.vectors.count if rows is None else len(rows)
    wanted = min(max(n, rerank_depth), available(passages, total, allowed, cap))
    depth = min(total, wanted * (2 if len(passages.long) and cap != 0 else 1))
    out = [Places(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)) for _ in queries]
    todo = np.arange(len(queries))
    while len(todo) and depth > 0:
        ranked = retriever.ranked_rows(queries[todo], depth, rows)
        if rerank_depth:
            ranked = rerank(retriever.raw, queries[todo], ranked, depth)
        again = []
        for query, (result, _), found in zip(todo, ranked, capped(ranked, passages, cap)):
            if len(found) < wanted and len(result) >= depth and depth < total:
                again.append(query)
            out[query] = found.first(n)
        todo, depth = np.array(again, dtype=np.int64), min(total, depth * 4)
    return out


dense_documents = (
    dense_places  # at its default cap of 1: documents by their best passage, as calibration asks
)


def fuse(dense: Found, keyword: Found, alpha: float, fusion: Fusion, k: int) -> Found:
    """The k best places of both lists by fused score: a dense place with its document's keyword value (0 if
    the keyword side lacks it), a keyword side's document that no dense place holds a place of its own (its
    passage chosen at the join); ties keep the dense side's order first."""
    dense_values, keyword_values = side_values(dense, fusion), side_values(keyword, fusion)
    worded = {match.pk: (match.score, value) for match, value in zip(keyword, keyword_values)}
    merged = []
    for match, value in zip(dense, dense_values):
        score, keyword_value = worded.get(match.pk, (None, 0.0))
        fused = alpha * value + (1 - alpha) * keyword_value
        merged.append(Match(match.pk, fused, match.row, {"dense": match.score, "keyword": score}))
    placed_pks = {match.pk for match in dense}
    for match, value in zip(keyword, keyword_values):
        if match.pk not in placed_pks:
            fused = 0.0 + (1 - alpha) * value
            merged.append(Match(match.pk, fused, match.row, {"dense": None, "keyword": match.score}))
    order = sorted(merged, key=lambda match: -match.score)  # stable: dense first on ties
    return order[:k]


def side_values(found: Found, fusion: Fusion) -> list[float]:
    """A side's list as fusion weighs it: its min-max normalised scores, or reciprocal ranks."""
    if fusion is Fusion.RRF:
        return [1.0 / (RRF_K + rank) for rank in range(1, len(found) + 1)]
    return min_max([match.score for match in found])


def min_max(scores: list[float]) -> list[float]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0] * len(scores) if high == low else [(s - low) / (high - low) for s in scores]


def search(
    request: Request,
    *,
    store: DocumentStore,
    dense: Retriever | None,
    keyword: KeywordRetriever | None,
    joined: Joiner = join,
) -> list[list[Hit]]:
    """The steps in order (the caller has checked that the mode's inputs and retrievers are there), each query's
    page of its ranked list (pages: above), the default cap filled where documents are fewer than the page;
    `joined` joins the page with its documents (hits.join: a sharded index's joins each shard's places)."""
    if request.options.mode is not SearchMode.DENSE and not store.has_keywords:
        raise IndexStateError(
            f"{store.path.parent} has no keyword index (made by an older semsearch and open read-only): open it "
            "once with write access to add one, or search with mode dense"
        )
    allowed = allowed_rows(store, request.where)
    needed = request.offset + request.k
    cap = 1 if request.per_document is None else request.per_document
    ranked = ranked_places(request, np.arange(request.count), cap, allowed, store, dense, keyword)
    short = [query for query, found in ranked.items() if len(found) < needed]
    if request.per_document is None and short and len(store.passages().long):
        more = ranked_places(request, np.array(short), 0, allowed, store, dense, keyword)
        texts = None if request.texts is None else [request.texts[query] for query in short]
        listed = placed(store, [ranked[query] for query in short], texts)
        further = placed(store, [more[query][:needed] for query in short], texts)
        for found, extra in zip(listed, further):
            held = {match.row for match in found}
            found += [match for match in extra if match.row not in held][: needed - len(found)]
    texts = request.texts or [""] * request.count
    terms = [keyword.terms(text) if keyword is not None and text else {} for text in texts]
    page = [ranked[query][request.offset : needed] for query in range(request.count)]
    return joined(store, page, request.texts, request.options.crop, terms)


def ranked_places(
    request: Request,
    todo: np.ndarray,
    cap: int,
    allowed: np.ndarray | None,
    store: DocumentStore,
    dense: Retriever | None,
    keyword: KeywordRetriever | None,
) -> dict[int, Found]:
    """Each of these queries' ranked list at this cap, as deep as its page needs (pages: above): a place once,
    a document at most `cap` times (0: no cap), none of the documents excluded."""
    needed = request.offset + request.k
    ranked: dict[int, Found] = {query: [] for query in todo.tolist()}
    taken: dict[int, set[int]] = {query: set() for query in ranked}  # places held (at a cap of 1: documents)
    held: dict[int, dict[int, int]] = {query: {} for query in ranked}  # places held of each document
    # a keyword side's document held without its passage chosen (that is left to the join: it reads the text)
    open_places: dict[int, dict[int, Match]] = {query: {} for query in ranked}
    first, nested, ties = first_window(request, store, dense, allowed, cap)
    # a nested first window's first places, as many as the page needs (one more: a tie across the cut)
    depth = min(first, needed + len(request.exclude) * max(cap, 1)) if nested else first
    while len(todo):
        again = []
        shallow = depth < first
        found_now = window(request, todo, depth + shallow, allowed, store, dense, keyword, cap)
        for query, found in zip(todo.tolist(), found_now):
            if shallow:
                if ties and len(found) > depth and found[depth - 1].score == found[depth].score:
                    again.append(query)  # a tie across the cut: the whole first window orders it
                    continue
                found = found[:depth]
            for match in found:
                if cap != 1 and match.row is not None and match.pk in open_places[query]:
                    # the document's keyword place gets its passage now, so that no place is listed twice
                    opened = open_places[query].pop(match.pk)
                    placed(store, [[opened]], None if request.texts is None else [request.texts[query]])
                    taken[query].add(opened.row)
                key = match.pk if cap == 1 else match.row if match.row is not None else -1 - match.pk
                count = held[query].get(match.pk, 0)
                if match.pk in request.exclude or key in taken[query] or (cap and count >= cap):
                    continue
                if cap != 1 and match.row is None:
                    open_places[query][match.pk] = match
                taken[query].add(key)
                held[query][match.pk] = count + 1
                ranked[query].append(match)
            if len(ranked[query]) < needed and len(found) >= depth:  # more may be found deeper
                again.append(query)
        todo, depth = np.array(again, dtype=np.int64), first if shallow else depth * 2
    return ranked


def first_window(
    request: Request, store: DocumentStore, dense: Retriever | None, allowed: np.ndarray | None, cap: int
) -> tuple[int, bool, bool]:
    """How deep a query's first window is (pages: above); whether it is nested (its first d places are those
    its steps find at depth d, so it is computed only as deep as the page needs); and whether which of tied
    places its first d hold may depend on d (FAISS's heaps: a tie across the cut is left to the whole
    window)."""
    options = request.options
    if options.mode is SearchMode.HYBRID:  # min-max over each side's list: fusion's own depth
        return FUSION_DEPTH, False, False
    if options.mode is SearchMode.KEYWORD:  # bm25 is exact, ties by pk; its places are nested too
        return PAGE_WINDOW, True, False
    if options.rerank:  # the index's `rerank` best rows re-scored, the same rows at every depth up to it
        return options.rerank, True, False
    long = len(store.passages().long) > 0 and cap != 0  # at no cap a row is a place
    rows = strategy.nested_rows(dense.vectors, None if allowed is None else len(allowed), long)
    if rows < TUNED_K:  # ivf, pq, a filter's approximate search: a plain query's depth
        return TUNED_K, False, False
    return int(min(PAGE_WINDOW, rows)), True, True


def window(
    request: Request,
    queries: np.ndarray,
    depth: int,
    allowed: np.ndarray | None,
    store: DocumentStore,
    dense: Retriever | None,
    keyword: KeywordRetriever | None,
    cap: int,
) -> list[Found]:
    """The `depth` best places of each of these queries by the mode's steps (rerank and fusion included), at
    most `cap` of a document."""
    options = request.options
    mode = options.mode
    dense_found: list[Found] = [[] for _ in queries]
    keyword_found: list[Found] = [[] for _ in queries]
    texts = None if request.texts is None else [request.texts[query] for query in queries]
    # the keyword side asked first and awaited after the dense side (a sharded index's shards answer both at once)
    keyword_top = keyword.ahead(texts, depth, allowed) if mode is not SearchMode.DENSE else None
    if mode is not SearchMode.KEYWORD:
        found = dense_places(
            dense, store.passages(), request.vectors[queries], depth, allowed, options.rerank, cap
        )
        dense_found = [places.found() for places in found]
    if keyword_top is not None:
        documents = keyword_top()
        if mode is SearchMode.KEYWORD and cap != 1:
            return keyword_places(store, documents, texts, cap, depth)
        keyword_found = [[Match(pk, score) for pk, score in scored] for scored in documents]
    if mode is SearchMode.DENSE:
        return dense_found
    if mode is SearchMode.KEYWORD:
        return keyword_found
    return [
        fuse(d, kw, options.alpha_of(query), options.fusion, depth)
        for query, d, kw in zip(queries, dense_found, keyword_found)
    ]


def check_offset(offset: int) -> int:
    """Where a page starts: at least 0, at most MAX_OFFSET."""
    if not isinstance(offset, int) or isinstance(offset, bool) or not 0 <= offset <= MAX_OFFSET:
        raise SettingsError(f"must be an integer from 0 to {MAX_OFFSET:,}, got {offset!r}", setting="offset")
    return offset
