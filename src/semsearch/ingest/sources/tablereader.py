"""The child process that reads table files (tablerows.py runs in it): started at the first table a process
reads, it answers one file at a time and is kept for the next one while reads come close together (a check
and then the ingest read a file twice; a folder may hold several tables), then ends, so an ingest's later
peak (its index built) has no reader beside it. The ingest process never loads pyarrow."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from dataclasses import asdict
from pathlib import Path

from .fields import FieldNames
from .tablerows import Message, read_message

KEPT_SECONDS = 2.0  # an idle reader is kept this long for the next file (its start: Python, NumPy, pyarrow)


class TableReader:
    """One child process reading table files in turn: a request is a JSON line on its stdin, the answer the
    file's messages on a pipe of their own (stdout is left to whatever a library prints)."""

    def __init__(self) -> None:
        receiving, sending = os.pipe()
        root = str(Path(__file__).resolve().parents[3])  # where this semsearch is, not another installed one
        paths = os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))
        self.errors = tempfile.TemporaryFile()  # noqa: SIM115 (kept for as long as the child runs)
        try:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "semsearch.ingest.sources.tablerows", str(sending)],
                stdin=subprocess.PIPE,
                stdout=subprocess.DEVNULL,
                stderr=self.errors,
                pass_fds=[sending],
                env={**os.environ, "PYTHONPATH": paths},
            )
        finally:
            os.close(sending)  # the child's end only: once the child is gone, a read here ends, not waits
        self.stream = open(receiving, "rb")  # noqa: SIM115 (closed by close())
        self.timer: threading.Timer | None = None

    def read(self, path: Path, kind: str, fields: FieldNames) -> Iterator[Message]:
        """The file's messages; its last is an error or `("end",)`. Stopped early, the reader is closed."""
        assert self.process.stdin is not None
        request = {"path": str(path), "kind": kind, "fields": asdict(fields)}
        try:
            self.process.stdin.write(json.dumps(request).encode() + b"\n")
            self.process.stdin.flush()
        except BrokenPipeError:
            pass  # the child is gone: the read below says why
        message: Message | None = None
        try:
            while (message := read_message(self.stream)) is not None:
                yield message
                if message[0] in ("end", "error"):
                    return
            yield "error", f"cannot read: its reader stopped ({self.why_stopped()})", None, True
        finally:
            if message is None or message[0] not in ("end", "error"):
                self.close()

    def why_stopped(self) -> str:
        status = self.process.wait()
        self.errors.seek(0)
        said = self.errors.read().decode(errors="replace").strip().splitlines()
        return said[-1] if said else f"exit status {status}"

    @property
    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        """Its input closed, so it ends (killed if it is still writing a file nobody reads)."""
        for handle in (self.process.stdin, self.stream):
            with contextlib.suppress(OSError):
                if handle is not None:
                    handle.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.errors.close()


_kept: TableReader | None = None
_turn = threading.Lock()  # one read at a time uses the kept reader; another at once starts its own


def read_in_child(path: Path, kind: str, fields: FieldNames) -> Iterator[Message]:
    """The file's messages (tablerows), read by a child process, without the final `("end",)`."""
    global _kept
    if not _turn.acquire(blocking=False):
        reader = TableReader()
        try:
            yield from _until_end(reader.read(path, kind, fields))
        finally:
            reader.close()
        return
    try:
        if _kept is not None and _kept.timer is not None:
            _kept.timer.cancel()
        if _kept is None or not _kept.alive:
            _kept = TableReader()
        reader = _kept
        yield from _until_end(reader.read(path, kind, fields))
        if reader.alive:
            reader.timer = threading.Timer(KEPT_SECONDS, _close_idle, (reader,))
            reader.timer.daemon = True
            reader.timer.start()
    finally:
        if _kept is not None and not _kept.alive:
            _kept = None
        _turn.release()


def _until_end(messages: Iterator[Message]) -> Iterator[Message]:
    for message in messages:
        if message[0] == "end":
            return
        yield message


def _close_idle(reader: TableReader) -> None:
    global _kept
    with _turn:
        if _kept is reader:  # not taken for another file since
            _kept = None
            reader.close()
