"""Facets: for a metadata field, how many of a set of documents hold each of its values (the most frequent first),
and the least and greatest of its numbers, as Meilisearch's facetDistribution and facetStats.

A value is named as `--where FIELD=VALUE` takes it (filters.py), so a facet value is also the filter that finds its
documents: a string as it is, a number in its shortest form (2021, 0.5), a boolean as true / false; a number and
the string of its digits are one value (`year=2021` matches both), and so are a boolean and the string
true / false. A document counts once per value it holds (a list's members each once). The counting is numpy over
a field's values read once per generation from the typed `meta` table the filters already use (a row per value,
store.py), never a pass over the documents' JSON: counting the allowed set of a query is a gather and a bincount,
of the set's own rows when it is small (a keyword query's documents), else a pass with a flag per document.
Which set is counted for which mode is the facade's (index.py); this module counts the set it is given."""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..errors import SettingsError
from ..settings import FACET_VALUES, MAX_FACET_VALUES, SearchMode
from ..storage.filters import COLUMN_FIELDS
from ..storage.reads import FacetRow
from ..storage.store import DocumentStore
from .keywords import KeywordRetriever
from .query import Page
from .search import Request, allowed_rows

NUMBER_KINDS = ("integer", "real")


def value_text(kind: str, number: int | float | None, text: str | None) -> str:
    """A value as a filter names it (`FIELD=VALUE`)."""
    if kind == "text":
        return text
    if kind in ("true", "false"):
        return kind
    if isinstance(number, float) and number.is_integer() and abs(number) < 2**63:
        return str(int(number))
    return repr(number) if isinstance(number, float) else str(number)


# A set of documents this share of a field's documents or more is counted in one pass over every row (a flag per
# document), unless the field holds one value a document (then a gather from its table: Grouped); a smaller one
# by gathering only its own values
WHOLE_PASS_SHARE = 0.25


@dataclass
class Grouped:
    """Values held by documents, grouped by document: the rows sorted by pk and each pk's first row, so the values
    of a few documents are read in time proportional to their rows, not to the field's; and, where it is small
    (at most a cell per document more than four times the rows: not one document of a thousand values among
    documents of one), as a table of a row per pk and a column per value held, so that a set's values are one
    gather (a list field's 10% of 200,000 documents: 0.26 ms against the grouped rows' 0.41; a field of one
    value a document: 0.06 against 0.23)."""

    pks: np.ndarray  # int64, sorted
    values: np.ndarray
    starts: np.ndarray  # pk's rows: starts[pk] to starts[pk + 1]
    table: np.ndarray | None = None  # (pks, most values a pk holds): int32 codes (-1: none) or floats (NaN)

    @classmethod
    def of(cls, pks: np.ndarray, values: np.ndarray) -> Grouped:
        order = np.argsort(pks, kind="stable")
        pks, values = pks[order], values[order]
        starts = np.searchsorted(pks, np.arange(int(pks[-1]) + 2 if len(pks) else 1))
        documents, width = len(starts) - 1, int(np.diff(starts).max(initial=0))
        table = None
        if len(pks) and documents * width <= 4 * len(pks) + documents:  # at most the bytes the rows take
            codes = values.dtype.kind in "iu"
            table = np.full((documents, width), -1 if codes else np.nan, np.int32 if codes else np.float64)
            table[pks, np.arange(len(pks)) - starts[pks]] = values
        return cls(pks, values, starts, table)

    def of_members(self, members: np.ndarray) -> np.ndarray:
        """The values the documents `members` (sorted pks) hold, a row each."""
        members = members[members < len(self.starts) - 1]  # past the last pk holding one: none
        large = len(members) >= WHOLE_PASS_SHARE * len(self.starts)
        if self.table is not None and (self.table.shape[1] == 1 or not large):
            found = np.take(self.table, members, axis=0).ravel()  # 2.5x faster than table[members]
            return found[found >= 0] if self.table.dtype.kind == "i" else found[~np.isnan(found)]
        if large:
            flags = np.zeros(len(self.starts), dtype=bool)
            flags[members] = True
            return self.values[flags[self.pks]]
        first, lengths = self.starts[members], self.starts[members + 1] - self.starts[members]
        ends = np.cumsum(lengths)
        # each member's rows: its first row, then the next ones up to its count
        rows = np.repeat(first - (ends - lengths), lengths) + np.arange(int(ends[-1]) if len(ends) else 0)
        return self.values[rows]


@dataclass
class FacetColumn:
    """One field's values: a value code per (document, distinct value), the values' names, and its numbers."""

    codes: Grouped  # int64, into names
    names: list[str]
    numbers: Grouped  # float64, a row per numeric value
    integral: bool  # every number an integer: min and max shown as integers
    totals: np.ndarray = field(init=False)  # counts over every document
    name_rank: np.ndarray = field(init=False)  # each value's place in the names' order (ties' order)

    def __post_init__(self) -> None:
        self.totals = np.bincount(self.codes.values, minlength=len(self.names))
        self.name_rank = np.argsort(np.argsort(np.array(self.names, dtype=object)))

    @classmethod
    def of(cls, rows: Sequence[FacetRow]) -> FacetColumn:
        names: dict[str, int] = {}
        pairs = np.array(
            [(pk, names.setdefault(value_text(kind, num, text), len(names))) for pk, kind, num, text in rows],
            dtype=np.int64,
        ).reshape(-1, 2)
        pairs = np.unique(pairs, axis=0)  # a document holding a value twice (a list) counts once
        numeric = [(pk, num) for pk, kind, num, _ in rows if kind in NUMBER_KINDS and num is not None]
        return cls(
            Grouped.of(pairs[:, 0], pairs[:, 1]),
            list(names),
            Grouped.of(
                np.array([pk for pk, _ in numeric], dtype=np.int64),
                np.array([num for _, num in numeric], dtype=np.float64),
            ),
            all(isinstance(num, int) for _, num in numeric),
        )

    def count(self, members: np.ndarray | None) -> np.ndarray:
        """Each value's count among `members` (sorted pks; None: every document)."""
        if members is None:
            return self.totals
        return np.bincount(self.codes.of_members(members), minlength=len(self.names))

    def top(self, found: np.ndarray, values: int) -> dict[str, int]:
        """The `values` most frequent of the values found, ties by name."""
        shown = np.flatnonzero(found)
        order = shown[np.lexsort((self.name_rank[shown], -found[shown]))][:values]
        return {self.names[code]: int(found[code]) for code in order}

    def stats(self, members: np.ndarray | None) -> dict[str, int | float] | None:
        """The least and greatest number among `members` (None: no number there)."""
        numbers = self.numbers.values if members is None else self.numbers.of_members(members)
        if not len(numbers):
            return None
        low, high = float(numbers.min()), float(numbers.max())
        return {"min": int(low), "max": int(high)} if self.integral else {"min": low, "max": high}


@dataclass
class Facets:
    """Counts per field, `{FIELD: {VALUE: COUNT}}` (most frequent first, ties by value), and `stats`:
    `{FIELD: {"min": ..., "max": ...}}` for the fields with numbers among the documents counted."""

    counts: dict[str, dict[str, int]]
    stats: dict[str, dict[str, int | float]]

    def to_json(self) -> dict[str, Any]:
        return {"facets": self.counts, "facet_stats": self.stats}


COLUMNS: weakref.WeakKeyDictionary[DocumentStore, dict[tuple[int, str], FacetColumn]] = (
    weakref.WeakKeyDictionary()
)


def column(store: DocumentStore, path: str) -> FacetColumn:
    """The field's values as of the store's generation (documents change only with it), read once."""
    cached = COLUMNS.setdefault(store, {})
    key = (store.generation(), path)
    if key not in cached:
        for old in [k for k in cached if k[0] != key[0]]:
            del cached[old]
        cached[key] = FacetColumn.of(store.facet_rows(path))
    return cached[key]


def facet_fields(fields: Sequence[str] | str | None) -> list[str]:
    """Facet fields from a list or one comma-separated string, in order, repeats dropped."""
    if fields is None:
        return []
    names = fields.split(",") if isinstance(fields, str) else [part for f in fields for part in f.split(",")]
    return list(dict.fromkeys(name.strip() for name in names if name.strip()))


def count(
    store: DocumentStore, fields: Sequence[str], members: np.ndarray | None, values: int = FACET_VALUES
) -> Facets:
    """Facets of `fields` over the documents `members` (sorted pks; None: every document), the `values` most
    frequent of each field."""
    check_fields(store, fields, values)
    counts, stats = {}, {}
    for name in fields:
        facet = column(store, name)
        counts[name] = facet.top(facet.count(members), values)
        if (numbers := facet.stats(members)) is not None:
            stats[name] = numbers
    return Facets(counts, stats)


def check_fields(store: Any, fields: Sequence[str], values: int) -> None:
    """Facets can be counted of these fields (metadata some document holds), `values` of each. `store`: a
    DocumentStore, or what answers its `schema_version` and `fields()` for several (a sharded index's)."""
    if not 1 <= values <= MAX_FACET_VALUES:
        raise SettingsError(f"must be from 1 to {MAX_FACET_VALUES}, got {values}", setting="facet_values")
    if store.schema_version < 2:
        raise SettingsError("facets need the typed metadata of a newer store: open the index once writable")
    if bad := [name for name in fields if name in COLUMN_FIELDS]:
        raise SettingsError(f"{bad[0]}: facets count metadata fields, not the {bad[0]}", setting="facets")
    known = set(store.fields())
    if unknown := [name for name in fields if name.split(".")[0] not in known]:
        listed = ", ".join(sorted(known)) or "none"
        raise SettingsError(f"{unknown[0]}: no document has this field (fields: {listed})", setting="facets")


Counter = Callable[[Any, Sequence[str], np.ndarray | None, int], Facets]  # count's signature


def request_facets(
    request: Request,
    store: Any,
    keyword: KeywordRetriever,
    fields: Sequence[str],
    page: Page,
    counter: Counter = count,
) -> list[Facets]:
    """Each query's facets over the documents its filter admits (every document without one); in keyword mode
    those that also hold one of its words (the set its ranking draws from). `store` and `keyword`: one index's,
    or a sharded index's that answer as they do (`counter`: its facets summed over the shards)."""
    allowed = allowed_rows(store, request.where)
    out = []
    for n in range(request.count):
        members = allowed
        if request.options.mode is SearchMode.KEYWORD:
            matching = keyword.matching(request.texts[n])
            members = matching if allowed is None else np.intersect1d(matching, allowed, assume_unique=True)
        out.append(counter(store, fields, members, page.facet_values))
    return out
