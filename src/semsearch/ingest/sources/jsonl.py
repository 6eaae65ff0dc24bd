"""A JSONL corpus as a source: each non-blank line's Document or the DataError it is, with the row of an .npy
file of vectors made elsewhere attached when one is given (row i is the i-th document). Standard input, pipes
and other files that cannot be read twice are spooled to a temporary file first (ingest/jsonl.py)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np

from ...errors import DataError
from ..exported import EXPORT_KEY, export_header
from ..given import SECTIONS, first_bad
from ..jsonl import STDIN, needs_spooling, records, spooled
from ..vectorfiles import _rows, read_vector_file
from .base import Entry, Place, Source, file_identity
from .fields import FieldNames, parse_document


class JsonlSource(Source):
    def __init__(
        self, path: str | Path, fields: FieldNames = FieldNames(), vectors: str | Path | None = None
    ):
        super().__init__("<stdin>" if str(path) == STDIN else Path(path))
        self.spooled = needs_spooling(path)  # a pipe or standard input, read into a temporary file
        self.path = spooled(path) if self.spooled else Path(path)
        if str(path) == STDIN:
            self.name = self.path  # `<stdin>.jsonl`, as before
        # An export's header: the settings of the index it came from, and whether its lines hold vectors.
        self.export = export_header(self.path)
        if self.export and self.export.get("vectors") and fields.vector is None and vectors is None:
            fields = replace(fields, vector="vector")
        if self.export:  # a document read from a file: its sections, placed as the index placed them
            fields = replace(fields, sections=SECTIONS)
        if vectors is not None and fields.vector is not None:
            raise DataError(f"vectors come from {vectors} or from the field {fields.vector!r}, not both")
        self.fields = fields
        self.vectors = None if vectors is None else Path(vectors)

    def identity(self) -> list | None:
        if self.spooled:
            return None
        return [file_identity(path) for path in [self.path, *([self.vectors] if self.vectors else [])]]

    def entries(self, skip: int = 0) -> Iterator[Entry]:
        lines = self._lines(skip)
        if self.vectors is None:
            yield from lines
            return
        array = read_vector_file(self.vectors)
        rows, row = _rows(self.vectors, array, start=skip), skip
        for row, (place, doc) in enumerate(lines, start=skip):
            if row >= len(array):
                raise DataError(
                    f"{len(array)} rows, but {self.name} has more documents (row i is the i-th document)",
                    path=self.vectors,
                )
            vector = np.asarray(next(rows), dtype=np.float32)
            if isinstance(doc, DataError):
                yield place, doc
            elif not np.isfinite(vector).all():
                message = f"row {row} (document {doc.id!r}) has a value that is not finite at column {first_bad(vector)}"
                yield place, DataError(message, path=self.vectors)
            else:
                yield place, replace(doc, vector=vector)
        if row + 1 < len(array):
            raise DataError(
                f"{len(array)} rows, but {self.name} has {row + 1} documents (row i is the i-th document)",
                path=self.vectors,
            )

    def _lines(self, skip: int = 0) -> Iterator[Entry]:
        header = 1 if skip and self.export else 0  # an export's header is no entry, but a line
        for number, record in records(self.path, self.name, skip + header):
            place = Place(self.name, number)
            if isinstance(record, DataError):
                yield place, record
                continue
            if number == 1 and isinstance(record, dict) and EXPORT_KEY in record:
                continue  # an export's header (exported.py reads it)
            try:
                yield place, parse_document(record, self.fields, path=self.name, line=number)
            except DataError as error:
                yield place, error
