"""Reading documents: a JSONL stream in, validated `Document`s out, with vectors made elsewhere attached
when they come with them (a vector field in each line, or an .npy file whose row i is the i-th document)."""

from __future__ import annotations

import gzip
import math
from collections.abc import Callable, Collection, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..documents import Document
from ..errors import DataError
from .exported import EXPORT_KEY, export_header
from .given import PASSAGES, SECTIONS, first_bad, parse_sections, parse_vector, passage_spans
from .idcheck import RepeatedIds
from .jsonl import MAX_LINE_BYTES, STDIN, needs_spooling, records, spooled
from .reachable import check_id, check_key
from .vectorfiles import _rows, read_query_vector, read_vector_file

__all__ = [
    "MAX_LINE_BYTES",
    "Corpus",
    "Document",
    "FieldNames",
    "parse_document",
    "read_corpus",
    "read_query_vector",
    "read_vector_file",
]

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
        sections = parse_sections(
            record[fields.sections], len(text), path=path, line=line, field=fields.sections
        )
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
        _check_values(value, name, path=path, line=line)
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


def _check_values(value: Any, field: str, **where: Any) -> None:
    """Strings must be valid Unicode (JSON's \\ud800 escapes can make lone surrogates, which no UTF-8 store or
    tokenizer takes) and numbers finite (NaN, Infinity and 1e400 have no place in strict JSON output)."""
    if isinstance(value, str):
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
            _check_values(key, name, **where)
            check_key(key, name, **where)
            _check_values(item, name, **where)
    elif isinstance(value, list):
        for item in value:
            _check_values(item, field, **where)


def read_corpus(
    path: str | Path,
    fields: FieldNames = FieldNames(),
    vectors: str | Path | None = None,
    dim: int | None = None,
) -> Iterator[Document]:
    """The documents of a JSONL file, each with its row of the `vectors` .npy file when one is given (row i
    is the i-th document; blank lines do not count). The counts must match, and the width `dim` if given."""
    for doc in corpus_lines(Path(path), fields, vectors, dim):
        if isinstance(doc, DataError):
            raise doc
        yield doc


def corpus_lines(
    path: Path,
    fields: FieldNames,
    vectors: str | Path | None = None,
    dim: int | None = None,
    name: str | Path | None = None,
) -> Iterator[Document | DataError]:
    """As `read_corpus`, a line that is not a valid document as its DataError (its row of `vectors` passed)."""
    name = path if name is None else name
    if vectors is None:
        yield from read_documents(path, fields, name)
        return
    if fields.vector is not None:
        raise DataError(f"vectors come from {vectors} or from the field {fields.vector!r}, not both")
    array = read_vector_file(vectors)
    if dim is not None and array.shape[1] != dim:
        raise DataError(f"vectors of width {array.shape[1]}, expected {dim}", path=vectors)
    row = 0
    rows = _rows(Path(vectors), array)
    for row, doc in enumerate(read_documents(path, fields, name)):
        if row >= len(array):
            raise DataError(
                f"{len(array)} rows, but {name} has more documents (row i is the i-th document)", path=vectors
            )
        vector = np.asarray(next(rows), dtype=np.float32)
        if isinstance(doc, DataError):
            yield doc
        elif not np.isfinite(vector).all():
            yield DataError(
                f"row {row} (document {doc.id!r}) has a value that is not finite at column {first_bad(vector)}",
                path=vectors,
            )
        else:
            yield replace(doc, vector=vector)
    if row + 1 < len(array):
        raise DataError(
            f"{len(array)} rows, but {name} has {row + 1} documents (row i is the i-th document)",
            path=vectors,
        )


def read_jsonl(path: str | Path, fields: FieldNames = FieldNames()) -> Iterator[Document]:
    """Stream documents from a JSONL file; blank lines are skipped, anything else malformed raises
    DataError naming the file, line and field."""
    for doc in read_documents(Path(path), fields):
        if isinstance(doc, DataError):
            raise doc
        yield doc


def read_documents(
    path: Path, fields: FieldNames, name: str | Path | None = None
) -> Iterator[Document | DataError]:
    """Each non-blank line's Document, or the DataError that line is (`name`: the file as messages name it)."""
    name = path if name is None else name
    for number, record in records(path, name):
        if isinstance(record, DataError):
            yield record
            continue
        if number == 1 and isinstance(record, dict) and EXPORT_KEY in record:
            continue  # an export's header (exported.py reads it)
        try:
            yield parse_document(record, fields, path=name, line=number)
        except DataError as error:
            yield error


@dataclass(frozen=True)
class CorpusSummary:
    """What a full read of a corpus found: how many documents, the width of their vectors (None: none)."""

    count: int
    vector_width: int | None = None


def validate_documents(
    documents: Sequence[Document] | Callable[[], Iterable[Document]],
    *,
    path: str | Path | None = None,
    dim: int | None = None,
    vector_field: str = "vector",
    lines: Path | None = None,
    skipped: Collection[int] = (),
) -> CorpusSummary:
    """Read the documents (a sequence, or what streams them, read again only to confirm a repeated id) for what
    one record cannot show alone: repeated ids, no documents, vectors made elsewhere of differing widths (`dim`:
    the width they must have, if known; `vector_field`: where they came from; `lines`: the file holding them,
    when `path` is only its name; `skipped`: its lines left out, which hold no document)."""
    read, ids, count = (documents if callable(documents) else lambda: documents), RepeatedIds(), 0
    for count, doc in enumerate(read(), start=1):
        ids.add(doc.id)
        if doc.vector is not None:
            width = doc.vector.shape[-1]
            dim = dim or width
            if width != dim:
                message = f"a vector of width {width}, expected {dim}"
                raise _error_at(path, count, message, vector_field, lines, skipped)
    if count == 0:
        raise DataError("no documents", path=path)
    if repeat := ids.first_repeat(lambda: (doc.id for doc in read())):
        again, first, doc_id = repeat
        where = f"line {_line_of(lines or path, first, skipped)}" if path is not None else f"document {first}"
        raise _error_at(path, again, f"id {doc_id!r} appears twice (first at {where})", "id", lines, skipped)
    return CorpusSummary(count, dim)


class Corpus:
    """A JSONL file to ingest (with its vectors made elsewhere, if any): read once in full by `check`, which
    validates every line before anything is written, then streamed by `documents`. A source that is not a
    regular file (`-`, a pipe, a FIFO, a socket) is copied to a temporary file first (jsonl.spooled), so both
    reads see every line. `skip_invalid`: a line that is not a valid document is left out and listed in
    `refused` (the whole file is refused otherwise)."""

    STDIN = STDIN

    def __init__(
        self,
        path: str | Path,
        fields: FieldNames = FieldNames(),
        vectors: str | Path | None = None,
        skip_invalid: bool = False,
    ):
        self.name = "<stdin>" if str(path) == STDIN else Path(path)  # as messages name it
        self.path = spooled(path) if needs_spooling(path) else Path(path)
        if str(path) == STDIN:
            self.name = self.path  # `<stdin>.jsonl`, as before
        # An export's header: the settings of the index it came from, and whether its lines hold vectors.
        self.export = export_header(self.path)
        if self.export and self.export.get("vectors") and fields.vector is None and vectors is None:
            fields = replace(fields, vector="vector")
        if self.export:
            fields = replace(fields, sections=SECTIONS)
        self.fields = fields
        self.vectors = None if vectors is None else Path(vectors)
        self.skip_invalid = skip_invalid
        self.refused: list[DataError] = []
        self._summary: CorpusSummary | None = None

    def documents(self) -> Iterator[Document]:
        for doc in corpus_lines(self.path, self.fields, self.vectors, name=self.name):
            if isinstance(doc, DataError):
                if not self.skip_invalid:
                    raise doc
                continue
            yield doc

    def check(self) -> CorpusSummary:
        """Validate the whole file (once; later calls return the same summary). Raises DataError naming the
        file, line and field of the first problem (with `skip_invalid`, of a problem no line alone shows)."""
        if self._summary is None:
            self.refused, passes, skipped = [], 0, set()

            def read() -> Iterator[Document]:  # the first pass lists the lines refused
                nonlocal passes
                passes += 1
                for doc in corpus_lines(self.path, self.fields, self.vectors, name=self.name):
                    if isinstance(doc, DataError):
                        if not self.skip_invalid:
                            raise doc
                        if passes == 1:
                            self.refused.append(doc)
                            skipped.add(doc.line)
                        continue
                    yield doc

            field = self.fields.vector or "vector"
            self._summary = validate_documents(
                read, path=self.name, vector_field=field, lines=self.path, skipped=skipped
            )
        return self._summary


def _error_at(
    path: str | Path | None,
    ordinal: int,
    message: str,
    field: str,
    lines: Path | None = None,
    skipped: Collection[int] = (),
) -> DataError:
    """An error about the ordinal-th document, naming its file line when it came from a file (`lines`: the file
    to count in, when `path` is only its name)."""
    line = None if path is None else _line_of(lines or path, ordinal, skipped)
    return DataError(message, path=path, line=line, field=field)


def _line_of(path: str | Path, ordinal: int, skipped: Collection[int] = ()) -> int:
    """The file line of the ordinal-th document: non-blank lines not `skipped` (only called on the error path)."""
    seen = 0
    with (gzip.open if Path(path).suffix == ".gz" else open)(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip() and number not in skipped:
                seen += 1
                if seen == ordinal:
                    return number
    return ordinal
