"""A table's rows as Python values, where pyarrow is loaded: for a CSV, TSV or Parquet file in a child process
(tablereader.py) that streams them to the ingest through a pipe, so the ingest process never maps pyarrow (30
MiB of library pages and its allocator's data, for as long as it runs); for an in-memory table in the caller's
own process. The file is read a batch at a time (Parquet a row group at a
time); each batch is a message:

- `("rows", names, columns, vectors)`: the columns' values (JSON's kinds, `fields.json_value`) without the
  vector column, which comes as one float32 array (rows x width) or None; read back (`read_message`, or
  `row_by_row` for an in-memory table) as `("rows", names, rows)`: each row's values and its vector (or None),
  an iterator to read to its end before the next message;
- `("error", reason, field, at_row)`: the file's reading ends here; `at_row`: the error is at the next row
  (unreadable from there, a vector column refused), else the whole file's (a column missing);
- `("end",)`: every row was sent (the child's last message).

On the pipe a message is frames of JSON, each its length first (8 bytes): its head, then for `rows` a frame a
row (its values in the names' order), each followed by its vector's float32 bytes. No pickles; the pipe's buffer
bounds what the child reads ahead of the ingest. The ingest reads a row at a time, as it reads JSONL lines
(`read_message` gives a batch's rows as they are read): a batch's values held at once as Python objects (4,096
rows) raised the high-water mark of Python's small-object arenas, which a few long-lived objects then kept
(3 MiB more than JSONL's at 300,000 rows), and a batch's values as one JSON left 1 MiB of holes in the heap
(benchmarks/results/files.md)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from itertools import repeat
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
    if message[0] == "rows":
        _, names, columns, vectors = message
        rows = list(zip(*columns)) if columns else []
        head = {"names": names, "rows": len(rows), "width": None if vectors is None else vectors.shape[1]}
    elif message[0] == "error":
        head, rows = dict(zip(("error", "field", "at_row"), message[1:])), []
    else:
        head, rows = {"end": True}, []
    _write_frame(out, head)
    # a row a frame, its vector after it: the ingest reads a row at a time
    for offset, row in enumerate(rows):
        _write_frame(out, row)
        if vectors is not None:
            out.write(np.ascontiguousarray(vectors[offset], dtype=np.float32).tobytes())
    out.flush()


def read_message(stream: IO[bytes]) -> Message | None:
    """The next message on the pipe, or None where it ends before a whole head. A `rows` message's rows are
    read from the pipe as they are taken; where the pipe ends within them they stop, and the next read is None."""
    head = _read_frame(stream)
    if head is None:
        return None
    if "end" in head:
        return ("end",)
    if "error" in head:
        return "error", head["error"], head["field"], head["at_row"]
    return "rows", head["names"], _rows(stream, head["rows"], head["width"])


def row_by_row(message: Message) -> Message:
    """A `rows` message as `messages` makes it, as `read_message` gives it (other messages as they are)."""
    if message[0] != "rows":
        return message
    _, names, columns, vectors = message
    # a vector's own copy: a view would keep its whole batch alive
    kept = repeat(None) if vectors is None else (vector.copy() for vector in vectors)
    return "rows", names, zip(zip(*columns), kept)


def _rows(stream: IO[bytes], count: int, width: int | None) -> Iterator[tuple[list, np.ndarray | None]]:
    size = 0 if width is None else width * 4
    for _ in range(count):
        if (row := _read_frame(stream)) is None:
            return
        vector = None
        if width is not None:
            if len(raw := stream.read(size)) < size:
                return
            vector = np.frombuffer(raw, np.float32).copy()
        yield row, vector


def _write_frame(out: IO[bytes], value: Any) -> None:
    data = json.dumps(value, ensure_ascii=False).encode()
    out.write(len(data).to_bytes(LENGTH_BYTES, "little"))
    out.write(data)


def _read_frame(stream: IO[bytes]) -> Any:
    """The next frame's value, or None where the pipe ends before its end (its writer stopped)."""
    length = stream.read(LENGTH_BYTES)
    if len(length) < LENGTH_BYTES:
        return None
    size = int.from_bytes(length, "little")
    data = stream.read(size)
    return json.loads(data) if size and len(data) == size else None


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
