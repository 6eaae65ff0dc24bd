"""Search as composable steps: prefilter (the documents a `where` allows) -> candidates from each retriever the
mode uses -> fuse -> join with the stored documents.

- dense: the vector index's passages (strategy.py; rows of the documents allowed), re-scored by the raw vectors
  when asked (rerank), then a document scored by its best passage (MaxP), read deeper until enough documents.
- keyword: bm25 over the documents (keywords.py), the filter applied inside.
- hybrid: both lists, FUSION_DEPTH deep (or k), fused: a convex combination of each side's min-max normalised
  scores, `alpha` the dense side's weight, a document missing from one side taking that side's 0 (Bruch et al.,
  TOIS 2023); or reciprocal rank fusion.

Pages (`offset`): a query's ranked list is built in windows, the first W deep, then twice, four times ... as deep:
the first window is the steps above at depth W, each further window appends, in its own order, the documents
that the same steps twice as deep find and the list does not hold yet. A page is a slice of that list, reading
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

from collections.abc import Sequence
from dataclasses import dataclass, field, fields, replace
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
from . import snippets, strategy
from .keywords import KeywordRetriever, best_span
from .query import QueryOptions
from .vectorindex import TUNED_K, VectorIndex

Where = Sequence[str | Condition] | dict[str, Any] | None
Ranked = strategy.Ranked
PAGE_WINDOW = FUSION_DEPTH  # the first window's depth (pages: above)


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)
    # The best passage of a document cut into several: {"start", "end"} (character offsets in text) and "text".
    passage: dict[str, Any] | None = None
    # hybrid: each side's own score of the document (None: not among that side's candidates)
    scores: dict[str, float | None] | None = None
    # Where the passage (or the document) is in its file: Location.to_json() (page, line_start, line_end, anchor,
    # headings, each only where known); None for a document without sections.
    location: dict[str, Any] | None = None
    # The part that answers, cropped, with what matched marked: {"text", "highlights", "kind"} (snippets.py)
    snippet: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        """The hit as JSON-ready fields (shallow: dataclasses.asdict deep-copies, 0.1 ms a page of hits)."""
        return {name: getattr(self, name) for name in HIT_FIELDS}


HIT_FIELDS = tuple(f.name for f in fields(Hit))


class Results(list):
    """One query's hits (a list of Hit) and what the answer was read from: the index `generation`, the page's
    `offset`, and with facets asked their counts (`facets`, `facet_stats`: facets.py)."""

    def __init__(self, hits: Sequence[Hit] = (), *, generation: int = 0, offset: int = 0):
        super().__init__(hits)
        self.generation, self.offset = generation, offset
        self.facets: dict[str, dict[str, int]] | None = None
        self.facet_stats: dict[str, dict[str, int | float]] | None = None


@dataclass
class Match:
    """A document found: its pk, score, the vector row of its best passage (None: not known), side scores."""

    pk: int
    score: float
    row: int | None = None
    sides: dict[str, float | None] | None = None


Found = list[Match]  # of one query, best first
# One query's vector rows and their scores (float64), best first: how candidates pass between the dense side's
# steps (a Python pair per candidate cost a calibration's hundreds of searches more than the searches did)
RankedRows = tuple[np.ndarray, np.ndarray]


@dataclass(frozen=True)
class Documents:
    """One query's documents as arrays, best first: pks, scores (float64) and the vector row of each one's best
    passage (None: not known, a keyword side's); `found()` is the same as a Found."""

    pks: np.ndarray
    scores: np.ndarray
    rows: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.pks)

    def first(self, n: int) -> Documents:
        return Documents(self.pks[:n], self.scores[:n], None if self.rows is None else self.rows[:n])

    def found(self) -> Found:
        rows = [None] * len(self.pks) if self.rows is None else self.rows.tolist()
        return [
            Match(pk, score, row) for pk, score, row in zip(self.pks.tolist(), self.scores.tolist(), rows)
        ]

    @classmethod
    def scored(cls, pairs: Sequence[tuple[int, float]]) -> Documents:
        """(pk, score) pairs, best first, as Documents without rows."""
        pks = np.fromiter((pk for pk, _ in pairs), np.int64, len(pairs))
        return cls(pks, np.fromiter((score for _, score in pairs), np.float64, len(pairs)))

    @classmethod
    def of(cls, found: Found | Documents) -> Documents:
        """A Found (its pks and scores) as Documents; Documents as they are."""
        return found if isinstance(found, Documents) else cls.scored([(m.pk, m.score) for m in found])


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
    ) -> Request:
        """A request whose inputs are those its mode needs."""
        check_k(k)
        check_offset(offset)
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
        return cls(k, options, vectors, texts, where, offset, exclude)

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


def best_passages(ranked: list[RankedRows], passages: PassageMap) -> list[Documents]:
    """Each query's documents in the order of their best passage among its ranked rows (MaxP), every query's
    rows looked up at once (a lookup per query was a tenth of a calibration's hundreds of searches)."""
    if not len(passages.long):  # every document one row: its own pk
        return [Documents(rows, scores, rows) for rows, scores in ranked]
    counts = [len(rows) for rows, _ in ranked]
    rows = np.concatenate([rows for rows, _ in ranked] or [np.zeros(0, np.int64)]).astype(np.int64)
    scores = np.concatenate([scores for _, scores in ranked] or [np.zeros(0)])
    owners = passages.owners(rows)
    query = np.repeat(np.arange(len(ranked)), counts)
    # each (query, document)'s first row: sorted, they are every query's in turn, in the order of its rows
    _, first = np.unique(query * (int(owners.max(initial=0)) + 1) + owners, return_index=True)
    first = np.sort(first)
    ends = np.searchsorted(query[first], np.arange(len(ranked)), side="right").tolist()
    return [
        Documents(owners[first[start:end]], scores[first[start:end]], rows[first[start:end]])
        for start, end in zip([0, *ends[:-1]], ends)
    ]


def dense_documents(
    retriever: Retriever,
    passages: PassageMap,
    queries: np.ndarray,
    n: int,
    allowed: np.ndarray | None,
    rerank_depth: int,
) -> list[Documents]:
    """The n best documents of each query by their best passage. `rerank_depth` documents' passages are taken
    from the index and re-scored by the raw vectors first (0: not re-scored). Passages are read deeper, 4x at a
    time, for a query whose candidates hold fewer documents than wanted while more rows remain; no more
    documents are wanted than there are (a folder of 50 pages read every row of each query to find 100: half
    of its calibration's 10 s)."""
    rows = None if allowed is None else passages.rows_of(allowed)
    total = retriever.vectors.count if rows is None else len(rows)
    documents = total - int(passages.counts.sum()) + len(passages.long) if allowed is None else len(allowed)
    wanted = min(max(n, rerank_depth), documents)
    depth = min(total, wanted * (2 if len(passages.long) else 1))
    out = [Documents(np.zeros(0, np.int64), np.zeros(0), np.zeros(0, np.int64)) for _ in queries]
    todo = np.arange(len(queries))
    while len(todo) and depth > 0:
        ranked = retriever.ranked_rows(queries[todo], depth, rows)
        if rerank_depth:
            ranked = rerank(retriever.raw, queries[todo], ranked, depth)
        again = []
        for query, (result, _), found in zip(todo, ranked, best_passages(ranked, passages)):
            if len(found) < wanted and len(result) >= depth and depth < total:
                again.append(query)
            out[query] = found.first(n)
        todo, depth = np.array(again, dtype=np.int64), min(total, depth * 4)
    return out


def fuse(dense: Found, keyword: Found, alpha: float, fusion: Fusion, k: int) -> Found:
    """The k best of both lists by fused score; ties keep the dense side's order first."""
    merged: dict[int, Match] = {}
    for side, found in (("dense", dense), ("keyword", keyword)):
        if fusion is Fusion.RRF:
            values = [1.0 / (RRF_K + rank) for rank in range(1, len(found) + 1)]
        else:
            values = min_max([match.score for match in found])
        weight = alpha if side == "dense" else 1 - alpha
        for match, value in zip(found, values):
            fused = merged.get(match.pk)
            if fused is None:
                fused = merged[match.pk] = Match(match.pk, 0.0, match.row, {"dense": None, "keyword": None})
            fused.score += weight * value
            fused.sides[side] = match.score
            fused.row = fused.row if fused.row is not None else match.row
    order = sorted(merged.values(), key=lambda match: -match.score)  # stable: dense first on ties
    return order[:k]


def min_max(scores: list[float]) -> list[float]:
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0] * len(scores) if high == low else [(s - low) / (high - low) for s in scores]


def join(store: DocumentStore, found: list[Found], texts: Sequence[str] | None) -> list[list[Hit]]:
    """Hits with their documents, fetched in one query, and the best passage of a document cut into several
    (for a keyword-only match, the passage with most of the query's words); rows deleted meanwhile are left
    out."""
    pks = [match.pk for matches in found for match in matches]
    docs = store.get(pks)
    # the documents found that have several passages, with their counts (not every long one: per query)
    long = {pk: int(n) for pk, n in zip(pks, store.passages().counts_of(pks)) if n > 1}
    wanted = [
        row
        for matches in found
        for match in matches
        if match.pk in long
        for row in ([match.row] if match.row is not None else range(match.pk, match.pk + long[match.pk]))
    ]
    spans = store.spans(wanted) if wanted else {}
    chosen: list[list[tuple[Match, int, dict[str, Any] | None]]] = []  # each hit's passage row and passage
    for n, matches in enumerate(found):
        hits = []
        for match in matches:
            if match.pk not in docs:
                continue
            row, passage = match.pk, None
            if match.pk in long:
                rows = [r for r in range(match.pk, match.pk + long[match.pk]) if r in spans]
                if match.row is not None and match.row in spans:
                    row = match.row
                else:
                    options = [spans[r] for r in rows]
                    best = best_span(docs[match.pk]["text"], options, texts[n] if texts else "")
                    row = rows[options.index(best)]
                start, end = spans[row]
                passage = {"start": start, "end": end, "text": docs[match.pk]["text"][start:end]}
            hits.append((match, row, passage))
        chosen.append(hits)
    locations = store.locations([row for hits in chosen for _, row, _ in hits])
    return [
        [
            Hit(
                score=match.score,
                **docs[match.pk],
                passage=passage,
                scores=match.sides,
                location=locations.get(row),
            )
            for match, row, passage in hits
        ]
        for hits in chosen
    ]


def with_snippets(
    hits: list[list[Hit]],
    request: Request,
    keyword: KeywordRetriever,
    encoder: snippets.Encoding | None,
) -> list[list[Hit]]:
    """The hits with their snippets (snippets.py): the words the keyword side matched marked in the best part;
    where none is there, a dense or hybrid hit's sentence closest to the query in meaning (encoded here, one
    batch for every such hit)."""
    crop, mode = request.options.crop, request.options.mode
    if not crop:
        return hits
    meaning = mode is not SearchMode.KEYWORD and encoder is not None and request.vectors is not None
    out: list[list[Hit]] = []
    unmarked: list[tuple[int, int, str]] = []  # (query, hit, part) of the hits with no word marked
    for n, found in enumerate(hits):
        terms = keyword.terms(request.texts[n]) if request.texts is not None and keyword is not None else {}
        parts = [hit.passage["text"] if hit.passage else hit.text for hit in found]
        done = []
        for i, (hit, part, marks) in enumerate(zip(found, parts, snippets.marks_of(parts, terms))):
            if not marks and meaning:
                unmarked.append((n, i, part))
            done.append(replace(hit, snippet=snippets.snippet(part, marks, crop, "words")))
        out.append(done)
    if unmarked:
        queries = np.asarray(request.vectors, dtype=np.float32)[[n for n, _, _ in unmarked]]
        closest = snippets.closest_sentences([part for _, _, part in unmarked], queries, encoder)
        for (n, i, part), sentence in zip(unmarked, closest):
            if sentence is not None:
                meant = snippets.snippet(part, [sentence], crop, "meaning", anchor=sentence[0])
                out[n][i] = replace(out[n][i], snippet=meant)
    return out


def search(
    request: Request,
    *,
    store: DocumentStore,
    dense: DenseRetriever | None,
    keyword: KeywordRetriever | None,
    encoder: snippets.Encoding | None = None,
) -> list[list[Hit]]:
    """The steps in order (the caller has checked that the mode's inputs and retrievers are there), each query's
    page of its ranked list (pages: above)."""
    mode = request.options.mode
    if mode is not SearchMode.DENSE and not store.has_keywords:
        raise IndexStateError(
            f"{store.path.parent} has no keyword index (made by an older semsearch and open read-only): open it "
            "once with write access to add one, or search with mode dense"
        )
    allowed = allowed_rows(store, request.where)
    needed = request.offset + request.k
    ranked: list[Found] = [[] for _ in range(request.count)]
    taken = [set(request.exclude) for _ in range(request.count)]
    first, nested, ties = first_window(request, store, dense, allowed)
    # a nested first window's first documents, as many as the page needs (one more: a tie across the cut)
    depth = min(first, needed + len(request.exclude)) if nested else first
    todo = np.arange(request.count)
    while len(todo):
        again = []
        shallow = depth < first
        for query, found in zip(todo, window(request, todo, depth + shallow, allowed, store, dense, keyword)):
            if shallow:
                if ties and len(found) > depth and found[depth - 1].score == found[depth].score:
                    again.append(query)  # a tie across the cut: the whole first window orders it
                    continue
                found = found[:depth]
            for match in found:
                if match.pk not in taken[query]:
                    taken[query].add(match.pk)
                    ranked[query].append(match)
            if len(ranked[query]) < needed and len(found) >= depth:  # more may be found deeper
                again.append(query)
        todo, depth = np.array(again, dtype=np.int64), first if shallow else depth * 2
    page = join(store, [found[request.offset : needed] for found in ranked], request.texts)
    return with_snippets(page, request, keyword, encoder)


def first_window(
    request: Request, store: DocumentStore, dense: DenseRetriever | None, allowed: np.ndarray | None
) -> tuple[int, bool, bool]:
    """How deep a query's first window is (pages: above); whether it is nested (its first d documents are those
    its steps find at depth d, so it is computed only as deep as the page needs); and whether which of tied
    documents its first d hold may depend on d (FAISS's heaps: a tie across the cut is left to the whole
    window)."""
    options = request.options
    if options.mode is SearchMode.HYBRID:  # min-max over each side's list: fusion's own depth
        return FUSION_DEPTH, False, False
    if options.mode is SearchMode.KEYWORD:  # bm25 is exact, ties by pk
        return PAGE_WINDOW, True, False
    if options.rerank:  # the index's `rerank` best rows re-scored, the same rows at every depth up to it
        return options.rerank, True, False
    long = len(store.passages().long) > 0
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
    dense: DenseRetriever | None,
    keyword: KeywordRetriever | None,
) -> list[Found]:
    """The `depth` best documents of each of these queries by the mode's steps (rerank and fusion included)."""
    options = request.options
    mode = options.mode
    dense_found: list[Found] = [[] for _ in queries]
    keyword_found: list[Found] = [[] for _ in queries]
    if mode is not SearchMode.KEYWORD:
        found = dense_documents(
            dense, store.passages(), request.vectors[queries], depth, allowed, options.rerank
        )
        dense_found = [documents.found() for documents in found]
    if mode is not SearchMode.DENSE:
        texts = [request.texts[query] for query in queries]
        keyword_found = [
            [Match(pk, score) for pk, score in scored] for scored in keyword.top(texts, depth, allowed)
        ]
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
