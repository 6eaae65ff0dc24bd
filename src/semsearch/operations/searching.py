"""A search of one open index directory: the request checked, the generation it reads fixed, the retrievers
made from the directory's parts, the steps run (retrieval/search.py), and the page's facets counted."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..retrieval.facets import Counter, facet_fields, request_facets
from ..retrieval.facets import count as count_facets
from ..retrieval.hits import join
from ..retrieval.keywords import KeywordRetriever
from ..retrieval.query import Page, QueryDefaults, QueryOptions
from ..retrieval.search import DenseRetriever, Hit, Joiner, Request, Results, Retriever
from ..retrieval.search import search as run_search
from ..retrieval.similar import Examples
from ..settings import NO_MODEL, SearchMode
from .directory import IndexDirectory


@dataclass(frozen=True)
class SearchParts:
    """What one search reads, as of one generation: the store's reads (a DocumentStore, or a sharded index's
    that answer as one: shardsearch.py), the dense retriever (made only for a query with vectors), the keyword
    retriever at a typo tolerance, and how facets are counted. One index directory's (`pinned`) and a sharded
    index's (shardsearch.ShardedParts) are the two searchers `search` runs over."""

    store: Any
    dense: Callable[[], Retriever]
    keyword: Callable[[int], Any]
    count: int  # documents
    generation: int
    dim: int  # of the raw query vectors
    counter: Counter = count_facets
    joined: Joiner = join


@contextlib.contextmanager
def pinned(searched: IndexDirectory | SearchParts) -> Iterator[SearchParts]:
    """The parts a search reads: a sharded index's as they are; an index directory's as of its latest
    generation, its store read as that generation committed it."""
    if isinstance(searched, SearchParts):
        yield searched
        return
    with searched.pinned():
        yield SearchParts(
            searched.store,
            lambda: DenseRetriever(searched.transform, searched.vectors, searched.raw),
            lambda typos: KeywordRetriever(searched.store, searched.state.count, typos),
            searched.state.count,
            searched.state.generation,
            searched.settings.encoder_dim,
        )


def search(
    searched: IndexDirectory | SearchParts,
    options: QueryOptions,
    vectors: np.ndarray | None,
    texts: Any,
    k: int,
    where: Any,
    page: Page,
    exclude: frozenset[int] = frozenset(),
) -> list[Results]:
    """Each query's page of hits, with the generation it read and, if asked, the facets of what it covers: the
    request checked, the steps run (retrieval/search.py), the facets counted."""
    with pinned(searched) as parts:
        request = Request.checked(
            k, options, vectors, texts, where, parts.dim, page.offset, exclude, page.per_document
        )
        generation = page.check(parts.generation)
        keyword = parts.keyword(options.typos)
        hits: list[list[Hit]] = [[] for _ in range(request.count)]
        if parts.count:
            dense = parts.dense() if vectors is not None else None
            hits = run_search(request, store=parts.store, dense=dense, keyword=keyword, joined=parts.joined)
        results = [
            Results(found, generation=generation, offset=page.offset, full_text=page.full_text)
            for found in hits
        ]
        if fields := facet_fields(page.facets):
            counted = request_facets(request, parts.store, keyword, fields, page, parts.counter)
            for result, facets in zip(results, counted):
                result.facets, result.facet_stats = facets.counts, facets.stats
    return results


def text_modes(directory: IndexDirectory) -> list[SearchMode]:
    """The modes a text query can take: only keyword without a model, only dense without a keyword index."""
    modes = [SearchMode.KEYWORD] if directory.settings.model == NO_MODEL else list(SearchMode)
    if not directory.store.has_keywords:
        modes = [mode for mode in modes if mode is SearchMode.DENSE]
    return modes


def similar(
    directory: IndexDirectory,
    defaults: QueryDefaults,
    ids: Sequence[str],
    negative: Sequence[str],
    k: int,
    where: Any,
    page: Page,
    asked: dict[str, Any],
) -> Results:
    """The k places closest to the documents `ids` by their stored vectors and distinctive words, away from
    those of `negative` (retrieval/similar.py), the examples left out, in the index's default mode (`asked`:
    rerank, crop)."""
    with directory.pinned():  # the examples read from the generation searched
        examples = Examples.of(directory.store, ids, negative)
        words = "" if defaults.mode is SearchMode.DENSE else examples.words(directory.store)
        texts = [words] if words else None
        options = QueryOptions.resolve(defaults, texts=bool(texts), **asked)
        vector, left_out = examples.vector(directory.raw)
        return search(directory, options, vector[None], texts, k, where, page, left_out)[0]
