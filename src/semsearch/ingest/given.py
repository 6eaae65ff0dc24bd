"""Vectors made elsewhere, as a document brings them: a JSON list of numbers, or (an export's document of several
passages, operations/export.py) a list of such lists with the passages' character spans beside it."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..documents import Location, Section
from ..errors import DataError

NUMBERS = {int, float}  # what JSON numbers parse to (a set of the types seen: 20x faster than a check each)
PASSAGES = "passages"  # an export's field: the character spans of a document's passages, one vector each
SECTIONS = "sections"  # an export's field: a document's sections, [[start, end, location], ...]
LOCATION_KEYS = {"page": int, "line_start": int, "line_end": int, "anchor": str, "headings": list, "row": int}


def parse_vector(value: Any, passages: bool = False, **where: Any) -> np.ndarray:
    """A JSON list of finite numbers as a float32 vector; with `passages`, a list of such lists (an export's
    vectors of a document's passages) as a float32 matrix."""
    if passages and isinstance(value, list) and value and all(isinstance(row, list) for row in value):
        rows = [parse_vector(row, **where) for row in value]
        if len({len(row) for row in rows}) != 1:
            raise DataError("the vectors of a document's passages must have one width", **where)
        return np.stack(rows)
    if not isinstance(value, list) or not value:
        raise DataError("the vector must be a non-empty list of numbers", **where)
    if not set(map(type, value)) <= NUMBERS:  # by type, not isinstance: a bool is no number here
        raise DataError("the vector must hold only numbers", **where)
    vector = np.asarray(value, dtype=np.float32)
    if not np.isfinite(vector).all():
        raise DataError(f"the vector has a value that is not finite at position {first_bad(vector)}", **where)
    return vector


def first_bad(vector: np.ndarray) -> int:
    return int(np.flatnonzero(~np.isfinite(vector))[0])


def passage_spans(value: Any, count: int, length: int, **where: Any) -> tuple[tuple[int, int], ...]:
    """The spans of a document's passages, one per row of its vectors, each inside the text."""
    where = {**where, "field": PASSAGES}
    if not isinstance(value, list) or len(value) != count:
        raise DataError(f"a vector per passage needs {count} passages' [start, end] spans here", **where)
    spans = []
    for span in value:
        ok = isinstance(span, list) and len(span) == 2 and all(type(x) is int for x in span)
        if not ok or not 0 <= span[0] < span[1] <= length:
            raise DataError(f"{span!r} is not a [start, end] span inside the text", **where)
        spans.append((span[0], span[1]))
    return tuple(spans)


def parse_sections(value: Any, length: int, **where: Any) -> tuple[Section, ...]:
    """A document's sections as an export writes them (storage's sections_json): in order, inside the text, each
    location's fields of their types."""
    if not isinstance(value, list):
        raise DataError("sections must be a list of [start, end, location]", **where)
    sections, previous = [], 0
    for item in value:
        ok = isinstance(item, list) and len(item) == 3 and all(type(x) is int for x in item[:2])
        if not ok or not previous <= item[0] <= item[1] <= length or not isinstance(item[2], dict):
            raise DataError(
                f"{item!r} is not a [start, end, location] section in order inside the text", **where
            )
        location = item[2]
        for key, kind in LOCATION_KEYS.items():
            if key in location and type(location[key]) is not kind:
                raise DataError(
                    f"a section's {key} must be a {kind.__name__}, got {location[key]!r}", **where
                )
        if not set(location) <= set(LOCATION_KEYS) or not all(
            isinstance(h, str) for h in location.get("headings", [])
        ):
            raise DataError(f"{location!r} is not a location (keys {', '.join(LOCATION_KEYS)})", **where)
        sections.append(Section(item[0], item[1], Location.from_json(location)))
        previous = item[1]
    return tuple(sections)
