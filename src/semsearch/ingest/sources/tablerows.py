"""A table's rows as Python values, where pyarrow is loaded: for a CSV, TSV or Parquet file in a child process
(tablereader.py) that streams them to the ingest through a pipe, so the ingest process never maps pyarrow (30
MiB of library pages and its allocator's data, for as long as it runs); for an in-memory table in the caller's
own process. The file is read a batch at a time (Parquet a row group at a
time); each batch is a message:

- `("rows", names, columns, vectors)`: the columns' values (JSON's kinds, `fields.json_value`) without the
  vector column, which comes as one float32 array (rows x width) or None;
- `("error", reason, field, at_row)`: the file's reading ends here; `at_row`: the error is at the next row
  (unreadable from there, a vector column refused), else the whole file's (a column missing);
- `("end",)`: every row was sent (the child's last message).

On the pipe a message is frames of JSON, each its length first (8 bytes): its head, then for `rows` a frame a
row (its values in the names' order), then the vectors' float32 bytes. No pickles; the pipe's buffer bounds
what the child reads ahead of the ingest; and the ingest reads and decodes a row's few hundred bytes at a time,
as it reads JSONL lines: a batch's values as one JSON (about 400 KB at 4,096 rows, a block of the heap and its
decoded text another) left 1 MiB more of the heap free but held after storing 50,000 rows than JSONL's
(benchmarks/results/files.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import IO, Any

import numpy as np

from ...errors import DataError
from .fields import FieldNames, json_value

BATCH_ROWS = 4096  # rows turned into Python values at once
LENGTH_BYTES = 8
Message = tuple


def messages(table: Any, kind: str | None, fields: FieldNames) -> Iterator[Message]:
    """The table's batches as messages (the module's docstring), ending at its first error."""
    try:
        import pyarrow as pa
    except ImportError:
        yield "error", "reading tables needs pyarrow: pip install 'semsearch[files]'", None, False
        return
    batches, checked = _batches(table, kind), False
    while True:
        try:
            batch = next(batches)
        except StopIteration:
            return
        except (pa.ArrowException, OSError, ValueError) as error:  # unreadable, or a type that changes
            reason = str(error).splitlines()[0] if str(error) else type(error).__name__
            yield "error", f"cannot read: {reason}", None, True
            return
        if not checked:
            if (missing := _missing(batch.schema.names, fields)) is not None:
                yield "error", missing.reason, missing.field, False
                return
            checked = True
        try:
            vectors = _vectors(batch, fields.vector)
        except DataError as error:  # the column, not a row: the rest of the file is not read
            yield "error", error.reason, error.field, True
            return
        names = [name for name in batch.schema.names if name != fields.vector]
        columns = [[json_value(value) for value in batch.column(name).to_pylist()] for name in names]
        yield "rows", names, columns, vectors


def write_message(out: IO[bytes], message: Message) -> None:
    vectors, rows = None, []
    if message[0] == "rows":
        _, names, columns, vectors = message
        rows = list(zip(*columns))
        head = {"names": names, "rows": len(rows), "shape": None if vectors is None else vectors.shape}
    elif message[0] == "error":
        head = dict(zip(("error", "field", "at_row"), message[1:]))
    else:
        head = {"end": True}
    _write_frame(out, head)
    for row in rows:  # a row a frame: the ingest reads small strings, never a batch's 400 KB at once
        _write_frame(out, row)
    if vectors is not None:
        out.write(np.ascontiguousarray(vectors, dtype=np.float32).tobytes())
    out.flush()


def read_message(stream: IO[bytes]) -> Message | None:
    """The next message on the pipe, or None where it ends before a whole one."""
    head = _read_frame(stream)
    if head is None:
        return None
    if "end" in head:
        return ("end",)
    if "error" in head:
        return "error", head["error"], head["field"], head["at_row"]
    rows = []
    for _ in range(head["rows"]):
        if (row := _read_frame(stream)) is None:
            return None
        rows.append(row)
    vectors = None
    if head["shape"] is not None:
        count, width = head["shape"]
        size = count * width * 4
        if len(raw := stream.read(size)) < size:
            return None
        vectors = np.frombuffer(raw, np.float32).reshape(count, width)
    columns = [list(column) for column in zip(*rows)] or [[] for _ in head["names"]]
    return "rows", head["names"], columns, vectors


def _write_frame(out: IO[bytes], value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    out.write(len(data).to_bytes(LENGTH_BYTES, "little"))
    out.write(data)


def _read_frame(stream: IO[bytes]) -> Any:
    length = stream.read(LENGTH_BYTES)
    data = stream.read(int.from_bytes(length, "little")) if len(length) == LENGTH_BYTES else b""
    return json.loads(data) if data else None


def serve(descriptor: int) -> None:
    """The child's work: for each request on stdin (a JSON line: path, kind, fields), the file's messages
    written to the pipe `descriptor`, the last an error or `("end",)`; until stdin closes."""
    with open(descriptor, "wb") as out:
        for line in sys.stdin:
            request = json.loads(line)
            fields = FieldNames(**request["fields"])
            for message in messages(request["path"], request["kind"], fields):
                write_message(out, message)
                if message[0] == "error":
                    break
            else:
                write_message(out, ("end",))


def _batches(table: Any, kind: str | None) -> Iterator[Any]:
    import pyarrow as pa

    if kind is None:
        if not isinstance(table, (pa.Table, pa.RecordBatch)):  # a pandas DataFrame
            table = pa.Table.from_pandas(table, preserve_index=False)
        yield from table.to_batches(BATCH_ROWS) if isinstance(table, pa.Table) else [table]
    elif kind == "parquet":
        import pyarrow.parquet as pq

        # Arrow's allocator keeps what it freed (a row group's buffers, 80 MB at 10,000 rows of 384 floats)
        # for the rest of the process; the system's gives it back between row groups.
        pa.set_memory_pool(pa.system_memory_pool())
        with pq.ParquetFile(table, pre_buffer=False, buffer_size=1 << 20) as reader:
            for group in range(reader.num_row_groups):  # one row group read at a time, in small batches
                yield from reader.iter_batches(BATCH_ROWS, row_groups=[group])
                pa.system_memory_pool().release_unused()
    else:
        import pyarrow.csv as csv

        delimiter = "\t" if kind == "tsv" else ","
        options = csv.ParseOptions(delimiter=delimiter, newlines_in_values=True)
        with csv.open_csv(table, parse_options=options) as reader:
            yield from reader


def _missing(names: list[str], fields: FieldNames) -> DataError | None:
    """The file-level error of a table without the columns its documents need."""
    ids = [fields.id] if fields.id else ["id", "_id"]
    needed = [("id", ids), ("text", [fields.text])]
    if fields.vector:
        needed.append(("vector", [fields.vector]))
    for what, options in needed:
        if not set(options) & set(names):
            listed = ", ".join(names) or "none"
            return DataError(f"no {what} column (columns: {listed})", field=" or ".join(options))
    return None


def _vectors(batch: Any, name: str | None) -> np.ndarray | None:
    """The batch's vector column as one float32 array (rows x width), read from Arrow's buffers."""
    if not name:
        return None
    import pyarrow as pa

    column, types = batch.column(name), pa.types
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
        raise DataError("vectors must be lists of numbers of one width", field=name)
    if values.type != pa.float32():
        values = values.cast(pa.float32())
    return buffer_view(values, np.float32).reshape(len(column), -1)


def buffer_view(array: Any, dtype: type) -> np.ndarray:
    """A primitive Arrow array without nulls as a NumPy array on its buffer (read-only, no copy). Not
    `to_numpy` or `np.asarray`: pyarrow converts through its pandas shim, whose import alone keeps 37 MiB
    resident for the rest of the process."""
    width = np.dtype(dtype).itemsize
    return np.frombuffer(array.buffers()[1], dtype, len(array), array.offset * width)


if __name__ == "__main__":
    try:
        serve(int(sys.argv[1]))
    except BrokenPipeError:  # the ingest stopped reading (an error further on, a refusal): nothing to say
        sys.stderr.close()
