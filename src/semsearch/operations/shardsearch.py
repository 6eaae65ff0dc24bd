"""A sharded index's search: the one index's steps (retrieval/search.py, through searching.search_parts) run over
parts that scatter each step to the shards (shardsearcher.py) and merge their answers exactly, so that every
step sees what it would see of the one index the shards were cut from.

- dense: each shard's n best rows, merged by score, ties by row (a row is the source's), cut to n: the n best of
  the whole, as the source's one FAISS index ranks them (its rows' codes are the source's; an ivf probes the
  same lists of the same quantizer in every shard). pq: each shard's codes' candidates, merged by the codes'
  score to as many as one index reads, then kept by their exact scores. rerank reads the candidates' raw vectors
  from the shards that hold them, after the merge, so it re-scores the whole's candidates and no others.
- keyword: bm25 in each shard with the whole corpus's document frequencies, documents and average length
  (keywords.json), query terms corrected over the whole vocabulary: each document's score is the one index's,
  and the merge by score, ties by pk, is its ranking.
- hybrid: the two merged lists fused at the coordinator (min-max over the whole's lists, never a shard's).
- filters, passages, the join and snippets read the shards' stores by pk; facets are counted in each shard
  and summed (the most frequent values chosen from the sums).

`Shards` is where the shards answer: `LocalShards` in this process, or a cluster's workers (shardcluster.py)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from ..retrieval.facets import Facets, check_fields
from ..retrieval.hits import Hit
from ..retrieval.keywords import query_terms
from ..retrieval.places import Found, RankedRows
from ..retrieval.typos import Vocabulary
from ..storage.filters import Condition
from ..storage.passages import PassageMap
from ..storage.shardmanifest import KeywordStatistics, ShardManifest
from .searching import SearchParts
from .shardsearcher import Candidates, ShardSearcher, merged_rows


class Shards(Protocol):
    """Where a sharded index's searchers answer: a call of each, or of some, their answers in shard order."""

    def each(self, method: str, *args: Any) -> list[Any]: ...

    def ahead(self, method: str, *args: Any) -> Callable[[], list[Any]]:
        """`each` asked now, its answers when called."""
        ...

    def some(self, calls: dict[int, tuple[Any, ...]], method: str) -> dict[int, Any]: ...

    def workers(self) -> list[str]: ...

    def close(self) -> None: ...


@dataclass
class LocalShards:
    """Every shard's searcher in this process."""

    searchers: list[ShardSearcher]

    @classmethod
    def open(cls, directory: Path, manifest: ShardManifest, statistics: KeywordStatistics) -> LocalShards:
        return cls([ShardSearcher(directory / entry.name, statistics) for entry in manifest.shards])

    def each(self, method: str, *args: Any) -> list[Any]:
        return [getattr(searcher, method)(*args) for searcher in self.searchers]

    def ahead(self, method: str, *args: Any) -> Callable[[], list[Any]]:
        return lambda: self.each(method, *args)

    def some(self, calls: dict[int, tuple[Any, ...]], method: str) -> dict[int, Any]:
        return {shard: getattr(self.searchers[shard], method)(*args) for shard, args in calls.items()}

    def workers(self) -> list[str]:
        return ["this process"] * len(self.searchers)

    def close(self) -> None:
        for searcher in self.searchers:
            searcher.close()


@dataclass(frozen=True)
class ShardedVectors:
    """What the search plans by of the whole's vector index (strategy.nested_rows, plan): the shards' kind and
    parameters (the source's, as cut) over the rows of all of them."""

    kind: str
    exhaustive: bool
    exact_source: str | None
    search_params: dict[str, Any]
    params: dict[str, Any] | None
    dim: int
    count: int


@dataclass
class Owners:
    """Which shard holds each vector row (a document's pk is its first row): the routing of reads by pk."""

    shard_of_row: np.ndarray  # int16 per row, -1: no shard's

    @classmethod
    def of(cls, rows: list[np.ndarray]) -> Owners:
        size = max((int(part.max()) + 1 for part in rows if len(part)), default=0)
        owner = np.full(size, -1, dtype=np.int16)
        for shard, part in enumerate(rows):
            owner[part] = shard
        return cls(owner)

    def locate(self, ids: Sequence[int] | np.ndarray) -> np.ndarray:
        """The shard holding each id (a row or a pk), -1 where none does."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        inside = (ids >= 0) & (ids < len(self.shard_of_row))
        shards = np.full(len(ids), -1, dtype=np.int64)
        shards[inside] = self.shard_of_row[ids[inside]]
        return shards

    def split(self, ids: Sequence[int] | np.ndarray) -> dict[int, np.ndarray]:
        """The ids each shard holds, in their order; ids no shard holds are left out."""
        ids = np.asarray(ids, dtype=np.int64).reshape(-1)
        shards = self.locate(ids)
        return {int(shard): ids[shards == shard] for shard in np.unique(shards[shards >= 0])}


@dataclass
class ShardedRaw:
    """The raw vectors of rows, read from the shards that hold them, in the rows' order."""

    shards: Shards
    owners: Owners
    dim: int

    def get(self, rows: np.ndarray) -> np.ndarray:
        rows = np.asarray(rows, dtype=np.int64)
        shards = self.owners.locate(rows)
        held = [int(shard) for shard in np.unique(shards[shards >= 0])]
        answers = self.shards.some({shard: (rows[shards == shard],) for shard in held}, "raw")
        dtype = next((answer.dtype for answer in answers.values()), np.float32)
        out = np.zeros((len(rows), self.dim), dtype=dtype)
        for shard, answer in answers.items():
            out[shards == shard] = answer
        return out


@dataclass
class ShardedDense:
    """The dense side over the shards (the module's first point)."""

    shards: Shards
    vectors: ShardedVectors
    raw: ShardedRaw

    def ranked_rows(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> list[RankedRows]:
        answered: list[tuple[list[Candidates], int]] = self.shards.each("dense", queries, n, allowed)
        answers = [found for found, _ in answered]
        if all(coded is None for shard in answers for _, _, coded in shard):
            return merged_rows([[(rows, scores) for rows, scores, _ in shard] for shard in answers], n)
        depth = answered[0][1]  # every shard's: the source's parameters at this depth
        return [coded_merge(parts, n, depth) for parts in zip(*answers)]


def coded_merge(parts: Sequence[Candidates], n: int, depth: int) -> RankedRows:
    """pq's candidates of every shard: the `depth` best by their codes' scores (ties by row), of those the n
    best by the exact scores (ties in the codes' order, as strategy.Exact.rescore keeps them), ties by row."""
    rows = np.concatenate([part[0] for part in parts]).astype(np.int64)
    exact = np.concatenate([part[1] for part in parts])
    coded = np.concatenate([part[2] for part in parts if part[2] is not None])
    kept = np.lexsort((rows, -coded))[:depth]
    best = kept[np.argsort(-exact[kept], kind="stable")[:n]]
    order = np.lexsort((rows[best], -exact[best]))
    return rows[best][order], exact[best][order].astype(np.float64)


@dataclass
class ShardedKeywords:
    """The keyword side over the shards: the query's terms over the whole vocabulary, each shard's bm25 with
    the whole corpus's statistics, merged by score, ties by pk."""

    shards: Shards
    vocabulary: Vocabulary
    typos: int
    asked: dict[str, dict[str, float]] = field(default_factory=dict, repr=False)

    def terms(self, text: str) -> dict[str, float]:
        if text not in self.asked:
            self.asked[text] = query_terms(text, self.typos, self.vocabulary if self.typos else None)
        return self.asked[text]

    def top(self, texts: Sequence[str], n: int, allowed: np.ndarray | None) -> list[list[tuple[int, float]]]:
        return self.ahead(texts, n, allowed)()

    def ahead(
        self, texts: Sequence[str], n: int, allowed: np.ndarray | None
    ) -> Callable[[], list[list[tuple[int, float]]]]:
        """`top` sent to the shards now, merged when called."""
        asked = [self.terms(text) for text in texts]
        answers = self.shards.ahead("keyword_top", asked, n, allowed)

        def merged() -> list[list[tuple[int, float]]]:
            out = []
            for parts in zip(*answers()):
                ranked = sorted(
                    (pair for part in parts for pair in part), key=lambda pair: (-pair[1], pair[0])
                )
                out.append(ranked[:n])
            return out

        return merged

    def matching(self, text: str) -> np.ndarray:
        parts = [found[0] for found in self.shards.each("keyword_matching", [self.terms(text)])]
        return np.sort(np.concatenate(parts)).astype(np.int64)


@dataclass
class ShardedStore:
    """The store's reads a search makes (filters, passages, the join), over the shards, by pk."""

    shards: Shards
    owners: Owners
    long_documents: PassageMap
    has_keywords: bool
    schema_version: int
    path: Path

    def passages(self) -> PassageMap:
        return self.long_documents

    def matching_pks(self, conditions: list[Condition]) -> np.ndarray:
        return np.sort(np.concatenate(self.shards.each("matching_pks", conditions))).astype(np.int64)

    def fields(self) -> list[str]:
        return sorted({name for names in self.shards.each("read", "fields") for name in names})

    def get(self, pks: Sequence[int]) -> dict[int, dict[str, Any]]:
        return self._joined("get", pks)

    def spans(self, pks: Sequence[int]) -> dict[int, tuple[int, int]]:
        return self._joined("spans", pks)

    def locations(self, rows: Sequence[int]) -> dict[int, dict[str, object]]:
        return self._joined("locations", rows)

    def join(
        self,
        found: list[Found],
        texts: Sequence[str] | None,
        crop: int = 0,
        terms: Sequence[Mapping[str, Any]] | None = None,
    ) -> list[list[Hit]]:
        """hits.join over the shards: each shard joins its places of every query's page, in one call each."""
        owners = [self.owners.locate([match.pk for match in matches]) for matches in found]
        calls = {}
        for shard in {int(shard) for located in owners for shard in located if shard >= 0}:
            mine = [
                [m for m, at in zip(matches, located) if at == shard]
                for matches, located in zip(found, owners)
            ]
            calls[shard] = (mine, texts, crop, terms or [{} for _ in found])
        answers = {
            shard: [iter(hits) for hits in joined]
            for shard, joined in self.shards.some(calls, "join").items()
        }
        out = []
        for query, located in enumerate(owners):
            hits = [next(answers[int(shard)][query]) if shard >= 0 else None for shard in located]
            out.append([hit for hit in hits if hit is not None])
        return out

    def _joined(self, name: str, ids: Sequence[int]) -> dict[int, Any]:
        calls = {shard: (name, part.tolist()) for shard, part in self.owners.split(list(ids)).items()}
        joined: dict[int, Any] = {}
        for answer in self.shards.some(calls, "read").values():
            joined.update(answer)
        return joined


@dataclass
class ShardedParts:
    """A sharded index's parts as one generation of its manifest has them (`search_parts` makes a search's)."""

    shards: Shards
    manifest: ShardManifest
    statistics: KeywordStatistics
    store: ShardedStore
    dense: ShardedDense
    vocabulary: Vocabulary
    documents: int
    dim: int
    described: list[dict[str, Any]]

    @classmethod
    def of(
        cls, directory: Path, shards: Shards, manifest: ShardManifest, statistics: KeywordStatistics, dim: int
    ) -> ShardedParts:
        described = shards.each("describe")
        owners = Owners.of(shards.each("vector_rows"))
        long, counts = zip(*shards.each("passages"))
        first = np.concatenate(long).astype(np.int64)
        order = np.argsort(first)
        passages = PassageMap(first[order], np.concatenate(counts).astype(np.int64)[order])
        store = ShardedStore(
            shards,
            owners,
            passages,
            all(shard["has_keywords"] for shard in described),
            min(shard["schema_version"] for shard in described),
            directory / "shards.json",
        )
        planned = next(shard["vectors"] for shard in described if shard["vectors"] is not None)
        vectors = ShardedVectors(**planned, count=sum(shard["rows"] for shard in described))
        dense = ShardedDense(shards, vectors, ShardedRaw(shards, owners, dim))
        vocabulary = Vocabulary(statistics.frequencies)
        documents = sum(shard["documents"] for shard in described)
        return cls(shards, manifest, statistics, store, dense, vocabulary, documents, dim, described)

    def search_parts(self) -> SearchParts:
        return SearchParts(
            self.store,
            lambda: self.dense,
            lambda typos: ShardedKeywords(self.shards, self.vocabulary, typos),
            self.documents,
            self.manifest.generation,
            self.dim,
            self.count_facets,
            lambda store, *asked: self.store.join(*asked),
        )

    def count_facets(
        self, store: ShardedStore, fields: Sequence[str], members: np.ndarray | None, values: int
    ) -> Facets:
        """Facets of the whole: every shard's counts of each value summed, the `values` most frequent of the
        sums (ties by value), the least and greatest number of all (integers where every number is one)."""
        check_fields(store, fields, values)
        answers = self.shards.each("facet_counts", list(fields), members)
        counts: dict[str, dict[str, int]] = {}
        stats: dict[str, dict[str, int | float]] = {}
        for name in fields:
            summed: dict[str, int] = {}
            for answer in answers:
                for value, found in answer[name][0].items():
                    summed[value] = summed.get(value, 0) + found
            counts[name] = dict(sorted(summed.items(), key=lambda item: (-item[1], item[0]))[:values])
            ranges = [answer[name][1] for answer in answers if answer[name][1] is not None]
            if ranges:
                low, high = min(r[0] for r in ranges), max(r[1] for r in ranges)
                integral = all(answer[name][2] for answer in answers)
                stats[name] = {"min": int(low), "max": int(high)} if integral else {"min": low, "max": high}
        return Facets(counts, stats)
