"""One shard of a sharded index as its searcher answers the coordinator (shardsearch.py): the shard's index
directory opened once and kept (in this process, or in a cluster worker: one long-lived searcher each), asked
for its part of each step of a search, every answer in the whole index's terms (the document pks and vector rows
of the index it was cut from, bm25 with the whole corpus's statistics).

Each answer is plain data (numpy arrays, lists, dicts), so it crosses a process boundary as it is."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ..retrieval import strategy
from ..retrieval.facets import column
from ..retrieval.hits import Hit, join
from ..retrieval.keywords import KeywordRetriever
from ..retrieval.places import Found, RankedRows
from ..retrieval.search import DenseRetriever
from ..settings import DEFAULT_WAIT
from ..storage.filters import Condition
from ..storage.shardmanifest import KeywordStatistics
from .directory import IndexDirectory
from .opening import open_directory

# The store's reads the coordinator asks of every shard and joins (each answers for the pks or rows it holds).
STORE_READS = frozenset({"get", "spans", "locations", "fields"})

# One query's dense candidates: rows, scores and (pq) the scores its codes found them by, which the
# coordinator merges by before it keeps the best by the exact ones.
Candidates = tuple[np.ndarray, np.ndarray, np.ndarray | None]


class ShardSearcher:
    """A shard's index directory, opened to read, answering its part of each search step."""

    def __init__(self, path: str | Path, statistics: KeywordStatistics, wait: float = DEFAULT_WAIT):
        self.path = Path(path)
        self.statistics = statistics
        self.wait = wait
        self._directory: IndexDirectory | None = None

    @property
    def directory(self) -> IndexDirectory:
        """The shard's directory, opened by the first call (a cluster's actor answers every call on one thread
        of its own, which SQLite's connection must stay on, not the one that made the actor)."""
        if self._directory is None:
            self._directory = open_directory(self.path, self.wait)
        return self._directory

    def close(self) -> None:
        if self._directory is not None:
            self._directory.close()

    def describe(self) -> dict[str, Any]:
        """Its name, generation, documents, vector index (kind and parameters as the coordinator plans with)
        and the process answering."""
        directory = self.directory
        directory.refresh()
        vectors = directory.vectors if directory.state.count else None
        return {
            "name": self.path.name,
            "generation": directory.state.generation,
            "documents": directory.state.count,
            "rows": 0 if vectors is None else vectors.count,
            "has_keywords": directory.store.has_keywords,
            "schema_version": directory.store.schema_version,
            "vectors": None if vectors is None else vector_description(vectors),
            "pid": os.getpid(),
        }

    def vector_rows(self) -> np.ndarray:
        """Its vector rows (sorted): which rows' raw vectors it holds."""
        return self.directory.store.vector_pks()

    def passages(self) -> tuple[np.ndarray, np.ndarray]:
        """Its documents of several passages: first rows and counts."""
        passages = self.directory.store.passages()
        return passages.long, passages.counts

    def read(self, name: str, *args: Any) -> Any:
        """One of the store's reads (STORE_READS) of what it holds."""
        if name not in STORE_READS:
            raise ValueError(f"{name}: not a store read a shard answers")
        return getattr(self.directory.store, name)(*args)

    def matching_pks(self, conditions: list[Condition]) -> np.ndarray:
        return self.directory.store.matching_pks(conditions)

    def dense(
        self, queries: np.ndarray, n: int, allowed_rows: np.ndarray | None
    ) -> tuple[list[Candidates], int]:
        """Each query's n best rows of this shard among `allowed_rows` (None: all), as one index finds them, and
        how many of the merged candidates the whole keeps before the exact scores choose (n; unfiltered pq:
        its codes' candidates, as deep as one index's search reads them at this depth, with their exact scores
        and their codes' scores, which the coordinator merges by first)."""
        directory = self.directory
        retriever = DenseRetriever(directory.transform, directory.vectors, directory.raw)
        if allowed_rows is not None:
            allowed_rows = np.intersect1d(allowed_rows, self.vector_rows(), assume_unique=True)
        if allowed_rows is not None or retriever.vectors.exact_source is not None:
            ranked = retriever.ranked_rows(queries, n, allowed_rows)
            return [(rows, scores, None) for rows, scores in ranked], n
        return coded_candidates(retriever, queries, n)

    def join(
        self, found: list[Found], texts: Sequence[str] | None, crop: int, terms: Sequence[Mapping[str, Any]]
    ) -> list[list[Hit | None]]:
        """Its places of each query's page joined with their documents (hits.join), a hit per place in their
        order (None: its document no longer stored)."""
        hits = join(self.directory.store, found, texts, crop, terms)
        out = []
        for matches, joined in zip(found, hits):  # a page holds a place once: its row names its hit
            by_row = {hit.row: hit for hit in joined}
            out.append([by_row.get(match.row) for match in matches])
        return out

    def raw(self, rows: np.ndarray) -> np.ndarray:
        """The raw vectors of these rows (each one it holds)."""
        return self.directory.raw.get(np.asarray(rows, dtype=np.int64))

    def keyword_top(
        self, terms: list[dict[str, float]], n: int, allowed: np.ndarray | None
    ) -> list[list[tuple[int, float]]]:
        """Each query's n best documents of this shard by bm25 with the whole corpus's statistics."""
        matrix = self.keywords().matrix()
        return [[] if matrix is None else matrix.top(asked, n, allowed) for asked in terms]

    def keyword_matching(self, terms: list[dict[str, float]]) -> list[np.ndarray]:
        """The pks of its documents holding any of each query's terms."""
        matrix = self.keywords().matrix()
        empty = np.empty(0, dtype=np.int64)
        return [empty if matrix is None else matrix.holding(list(asked)) for asked in terms]

    def facet_counts(
        self, fields: list[str], members: np.ndarray | None
    ) -> dict[str, tuple[dict[str, int], tuple[float, float] | None, bool]]:
        """Each field's count of every value among its `members` (None: all), the least and greatest number
        there, and whether every number of the field it holds is an integer: the coordinator sums them."""
        store, out = self.directory.store, {}
        for name in fields:
            facet = column(store, name)
            found = facet.count(members)
            numbers = facet.numbers.values if members is None else facet.numbers.of_members(members)
            low_high = (float(numbers.min()), float(numbers.max())) if len(numbers) else None
            counts = {facet.names[code]: int(found[code]) for code in np.flatnonzero(found)}
            out[name] = (counts, low_high, facet.integral)
        return out

    def keywords(self) -> KeywordRetriever:
        directory = self.directory
        return KeywordRetriever(directory.store, directory.state.count, statistics=self.statistics)


def vector_description(vectors: Any) -> dict[str, Any]:
    """What the coordinator plans a search's depth by (strategy.nested_rows, plan): the kind, its
    parameters, its width."""
    return {
        "kind": vectors.kind,
        "exhaustive": vectors.exhaustive,
        "exact_source": vectors.exact_source,
        "search_params": vectors.search_params,
        "params": vectors.params,
        "dim": vectors.dim,
    }


def coded_candidates(retriever: DenseRetriever, queries: np.ndarray, n: int) -> tuple[list[Candidates], int]:
    """pq's candidates for n results, as strategy.approximate finds them (k_factor x n by the codes, k_factor
    as tuned for this depth), each with its exact score (strategy.Exact's, from the raw vectors projected) and
    its codes' score; and how many that is."""
    vectors, transform = retriever.vectors, retriever.transform
    projected = transform.project(queries)
    params = vectors.at_depth(vectors.search_params, n)
    depth = n * int(params.get("k_factor", 1))
    found_scores, found = vectors.search_arrays(projected, depth, None, params)
    exact = strategy.Exact(vectors, lambda pks: transform.project_float32(retriever.raw.get(pks)))
    out: list[Candidates] = []
    for query, ids, codes_scores in zip(projected, found, found_scores):
        held = ids >= 0
        rows = ids[held].astype(np.int64)
        scores = (exact.vectors_of(rows) @ query).astype(np.float64) if len(rows) else np.zeros(0)
        out.append((rows, scores, codes_scores[held].astype(np.float64)))
    return out, depth


def merged_rows(answers: list[list[RankedRows]], n: int) -> list[RankedRows]:
    """Each query's n best rows of every shard's, best first, ties by row (as one index orders them)."""
    out = []
    for parts in zip(*answers):
        rows = np.concatenate([part[0] for part in parts]).astype(np.int64)
        scores = np.concatenate([part[1] for part in parts]).astype(np.float64)
        order = np.lexsort((rows, -scores))[:n]
        out.append((rows[order], scores[order]))
    return out
