"""A table as a source, a row a document: CSV and TSV (pyarrow's streaming reader, which infers each column's
type), Parquet (read a row group at a time) and, from Python, a pandas DataFrame or a pyarrow Table. The id,
text and title columns are named as for JSONL (`FieldNames`); every other column is metadata with its type
kept (ints, floats, booleans, lists; timestamps and dates as ISO 8601 text, which `--where` compares as dates).
A vector column (`FieldNames.vector`) is read as one array per batch, never as Python numbers. A file is read
by a child process (tablereader.py) that sends the rows: the ingest's process never loads pyarrow. Each row's
document has one section whose location is its row (1-based, the header not counted) and, in a CSV or TSV file,
its physical lines (the header is line 1; a quoted field may span lines), so a hit points back into the file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...documents import RowSections
from ...errors import DataError
from . import tablerows
from .base import Entry, Place, Source
from .fields import FieldNames, parse_document


class TableSource(Source):
    """`table`: a path (with its `kind`: csv, tsv, parquet) or an in-memory pandas DataFrame / pyarrow Table.
    `found`: met in a directory's walk, so each row's metadata names the file (`path`, `type`), as a document
    file's does, unless the table has columns of those names."""

    def __init__(
        self, table: Any, fields: FieldNames = FieldNames(), kind: str | None = None, found: bool = False
    ):
        in_memory = not isinstance(table, (str, Path))
        super().__init__("<table>" if in_memory else Path(table))
        self.table, self.kind, self.fields = table, kind, fields
        self.facts = {"path": Path(table).as_posix(), "type": kind} if found and not in_memory else {}
        if not in_memory:
            self.path = Path(table)

    @property
    def delimiter(self) -> str:
        return "\t" if self.kind == "tsv" else ","

    def row_lines(self) -> Iterator[tuple[int, int]]:
        """Each data row's first and last physical line in a CSV or TSV file, as Python's csv module reads it
        (1-based; the header is line 1; an empty line is no row, as for pyarrow's reader); none for others."""
        if self.kind not in ("csv", "tsv"):
            return
        import csv

        with open(self.table, encoding="utf-8", errors="replace", newline="") as handle:
            reader, end, header = csv.reader(handle, delimiter=self.delimiter), 0, True
            for record in reader:
                start, end = end + 1, reader.line_num
                if record and not header:
                    yield start, end
                header = header and not record

    def entries(self) -> Iterator[Entry]:
        row, lines = 0, self.row_lines()
        fields = replace(self.fields, vector=None)
        for message in self.messages():
            if message[0] == "error":
                _, reason, field, at_row = message
                where = {"path": self.name, "row": row + 1 if at_row else None, "field": field}
                yield Place(self.name, row=where["row"]), DataError(reason, **where)
                return
            _, names, rows = message
            for values, vector in rows:
                row += 1
                place = Place(self.name, row=row)
                record = {name: value for name, value in zip(names, values) if value is not None}
                record = {**self.facts, **record} if self.facts else record
                first, last = next(lines, (None, None))
                try:
                    doc = parse_document(record, fields)
                except DataError as error:
                    yield place, DataError(error.reason, path=self.name, row=row, field=error.field)
                    continue
                if vector is not None and not np.isfinite(vector).all():
                    reason = "a vector value that is not finite"
                    yield place, DataError(reason, path=self.name, row=row, field=self.fields.vector)
                    continue
                yield place, replace(doc, vector=vector, sections=RowSections(doc.text, row, first, last))

    def messages(self) -> Iterator[tablerows.Message]:
        """The table's batches (tablerows): a file's from a child process, an in-memory table's from here."""
        if self.kind is None:
            return map(tablerows.row_by_row, tablerows.messages(self.table, None, self.fields))
        from .tablereader import read_in_child

        return read_in_child(self.path, self.kind, self.fields)
