"""Search as composable steps: prefilter (the rows a `where` allows) -> candidates from a retriever -> rerank
by the raw vectors -> join with the stored documents. A retriever is anything with `candidates(queries, n,
allowed)` returning ranked (pk, score) lists, so a second one (keywords) and a fusion step join here."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np

from . import strategy
from .filters import Condition
from .rawvectors import RawVectors
from .store import DocumentStore
from .transforms import Transform, normalize_rows
from .vectorindex import VectorIndex

Where = Sequence[str | Condition] | dict[str, Any] | None
Ranked = strategy.Ranked


@dataclass(frozen=True)
class Hit:
    id: str
    score: float
    title: str | None
    text: str
    metadata: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class Retriever(Protocol):
    def candidates(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> Ranked: ...


def conditions(where: Where) -> list[Condition]:
    """`where` as conditions: FIELD=VALUE strings (or Conditions), or a {field: value} dict meaning `=`."""
    if not where:
        return []
    if isinstance(where, dict):
        return [Condition(str(key), "=", str(value)) for key, value in where.items()]
    return [c if isinstance(c, Condition) else Condition.parse(c) for c in where]


def allowed_rows(store: DocumentStore, where: Where) -> np.ndarray | None:
    """The pks a filter allows, or None without a filter."""
    parsed = conditions(where)
    return store.matching_pks(parsed) if parsed else None


@dataclass
class DenseRetriever:
    """Candidates from the vector index, in the transform's space. Unfiltered: the approximate search with its
    tuned parameters. Filtered: exact, by the strategy strategy.py states (few rows allowed: scored exactly;
    many: the index with the rows as a selector, tuned for the selectivity, verified)."""

    transform: Transform
    vectors: VectorIndex
    raw: RawVectors

    def candidates(self, queries: np.ndarray, n: int, allowed: np.ndarray | None) -> Ranked:
        projected = self.transform.project(queries)
        exact = strategy.Exact(self.vectors, lambda pks: self.transform.project(self.raw.get(pks)))
        if allowed is None:
            return strategy.unfiltered(exact, projected, n)
        return strategy.filtered(exact, projected, n, allowed)


def rerank(raw: RawVectors, queries: np.ndarray, ranked: Ranked, k: int) -> Ranked:
    """Re-score candidates by cosine of the raw encoder vectors (the full model's own similarity)."""
    queries = normalize_rows(np.asarray(queries, dtype=np.float32))
    out: Ranked = []
    for query, result in zip(queries, ranked):
        if not result:
            out.append([])
            continue
        pks = np.array([pk for pk, _ in result], dtype=np.int64)
        scores = normalize_rows(raw.get(pks)) @ query
        order = np.argsort(-scores, kind="stable")[:k]
        out.append([(int(pks[i]), float(scores[i])) for i in order])
    return out


def join(store: DocumentStore, ranked: Ranked) -> list[list[Hit]]:
    """Hits with their documents, fetched in one query; rows deleted meanwhile are left out."""
    rows = store.get([pk for result in ranked for pk, _ in result])
    return [[Hit(score=score, **rows[pk]) for pk, score in result if pk in rows] for result in ranked]


def search(
    queries: np.ndarray,
    k: int,
    where: Where,
    rerank_candidates: int,
    *,
    store: DocumentStore,
    retriever: DenseRetriever,
) -> list[list[Hit]]:
    """The steps in order, for raw query vectors (one row per query)."""
    allowed = allowed_rows(store, where)
    ranked = retriever.candidates(queries, max(k, rerank_candidates), allowed)
    if rerank_candidates:
        ranked = rerank(retriever.raw, queries, ranked, k)
    return join(store, ranked)
