"""The `--where` language: `FIELD OP VALUE` conditions on a document's metadata, ANDed, and their SQL.

- FIELD is a metadata field, `id` or `title`; a dotted path (`address.city`) reaches into nested objects.
- `=` and `!=` compare a value that reads as a number with both the number and the string (JSON keeps them
  apart); `true`, `false` match JSON booleans (and those strings); `null` matches JSON null and a missing field.
  A list matches when one of its members does (`tags=a`). `!=` is the negation: documents without the field
  count as different from any value.
- `<`, `<=`, `>`, `>=` compare numbers (SQLite ranks any text above every number); a list matches when one
  of its numbers does. A value written as an ISO 8601 date or date-time (`2026-01-01`, `2026-01-01T12:00`)
  compares dates: text values in that form, as written by file ingest (`modified`), front matter and tables
  (UTC, without a zone), ordered as text, which for ISO 8601 is time order.
- What cannot be meant is refused with a message (`lang==zh`, a field no document has), never an empty answer.
Every value, field paths included, is bound as an SQL parameter. The rules are read two ways: `condition_sql`
over the typed, indexed `meta` table (store.py, schema 2: what every writable store has), and `where_sql` over
the JSON column, for a store of an earlier schema opened read-only (tests/test_filtered_search.py: the same)."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..errors import SettingsError

OPERATORS = ("!=", "<=", ">=", "=", "<", ">")
NUMERIC_OPERATORS = ("<", "<=", ">", ">=")
COLUMN_FIELDS = {"id": "id", "title": "title"}  # fields that live in their own column, not in metadata
SCALARS = "('text', 'integer', 'real', 'true', 'false')"


@dataclass(frozen=True)
class Condition:
    field: str
    operator: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Condition:
        """`genre=news`, `year>=2015`, `lang!=en`, `tags=a`, `address.city=Oslo`, `draft=false`."""
        match = re.match(r"^\s*([^=!<>]+?)\s*(!=|<=|>=|=|<|>)\s*(.*?)\s*$", text)
        if not match or not match.group(1):
            raise SettingsError(f"{text!r}: expected FIELD=VALUE (or !=, <, <=, >, >=)", setting="where")
        field, operator, value = match.groups()
        if '"' in field:
            raise SettingsError(f"{text!r}: a field name cannot contain a double quote", setting="where")
        if value[:1] in ("=", "<", ">", "!"):
            meant = f"{field}{operator}{value.lstrip('=<>!')}"
            raise SettingsError(f"{text!r}: an operator twice; did you mean {meant!r}?", setting="where")
        if operator in NUMERIC_OPERATORS and number(value) is None and not is_date(value):
            raise SettingsError(
                f"{text!r}: {operator} compares numbers or dates (2026-01-01), and {value!r} is neither",
                setting="where",
            )
        return cls(field, operator, value)

    @property
    def json_path(self) -> str:
        return "$" + "".join(f'."{part}"' for part in self.field.split("."))


DATE = re.compile(r"^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?$")


def is_date(text: str) -> bool:
    """An ISO 8601 date or date-time without a zone, as `--where` compares dates."""
    return bool(DATE.match(text))


INT64 = (-(1 << 63), (1 << 63) - 1)  # SQLite's integers; a number beyond is compared as a float


def number(text: str) -> int | float | None:
    """The number `text` reads as (None: not a finite one)."""
    try:
        value = int(text)
        return value if INT64[0] <= value <= INT64[1] else float(value)
    except ValueError:
        pass
    try:
        real = float(text)
    except (ValueError, OverflowError):
        return None
    return real if math.isfinite(real) else None


def where_sql(conditions: Iterable[Condition], known_fields: set[str]) -> tuple[str, dict[str, Any]]:
    """A WHERE clause over the `documents` table (empty for no conditions) and its bound parameters.
    `known_fields`: the top-level metadata fields some document has; a condition on another is refused."""
    clauses: list[str] = []
    params: dict[str, Any] = {}
    conditions = list(conditions)
    check_fields(conditions, known_fields)
    for n, condition in enumerate(conditions):
        clauses.append(_clause(condition, n, params))
    return (" WHERE " + " AND ".join(clauses)) if clauses else "", params


def _clause(condition: Condition, n: int, params: dict[str, Any]) -> str:
    value, operator = condition.value, condition.operator
    parsed = number(value)
    if condition.field in COLUMN_FIELDS:
        column = COLUMN_FIELDS[condition.field]
        params[f"value{n}"], params[f"number{n}"] = value, value if parsed is None else parsed
        equal = f"{column} IN (:value{n}, :number{n})"
        return equal if operator == "=" else f"({column} IS NULL OR NOT {equal})"
    params[f"path{n}"] = condition.json_path
    kind = f"json_type(metadata, :path{n})"
    # The values at the path: a scalar is one, a list its members; an object is no value.
    members = (
        f"json_each(metadata, :path{n}) WHERE {kind} IN ({SCALARS[1:-1]}, 'array') AND type IN {SCALARS}"
    )
    if operator in NUMERIC_OPERATORS and parsed is None:  # a date: ISO 8601 text, ordered as text
        params[f"value{n}"] = value.replace(" ", "T")
        return f"EXISTS (SELECT 1 FROM {members} AND type = 'text' AND value {operator} :value{n})"
    if operator in NUMERIC_OPERATORS:
        params[f"value{n}"] = parsed
        return (
            f"EXISTS (SELECT 1 FROM {members} AND type IN ('integer', 'real') AND value {operator} :value{n})"
        )
    if value == "null":
        equal = f"({kind} IS NULL OR {kind} = 'null')"
    elif value in ("true", "false"):
        params[f"value{n}"] = value
        equal = f"EXISTS (SELECT 1 FROM {members} AND (type = :value{n} OR (type = 'text' AND value = :value{n})))"
    else:
        params[f"value{n}"], params[f"number{n}"] = value, value if parsed is None else parsed
        equal = (
            f"EXISTS (SELECT 1 FROM {members} AND type IN ('text', 'integer', 'real') "
            f"AND value IN (:value{n}, :number{n}))"
        )
    return equal if operator == "=" else f"NOT {equal}"


# ---- the same rules over the typed metadata table (store.py, schema 2) --------------------------------------
# `meta` holds a row per non-null value reachable through objects (path: the dotted field, kind: its JSON type,
# num: a number, str: a string) and a row per scalar member of a list (at the list's path), indexed by
# (path, kind), (path, num) and (path, str): a condition reads only the index entries of its own values.


def check_fields(conditions: Iterable[Condition], known_fields: set[str]) -> None:
    """Refuse a condition on a field no document has (`known_fields`: the top-level fields some document has)."""
    for condition in conditions:
        top = condition.field.split(".")[0]
        if condition.field not in COLUMN_FIELDS and top not in known_fields:
            listed = ", ".join(sorted(known_fields)) or "none"
            raise SettingsError(
                f"{condition.field}: no document has a field {top!r} (fields: {listed})", setting="where"
            )


def condition_sql(condition: Condition) -> tuple[str, dict[str, Any], bool]:
    """(a query of pks, its parameters, negate): the documents the condition holds for are those the query
    returns, or with `negate` every other document. The rules are those of `where_sql`, read off the table."""
    value, operator = condition.value, condition.operator
    parsed = number(value)
    if condition.field in COLUMN_FIELDS:
        column = COLUMN_FIELDS[condition.field]
        column_params = {"value": value, "number": value if parsed is None else parsed}
        return (
            f"SELECT pk FROM documents WHERE {column} IN (:value, :number)",
            column_params,
            operator == "!=",
        )
    params: dict[str, Any] = {"path": condition.field}
    at = "SELECT pk FROM meta WHERE path = :path"
    if operator in NUMERIC_OPERATORS and parsed is None:  # a date: ISO 8601 text, ordered as text
        return f"{at} AND str {operator} :value", {**params, "value": value.replace(" ", "T")}, False
    if operator in NUMERIC_OPERATORS:
        return f"{at} AND num {operator} :value", {**params, "value": parsed}, False
    if value == "null":  # null or missing: no non-null value at the path
        return at, params, operator == "="
    params["value"] = value
    if value in ("true", "false"):
        sql = f"{at} AND kind = :value UNION {at} AND str = :value"
    elif parsed is None:
        sql = f"{at} AND str = :value"
    else:
        sql = f"{at} AND str = :value UNION {at} AND num = :number"
        params["number"] = parsed
    return sql, params, operator == "!="


class RowCache:
    """Filters' rows by (generation, condition), the least recently used dropped beyond LIMIT bytes."""

    LIMIT = 256 << 20

    def __init__(self) -> None:
        self.entries: dict[Any, np.ndarray] = {}

    def get(self, key: Any, make: Callable[[], np.ndarray]) -> np.ndarray:
        if key in self.entries:
            self.entries[key] = self.entries.pop(key)  # most recently used last
            return self.entries[key]
        rows = self.entries[key] = make()
        while sum(r.nbytes for r in self.entries.values()) > self.LIMIT and len(self.entries) > 1:
            self.entries.pop(next(iter(self.entries)))
        return rows

    def clear(self) -> None:
        self.entries.clear()
