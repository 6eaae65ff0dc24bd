"""A table as a source, a row a document: CSV and TSV (pyarrow's streaming reader, which infers each column's
type), Parquet (read a row group at a time) and, from Python, a pandas DataFrame or a pyarrow Table. The id,
text and title columns are named as for JSONL (`FieldNames`); every other column is metadata with its type
kept (ints, floats, booleans, lists; timestamps and dates as ISO 8601 text, which `--where` compares as dates).
A vector column (`FieldNames.vector`) is read as one array per row group, never as Python numbers. Each row's
document has one section whose location is its row (1-based, the header not counted) and, in a CSV or TSV file,
its physical lines (the header is line 1; a quoted field may span lines), so a hit points back into the file."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from ...documents import Location, Section
from ...errors import DataError
from .base import Entry, Place, Source
from .fields import FieldNames, json_value, parse_document

BATCH_ROWS = 4096  # rows turned into Python values at once


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

    def batches(self) -> Iterator[Any]:
        try:
            import pyarrow as pa
        except ImportError:
            raise DataError(
                "reading tables needs pyarrow: pip install 'semsearch[files]'", path=self.name
            ) from None
        if self.kind is None:
            table = self.table
            if not isinstance(table, (pa.Table, pa.RecordBatch)):  # a pandas DataFrame
                table = pa.Table.from_pandas(table, preserve_index=False)
            yield from table.to_batches(BATCH_ROWS) if isinstance(table, pa.Table) else [table]
        elif self.kind == "parquet":
            import pyarrow.parquet as pq

            # Arrow's allocator keeps what it freed (a row group's buffers, 80 MB at 10,000 rows of 384
            # floats) for the rest of the process; the system's gives it back before the index is built.
            pa.set_memory_pool(pa.system_memory_pool())
            with pq.ParquetFile(self.table, pre_buffer=False, buffer_size=1 << 20) as reader:
                for group in range(reader.num_row_groups):  # one row group read at a time, in small batches
                    yield from reader.iter_batches(BATCH_ROWS, row_groups=[group])
                    pa.system_memory_pool().release_unused()
        else:
            import pyarrow.csv as csv

            options = csv.ParseOptions(delimiter=self.delimiter, newlines_in_values=True)
            with csv.open_csv(self.table, parse_options=options) as reader:
                yield from reader

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
        import pyarrow as pa

        row, checked = 0, False
        batches, lines = self.batches(), self.row_lines()
        while True:
            try:
                batch = next(batches)
            except StopIteration:
                return
            except (pa.ArrowException, OSError, ValueError) as error:  # unreadable, or a type that changes
                reason = str(error).splitlines()[0] if str(error) else type(error).__name__
                yield (
                    Place(self.name, row=row + 1),
                    DataError(f"cannot read: {reason}", path=self.name, row=row + 1),
                )
                return
            if not checked:
                if (missing := self._missing(batch.schema.names)) is not None:
                    yield Place(self.name), missing
                    return
                checked = True
            try:
                vectors = self._vectors(batch)
            except DataError as error:  # the column, not a row: the rest of the file is not read
                where = {"path": self.name, "row": row + 1, "field": error.field}
                yield Place(self.name, row=row + 1), DataError(error.reason, **where)
                return
            names = [name for name in batch.schema.names if name != self.fields.vector]
            columns = [batch.column(name).to_pylist() for name in names]
            fields = replace(self.fields, vector=None)
            for offset, values in enumerate(zip(*columns)):
                row += 1
                place = Place(self.name, row=row)
                record = {name: json_value(value) for name, value in zip(names, values) if value is not None}
                record = {**self.facts, **record} if self.facts else record
                first, last = next(lines, (None, None))
                try:
                    doc = parse_document(record, fields)
                except DataError as error:
                    yield place, DataError(error.reason, path=self.name, row=row, field=error.field)
                    continue
                if vectors is not None:
                    vector = vectors[offset].copy()  # its own: a view would keep its whole batch alive
                    if not np.isfinite(vector).all():
                        message = "a vector value that is not finite"
                        yield place, DataError(message, path=self.name, row=row, field=self.fields.vector)
                        continue
                    doc = replace(doc, vector=vector)
                location = Location(line_start=first, line_end=last, row=row)
                yield place, replace(doc, sections=(Section(0, len(doc.text), location),))

    def _missing(self, names: list[str]) -> DataError | None:
        """The file-level error of a table without the columns its documents need."""
        ids = [self.fields.id] if self.fields.id else ["id", "_id"]
        needed = [("id", ids), ("text", [self.fields.text])]
        if self.fields.vector:
            needed.append(("vector", [self.fields.vector]))
        for what, options in needed:
            if not set(options) & set(names):
                listed = ", ".join(names) or "none"
                name = " or ".join(options)
                return DataError(f"no {what} column (columns: {listed})", path=self.name, field=name)
        return None

    def _vectors(self, batch: Any) -> np.ndarray | None:
        """The batch's vector column as one float32 array (rows x width), read from Arrow's buffers."""
        if not self.fields.vector:
            return None
        import pyarrow as pa

        column, types = batch.column(self.fields.vector), pa.types
        if not len(column):
            return np.empty((0, 0), dtype=np.float32)
        # The lists' numbers as the child array's slice (not `flatten`, which imports pyarrow.compute: 9 MiB)
        if types.is_fixed_size_list(column.type):
            widths, first = {column.type.list_size}, column.offset * column.type.list_size
            values = column.values.slice(first, len(column) * column.type.list_size)
        elif types.is_list(column.type) or types.is_large_list(column.type):
            offsets = buffer_view(column.offsets, np.int32 if types.is_list(column.type) else np.int64)
            widths = set(np.diff(offsets).tolist())
            values = column.values.slice(int(offsets[0]), int(offsets[-1] - offsets[0]))
        else:
            widths, values = set(), column
        numbers = types.is_integer(values.type) or types.is_floating(values.type)
        if column.null_count or values.null_count or not numbers or len(widths) != 1 or 0 in widths:
            raise DataError(
                "vectors must be lists of numbers of one width", path=self.name, field=self.fields.vector
            )
        if values.type != pa.float32():
            values = values.cast(pa.float32())
        return buffer_view(values, np.float32).reshape(len(column), -1)


def buffer_view(array: Any, dtype: type) -> np.ndarray:
    """A primitive Arrow array without nulls as a NumPy array on its buffer (read-only, no copy). Not
    `to_numpy` or `np.asarray`: pyarrow converts through its pandas shim, whose import alone keeps 37 MiB
    resident for the rest of the ingest."""
    width = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * width)
