"""GET /facets/ranges: a number or date field's values among a search's documents as a few ranges, each with
its count and the filter that finds its documents, for the search page's buttons where a field holds too many
values to offer one each (a folder's `size` and `modified`: a value a file).

The documents counted are those the search's facets count (retrieval/facets.py): the filter's (every document
without one), in keyword mode those that also hold one of the query's words. The edges are quantiles of the values
(so each range holds a share of the documents, whatever their skew: file sizes), rounded to two significant
figures (or finer: rounder) for numbers and to the day for dates; a range is `FIELD>=low` and `FIELD<high` (the first has no low
bound, the last no high one), and its count is of exactly those values."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from ..retrieval.facets import column, value_text
from ..retrieval.keywords import KeywordRetriever
from ..retrieval.search import Where, allowed_rows
from ..settings import SearchMode
from ..storage.filters import is_date
from .directory import IndexDirectory


def facet_ranges(
    index: IndexDirectory,
    default: SearchMode,
    fields: Sequence[str],
    q: str | None,
    where: Where,
    mode: str | None,
    buckets: int,
) -> dict[str, list[dict] | None]:
    """Each field's ranges among the documents the search counts (`default`: the index's default mode)."""
    members = members_of(index, default, q, where, mode)
    return {name: field_ranges(index, name, members, buckets) for name in fields}


def members_of(
    index: IndexDirectory, default: SearchMode, q: str | None, where: Where, mode: str | None
) -> np.ndarray | None:
    """The rows the search's facets count: the filter's, in keyword mode those holding a query word too."""
    allowed = allowed_rows(index.store, where)
    if (SearchMode(mode) if mode else default) is not SearchMode.KEYWORD or not q:
        return allowed
    matching = KeywordRetriever(index.store, index.state.count).matching(q)
    return matching if allowed is None else np.intersect1d(matching, allowed, assume_unique=True)


def rounder(values: np.ndarray, buckets: int) -> Callable[[float], float]:
    """Rounds an edge down to two significant figures, or to the power of ten below the values' span over the
    buckets where that is finer (years 2000-2019 keep 2004; sizes of 15 B to 43 kB round to 1,200)."""
    span = float(values[-1] - values[0]) / buckets
    step = 10.0 ** np.floor(np.log10(span)) if span > 0 else 1.0

    def rounded(value: float) -> float:
        scale = min(step, 10.0 ** (np.floor(np.log10(abs(value))) - 1)) if value else step
        return float(np.floor(value / scale) * scale)

    return rounded


def edges_of(values: np.ndarray, buckets: int, key: Callable[[Any], Any]) -> list[Any]:
    """The inner edges between `buckets` ranges of the sorted `values` (fewer where values repeat)."""
    cuts = [values[int(len(values) * i / buckets)] for i in range(1, buckets)]
    edges = sorted({key(cut) for cut in cuts} - {key(values[0])})
    return [edge for edge in edges if values[0] < edge <= values[-1]]


def ranges(field: str, values: np.ndarray, edges: list[Any], shown: Callable[[Any], str]) -> list[dict]:
    bounds = [None, *edges, None]
    out = []
    for low, high in zip(bounds, bounds[1:]):
        inside = np.ones(len(values), dtype=bool)
        where = []
        if low is not None:
            inside &= values >= low
            where.append(f"{field}>={shown(low)}")
        if high is not None:
            inside &= values < high
            where.append(f"{field}<{shown(high)}")
        low_shown = shown(low) if low is not None else shown(values[0])
        high_shown = shown(high) if high is not None else shown(values[-1])
        out.append({"from": low_shown, "to": high_shown, "count": int(inside.sum()), "where": where})
    return out


def field_ranges(
    index: IndexDirectory, field: str, members: np.ndarray | None, buckets: int
) -> list[dict] | None:
    facet = column(index.store, field)
    numbers = facet.numbers.values if members is None else facet.numbers.of_members(members)
    if len(numbers):
        numbers = np.sort(numbers)
        edges = edges_of(numbers, buckets, rounder(numbers, buckets))
        return ranges(field, numbers, edges, lambda v: value_text("real", float(v), None))
    counts = facet.count(members)
    dated = [(name, int(n)) for name, n in zip(facet.names, counts) if n and is_date(name)]
    if not dated:
        return None
    dates = np.sort(np.array([name for name, n in dated for _ in range(n)], dtype=object))
    return ranges(field, dates, edges_of(dates, buckets, lambda d: d[:10]), str)
