"""Reading documents: a JSONL stream in, validated `Document`s out, with vectors made elsewhere attached
when they come with them (a vector field in each line, or an .npy file whose row i is the i-th document)."""

from __future__ import annotations

import atexit
import gzip
import hashlib
import json
import math
import shutil
import sys
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DataError
from .exported import EXPORT_KEY, export_header
from .given import PASSAGES, first_bad, parse_vector, passage_spans
from .idcheck import RepeatedIds

RESERVED = ("id", "_id", "text", "title", "metadata")
# The longest line read: memory stays bounded whatever the file holds (a 50 MB line once took 7 GB to encode).
# The encoder reads only a document's first max_length word pieces, so nothing searchable is lost below this.
MAX_LINE_BYTES = 16 << 20


@dataclass(frozen=True)
class FieldNames:
    """Which JSON fields hold the id, text and title; `id=None` accepts `id` or BEIR's `_id`."""

    id: str | None = None
    text: str = "text"
    title: str = "title"
    vector: str | None = None  # a field holding the document's precomputed vector (a list of numbers)


@dataclass(frozen=True)
class Document:
    id: str
    text: str
    title: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    vector: np.ndarray | None = field(default=None, compare=False, repr=False)  # made elsewhere, float32
    # With a vector per passage (a 2-D `vector`, from an export): their character spans in the text.
    passages: tuple[tuple[int, int], ...] | None = field(default=None, compare=False, repr=False)

    @property
    def embedding_text(self) -> str:
        return f"{self.title} {self.text}" if self.title else self.text

    @property
    def content_hash(self) -> str:
        payload = json.dumps([self.title, self.text, self.metadata], sort_keys=True, ensure_ascii=False)
        digest = hashlib.sha256(payload.encode())
        if self.vector is not None:  # a new vector for the same text is a change too
            digest.update(np.ascontiguousarray(self.vector, dtype="<f4").tobytes())
        return digest.hexdigest()[:32]


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
    taken = {id_key, fields.text, fields.title, "metadata", fields.vector, *id_keys}
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
    return Document(
        id=str(doc_id), text=text, title=title or None, metadata=metadata, vector=vector, passages=passages
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
            _check_values(item, name, **where)
    elif isinstance(value, list):
        for item in value:
            _check_values(item, field, **where)


def read_vector_file(path: str | Path) -> np.ndarray:
    """An .npy file of vectors, one row per document, memory-mapped (never unpickled)."""
    path = Path(path)
    try:
        array = np.load(path, mmap_mode="r", allow_pickle=False)
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except (OSError, ValueError) as error:
        raise DataError(f"not a readable .npy array of numbers ({error})", path=path) from None
    if array.ndim != 2 or array.shape[0] == 0 or array.shape[1] == 0:
        raise DataError(f"expected a 2-D array with one row per document, got shape {array.shape}", path=path)
    if array.dtype.kind not in "fiu":
        raise DataError(f"expected numbers, got dtype {array.dtype}", path=path)
    return array


def read_query_vector(path: str | Path) -> np.ndarray:
    """One query vector from an .npy file (1-D, or 2-D with one row) or a file holding a JSON list."""
    path = Path(path)
    if path.suffix == ".npy":
        try:
            array = np.load(path, allow_pickle=False)
        except FileNotFoundError:
            raise DataError("no such file", path=path) from None
        except (OSError, ValueError) as error:
            raise DataError(f"not a readable .npy array of numbers ({error})", path=path) from None
        if array.ndim == 2 and len(array) == 1:
            array = array[0]
        if array.ndim != 1 or array.dtype.kind not in "fiu":
            raise DataError(
                f"expected one vector of numbers, got shape {array.shape}, {array.dtype}", path=path
            )
        return parse_vector(array.tolist(), path=path)
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise DataError("no such file", path=path) from None
    except (OSError, UnicodeDecodeError, ValueError) as error:
        raise DataError(f"expected an .npy file or a JSON list of numbers ({error})", path=path) from None
    return parse_vector(value, path=path)


def read_corpus(
    path: str | Path,
    fields: FieldNames = FieldNames(),
    vectors: str | Path | None = None,
    dim: int | None = None,
) -> Iterator[Document]:
    """The documents of a JSONL file, each with its row of the `vectors` .npy file when one is given (row i
    is the i-th document; blank lines do not count). The counts must match, and the width `dim` if given."""
    if vectors is None:
        yield from read_jsonl(path, fields)
        return
    if fields.vector is not None:
        raise DataError(f"vectors come from {vectors} or from the field {fields.vector!r}, not both")
    array = read_vector_file(vectors)
    if dim is not None and array.shape[1] != dim:
        raise DataError(f"vectors of width {array.shape[1]}, expected {dim}", path=vectors)
    row = 0
    rows = _rows(Path(vectors), array)
    for row, doc in enumerate(read_jsonl(path, fields)):
        if row >= len(array):
            raise DataError(
                f"{len(array)} rows, but {path} has more documents (row i is the i-th document)", path=vectors
            )
        vector = np.asarray(next(rows), dtype=np.float32)
        if not np.isfinite(vector).all():
            raise DataError(
                f"row {row} (document {doc.id!r}) has a value that is not finite at column {first_bad(vector)}",
                path=vectors,
            )
        yield replace(doc, vector=vector)
    if row + 1 < len(array):
        raise DataError(
            f"{len(array)} rows, but {path} has {row + 1} documents (row i is the i-th document)",
            path=vectors,
        )


def _rows(path: Path, array: np.ndarray, block: int = 4096) -> Iterator[np.ndarray]:
    """The rows of an .npy file in order, read a block at a time: a memory map read to the end would hold
    the whole file in this process's RSS (1.5 GB for a million 384-dim vectors)."""
    if not array.flags.c_contiguous or not isinstance(array, np.memmap):
        yield from array  # Fortran order: rows are not contiguous on disk; read through the map
        return
    width = array.shape[1]
    with open(path, "rb") as handle:
        handle.seek(array.offset)
        for begin in range(0, len(array), block):
            count = min(block, len(array) - begin)
            yield from np.fromfile(handle, dtype=array.dtype, count=count * width).reshape(count, width)


def read_jsonl(path: str | Path, fields: FieldNames = FieldNames()) -> Iterator[Document]:
    """Stream documents from a JSONL file; blank lines are skipped, anything else malformed raises
    DataError naming the file, line and field."""
    path = Path(path)
    opener = (
        gzip.open if path.suffix == ".gz" else open
    )  # a .gz corpus is read as such, never unpacked to disk
    try:
        handle = opener(path, "rb")  # kept open across the generator
    except OSError as error:
        raise DataError(f"cannot read: {error.strerror}", path=path) from None
    with handle:
        for number, raw in enumerate(_lines(handle, path), start=1):
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark, as some Windows editors write
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                raise DataError(
                    f"bytes that are not UTF-8 at column {error.start + 1}", path=path, line=number
                ) from None
            if not line.strip():
                continue
            try:
                record = json.loads(line.rstrip("\r\n"))  # else an error at the line's end reads "column 1"
            except json.JSONDecodeError as error:
                raise DataError(
                    f"not valid JSON ({error.msg} at column {error.colno})", path=path, line=number
                ) from None
            if number == 1 and isinstance(record, dict) and EXPORT_KEY in record:
                continue  # an export's header (exported.py reads it)
            yield parse_document(record, fields, path=path, line=number)


def _lines(handle, path: Path) -> Iterator[bytes]:
    """The file's lines; a read that fails half-way (a disk error, a vanished network file) is a DataError
    naming the line it stopped at."""
    number = 0
    while True:
        try:
            raw = handle.readline(MAX_LINE_BYTES + 1)
        except (OSError, EOFError) as error:  # EOFError: a .gz cut short
            reason = getattr(error, "strerror", None) or str(error) or "the file ends early"
            raise DataError(f"cannot read: {reason}", path=path, line=number + 1) from None
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            raise DataError(
                f"a line longer than {MAX_LINE_BYTES >> 20} MiB: split the document (a long document is "
                "indexed by its first passage only)",
                path=path,
                line=number,
            )
        yield raw


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
) -> CorpusSummary:
    """Read the documents (a sequence, or what streams them, read again only to confirm a repeated id) for what
    one record cannot show alone: repeated ids, no documents, vectors made elsewhere of differing widths (`dim`:
    the width they must have, if known; `vector_field`: where they came from)."""
    read, ids, count = (documents if callable(documents) else lambda: documents), RepeatedIds(), 0
    for count, doc in enumerate(read(), start=1):
        ids.add(doc.id)
        if doc.vector is not None:
            width = doc.vector.shape[-1]
            dim = dim or width
            if width != dim:
                raise _error_at(path, count, f"a vector of width {width}, expected {dim}", vector_field)
    if count == 0:
        raise DataError("no documents", path=path)
    if repeat := ids.first_repeat(lambda: (doc.id for doc in read())):
        again, first, doc_id = repeat
        where = f"line {_line_of(path, first)}" if path is not None else f"document {first}"
        raise _error_at(path, again, f"id {doc_id!r} appears twice (first at {where})", "id")
    return CorpusSummary(count, dim)


class Corpus:
    """A JSONL file to ingest (with its vectors made elsewhere, if any): read once in full by `check`, which
    validates every line before anything is written, then streamed by `documents`."""

    STDIN = "-"

    def __init__(
        self, path: str | Path, fields: FieldNames = FieldNames(), vectors: str | Path | None = None
    ):
        if str(path) == self.STDIN:
            path = _spooled_stdin()
        self.path = Path(path)
        # An export's header: the settings of the index it came from, and whether its lines hold vectors.
        self.export = export_header(self.path)
        if self.export and self.export.get("vectors") and fields.vector is None and vectors is None:
            fields = replace(fields, vector="vector")
        self.fields = fields
        self.vectors = None if vectors is None else Path(vectors)
        self._summary: CorpusSummary | None = None

    def documents(self) -> Iterator[Document]:
        return read_corpus(self.path, self.fields, self.vectors)

    def check(self) -> CorpusSummary:
        """Validate the whole file (once; later calls return the same summary). Raises DataError naming the
        file, line and field of the first problem."""
        if self._summary is None:
            self._summary = validate_documents(
                self.documents, path=self.path, vector_field=self.fields.vector or "vector"
            )
        return self._summary


def _spooled_stdin() -> Path:
    """Standard input copied to a temporary file (removed at exit), so it can be read twice: once to check
    every line before anything is written, once to ingest. Messages name it `<stdin>.jsonl`."""
    directory = Path(tempfile.mkdtemp(prefix="semsearch-stdin-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    target = directory / "<stdin>.jsonl"
    with open(target, "wb") as out:
        shutil.copyfileobj(sys.stdin.buffer, out, 1 << 20)
    return target


def _error_at(path: str | Path | None, ordinal: int, message: str, field: str) -> DataError:
    """An error about the ordinal-th document, naming its file line when it came from a file."""
    return DataError(message, path=path, line=None if path is None else _line_of(path, ordinal), field=field)


def _line_of(path: str | Path, ordinal: int) -> int:
    """The file line of the ordinal-th non-blank line (only called on the error path)."""
    seen = 0
    with (gzip.open if Path(path).suffix == ".gz" else open)(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                seen += 1
                if seen == ordinal:
                    return number
    return ordinal
