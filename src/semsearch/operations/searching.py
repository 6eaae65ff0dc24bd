"""A search of one open index directory: the request checked, the generation it reads fixed, the retrievers
made from the directory's parts, the steps run (retrieval/search.py), and the page's facets counted."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ..retrieval.facets import facet_fields, request_facets
from ..retrieval.keywords import KeywordRetriever
from ..retrieval.query import Page, QueryDefaults, QueryOptions
from ..retrieval.search import DenseRetriever, Hit, Request, Results
from ..retrieval.search import search as run_search
from ..retrieval.similar import Examples
from ..settings import NO_MODEL, SearchMode
from .directory import IndexDirectory


def search(
    directory: IndexDirectory,
    options: QueryOptions,
    vectors: np.ndarray | None,
    texts: Any,
    k: int,
    where: Any,
    page: Page,
    exclude: frozenset[int] = frozenset(),
) -> list[Results]:
    """Each query's page of hits, with the generation it read and, if asked, the facets of what it covers."""
    dim = directory.settings.encoder_dim
    request = Request.checked(k, options, vectors, texts, where, dim, page.offset, exclude, page.per_document)
    with directory.pinned():  # the store read as the generation searched committed it
        generation = page.check(directory.state.generation)
        keyword = KeywordRetriever(directory.store, directory.state.count, options.typos)
        hits: list[list[Hit]] = [[] for _ in range(request.count)]
        if directory.state.count:
            dense = (
                DenseRetriever(directory.transform, directory.vectors, directory.raw)
                if vectors is not None
                else None
            )
            hits = run_search(request, store=directory.store, dense=dense, keyword=keyword)
        results = [
            Results(found, generation=generation, offset=page.offset, full_text=page.full_text)
            for found in hits
        ]
        if fields := facet_fields(page.facets):
            for result, counted in zip(
                results, request_facets(request, directory.store, keyword, fields, page)
            ):
                result.facets, result.facet_stats = counted.counts, counted.stats
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
