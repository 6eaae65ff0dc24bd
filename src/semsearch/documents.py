"""Reading documents: a JSONL stream in, validated `Document`s out."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .errors import DataError

RESERVED = ("id", "_id", "text", "title", "metadata")


@dataclass(frozen=True)
class FieldNames:
    """Which JSON fields hold the id, text and title; `id=None` accepts `id` or BEIR's `_id`."""

    id: str | None = None
    text: str = "text"
    title: str = "title"


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def embedding_text(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text

    @property
    def content_hash(self) -> str:
        payload = json.dumps([self.title, self.text, self.metadata], sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode()).hexdigest()[:32]


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
    taken = {id_key, fields.text, fields.title, "metadata", *id_keys}
    metadata = {**nested, **{key: value for key, value in record.items() if key not in taken}}
    return Document(id=str(doc_id), text=text, title=title or None, metadata=metadata)


def read_jsonl(path: str | Path, fields: FieldNames = FieldNames()) -> Iterator[Document]:
    """Stream documents from a JSONL file; blank lines are skipped, anything else malformed raises
    DataError naming the file, line and field."""
    path = Path(path)
    try:
        handle = open(path, "rb")  # noqa: SIM115 (kept open across the generator)
    except OSError as error:
        raise DataError(f"cannot read: {error.strerror}", path=path) from None
    with handle:
        for number, raw in enumerate(_lines(handle, path), start=1):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(
                    f"bytes that are not UTF-8 at column {error.start + 1}", path=path, line=number
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise DataError(
                    f"not valid JSON ({error.msg} at column {error.colno})", path=path, line=number
                ) from None
            yield parse_document(record, fields, path=path, line=number)


def _lines(handle, path: Path) -> Iterator[bytes]:
    """The file's lines; a read that fails half-way (a disk error, a vanished network file) is a DataError
    naming the line it stopped at."""
    number = 0
    while True:
        try:
            raw = handle.readline()
        except OSError as error:
            raise DataError(f"cannot read: {error.strerror}", path=path, line=number + 1) from None
        if not raw:
            return
        number += 1
        yield raw


def validate_documents(documents: Iterable[Document], *, path: str | Path | None = None) -> int:
    """Consume a document stream, checking what one record cannot show alone (duplicate ids, an empty
    corpus). Returns the number of documents."""
    seen: dict[str, int] = {}
    count = 0
    for count, doc in enumerate(documents, start=1):
        if doc.id in seen:
            raise DataError(
                f"id {doc.id!r} appears twice (first as document {seen[doc.id]})",
                path=path,
                line=None if path is None else _line_of(path, count),
                field="id",
            )
        seen[doc.id] = count
    if count == 0:
        raise DataError("no documents", path=path)
    return count


def _line_of(path: str | Path, ordinal: int) -> int:
    """The file line of the ordinal-th non-blank line (only called on the error path)."""
    seen = 0
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                seen += 1
                if seen == ordinal:
                    return number
    return ordinal
