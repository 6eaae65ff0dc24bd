"""The lines of a JSONL corpus as JSON values, each with its line number, and a source that is not a regular file
(standard input, a pipe, a FIFO, a process substitution, a socket) copied once to a temporary file: a corpus is
read twice (checked whole, then ingested), and a pipe read twice gives nothing the second time."""

from __future__ import annotations

import atexit
import gzip
import json
import os
import re
import shutil
import socket
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from ..errors import DataError

# The longest line read: memory stays bounded whatever the file holds (a 50 MB line once took 7 GB to encode).
MAX_LINE_BYTES = 16 << 20
# Deeper JSON than this is refused by line: Python's parser and every walk over a value recurse.
MAX_DEPTH = 100
STDIN = "-"
_FD_PATH = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")


def needs_spooling(path: str | Path) -> bool:
    """Standard input, or a path that exists and is not a regular file (a pipe, FIFO, socket, /dev/fd/N)."""
    if str(path) == STDIN:
        return True
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False  # missing: reading it says so, naming the file
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def spooled(path: str | Path) -> Path:
    """The source copied to a temporary file (removed at exit) named after it (`<stdin>.jsonl` for `-`; a
    `.gz` name stays one, to be read as gzip), read once to its end."""
    directory = Path(tempfile.mkdtemp(prefix="semsearch-spool-"))
    atexit.register(shutil.rmtree, directory, ignore_errors=True)
    name = "<stdin>.jsonl" if str(path) == STDIN else Path(path).name
    target = directory / name
    try:
        with _source(path) as source, open(target, "wb") as out:
            shutil.copyfileobj(source, out, 1 << 20)
    except OSError as error:
        raise DataError(f"cannot read: {error.strerror or error}", path=path) from None
    return target


def _source(path: str | Path) -> BinaryIO:
    if str(path) == STDIN:
        return os.fdopen(os.dup(sys.stdin.fileno()), "rb")
    if match := _FD_PATH.match(str(path)):  # a descriptor this process holds: read it, whatever it is
        return os.fdopen(os.dup(int(match.group(1))), "rb")
    if stat.S_ISSOCK(os.stat(path).st_mode):  # a Unix socket file: connect and read what it sends
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(str(path))
        return connection.makefile("rb")
    return open(path, "rb")


def opened(path: Path) -> gzip.GzipFile | BinaryIO:
    """The file to read lines from: a .gz corpus is read as such, never unpacked to disk."""
    try:
        return (gzip.open if path.suffix == ".gz" else open)(path, "rb")
    except OSError as error:
        raise DataError(f"cannot read: {error.strerror}", path=path) from None


def records(path: Path, name: str | Path | None = None, skip: int = 0) -> Iterator[tuple[int, Any]]:
    """(line number, JSON value or the DataError that line is) for each non-blank line; an error of the file
    itself (unreadable, cut short) is raised. `name`: the file as messages name it. `skip`: the first so many
    non-blank lines are counted but not parsed (what a resumed ingest stored before: ingest/resume.py)."""
    name = path if name is None else name
    with opened(path) as handle:
        for number, raw in _lines(handle, name):
            if isinstance(raw, DataError):
                yield number, raw
                continue
            if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                raw = raw[3:]  # a UTF-8 byte-order mark, as some Windows editors write
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as error:
                yield (
                    number,
                    DataError(
                        f"bytes that are not UTF-8 at column {error.start + 1}", path=name, line=number
                    ),
                )
                continue
            if line.strip():
                if skip:
                    skip -= 1
                    continue
                yield number, _parsed(line.rstrip("\r\n"), name, number)


def _parsed(line: str, name: str | Path, number: int) -> Any:
    try:
        value = json.loads(line)  # stripped: else an error at the line's end reads "column 1"
    except json.JSONDecodeError as error:
        return DataError(f"not valid JSON ({error.msg} at column {error.colno})", path=name, line=number)
    except RecursionError:
        return DataError(f"JSON nested deeper than {MAX_DEPTH} levels", path=name, line=number)
    # a value nests no deeper than the brackets the line opens (most lines: one object, a few lists)
    if line.count("[") + line.count("{") > MAX_DEPTH and depth(value) > MAX_DEPTH:
        return DataError(f"JSON nested deeper than {MAX_DEPTH} levels", path=name, line=number)
    return value


def depth(value: Any) -> int:
    """How deeply lists and objects nest in a JSON value (a scalar: 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, level = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest


def _lines(handle: gzip.GzipFile | BinaryIO, name: str | Path) -> Iterator[tuple[int, bytes | DataError]]:
    """The file's numbered lines, a line over MAX_LINE_BYTES as its DataError (the rest of it read past); a read
    that fails half-way (a disk error, a vanished network file) raises a DataError naming the line it stopped at."""
    number = 0
    while True:
        raw = _read(handle, name, number + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_LINE_BYTES:
            while raw and not raw.endswith(b"\n"):
                raw = _read(handle, name, number)
            yield (
                number,
                DataError(
                    f"a line longer than {MAX_LINE_BYTES >> 20} MiB: split the document into lines under that "
                    "(a long document is cut into passages, but one line must fit in memory to be read)",
                    path=name,
                    line=number,
                ),
            )
            continue
        yield number, raw


def _read(handle: gzip.GzipFile | BinaryIO, name: str | Path, number: int) -> bytes:
    try:
        return handle.readline(MAX_LINE_BYTES + 1)
    except (OSError, EOFError) as error:  # EOFError: a .gz cut short
        reason = getattr(error, "strerror", None) or str(error) or "the file ends early"
        raise DataError(f"cannot read: {reason}", path=name, line=number) from None
