"""A record (a JSON object, a table's row) to a Document: which fields hold the id, text, title and vector,
every other field metadata, each value checked for what no store or tokenizer takes."""

from __future__ import annotations

import datetime
import decimal
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...documents import Document
from ...errors import DataError
from ..given import PASSAGES, parse_sections, parse_vector, passage_spans
from ..reachable import check_id, check_key

RESERVED = ("id", "_id", "text", "title", "metadata")


@dataclass(frozen=True)
class FieldNames:
    """Which JSON fields hold the id, text and title; `id=None` accepts `id` or BEIR's `_id`."""

    id: str | None = None
    text: str = "text"
    title: str = "title"
    vector: str | None = None  # a field holding the document's precomputed vector (a list of numbers)
    sections: str | None = None  # a field holding the document's sections (an export's, given.SECTIONS)


def parse_document(
    record: Any, fields: FieldNames = FieldNames(), *, path: str | Path | None = None, line: int | None = None
) -> Document:
    """One JSON object to a Document; every field but id, text and title is metadata (a nested
    `metadata` object is flattened into it, top-level fields winning)."""
    if not isinstance(record, dict):
        raise DataError(f"expected a JSON object, got {type(record).__name__}", path=path, line=line)
    id_keys = [fields.id] if fields.id else ["id", "_id"]
    id_key = next((key for key in id_keys if key in record), None)
    if id_key is None:
        raise DataError("no id", path=path, line=line, field=" or ".join(id_keys))
    doc_id = record[id_key]
    if isinstance(doc_id, bool) or not isinstance(doc_id, (str, int)) or str(doc_id).strip() == "":
        raise DataError(
            f"the id must be a non-empty string or integer, got {doc_id!r}",
            path=path,
            line=line,
            field=id_key,
        )
    if fields.text not in record:
        raise DataError("no text", path=path, line=line, field=fields.text)
    text = record[fields.text]
    if not isinstance(text, str):
        raise DataError(
            f"the text must be a string, got {type(text).__name__}", path=path, line=line, field=fields.text
        )
    if not text.strip():
        raise DataError("empty text", path=path, line=line, field=fields.text)
    title = record.get(fields.title)
    if title is not None and not isinstance(title, str):
        raise DataError(
            f"the title must be a string, got {type(title).__name__}",
            path=path,
            line=line,
            field=fields.title,
        )
    nested = record.get("metadata", {})
    if not isinstance(nested, dict):
        raise DataError("metadata must be a JSON object", path=path, line=line, field="metadata")
    vector = None
    if fields.vector is not None:
        if fields.vector not in record:
            raise DataError("no vector", path=path, line=line, field=fields.vector)
        vector = parse_vector(record[fields.vector], True, path=path, line=line, field=fields.vector)
    passages = None
    if vector is not None and vector.ndim == 2:
        passages = passage_spans(record.get(PASSAGES), len(vector), len(text), path=path, line=line)
    sections = None
    if fields.sections is not None and fields.sections in record:
        where = dict(path=path, line=line, field=fields.sections)
        sections = parse_sections(record[fields.sections], len(text), **where)
    taken = {id_key, fields.text, fields.title, "metadata", fields.vector, fields.sections, *id_keys}
    if passages is not None:
        taken.add(PASSAGES)
    top = {key: value for key, value in record.items() if key not in taken}
    both = sorted(set(top) & set(nested))
    if both:
        raise DataError(
            f"{both[0]!r} is both a top-level field and a field of `metadata`: keep one", path=path, line=line
        )
    metadata = {**nested, **top}
    for name, value in (("id", doc_id), (fields.text, text), (fields.title, title), ("metadata", metadata)):
        check_values(value, name, path=path, line=line)
    check_id(str(doc_id), id_key, path=path, line=line)
    return Document(
        id=str(doc_id),
        text=text,
        title=title or None,
        metadata=metadata,
        vector=vector,
        passages=passages,
        sections=sections,
    )


def check_values(value: Any, field: str, **where: Any) -> None:
    """Strings must be valid Unicode (JSON's \\ud800 escapes can make lone surrogates, which no UTF-8 store or
    tokenizer takes) and numbers finite (NaN, Infinity and 1e400 have no place in strict JSON output)."""
    if isinstance(value, str):
        if value.isascii():  # a lone surrogate is not ASCII
            return
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as error:
            raise DataError(
                f"a lone surrogate ({value[error.start]!r}) at character {error.start + 1}: not valid Unicode",
                field=field,
                **where,
            ) from None
    elif isinstance(value, float) and not math.isfinite(value):
        raise DataError(
            f"the number {value} is not finite (JSON has no NaN or Infinity)", field=field, **where
        )
    elif isinstance(value, dict):
        for key, item in value.items():
            name = key if field == "metadata" else f"{field}.{key}"
            check_values(key, name, **where)
            check_key(key, name, **where)
            check_values(item, name, **where)
    elif isinstance(value, list):
        for item in value:
            check_values(item, field, **where)


def json_value(value: Any) -> Any:
    """A value from YAML front matter or a table's cell as JSON has it: timestamps and dates as ISO 8601 text
    (UTC, without a zone: `--where` compares them as dates), durations as seconds, decimals as floats, bytes as
    text, mappings and lists member by member (null members of a mapping left out), anything else as text."""
    if isinstance(value, datetime.datetime):
        if value.tzinfo is not None:
            value = value.astimezone(datetime.timezone.utc).replace(tzinfo=None)
        return value.isoformat(timespec="seconds")
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, decimal.Decimal):
        return float(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    if isinstance(value, dict):
        return {str(key): json_value(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple, set)):
        return [json_value(item) for item in value]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)
