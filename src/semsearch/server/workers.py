"""Where the server's index work runs: never on the event loop.

Reads run on a few threads, each owning an open Index (an Index's SQLite connection belongs to the thread that
opened it); the encoder, FAISS and SQLite release the GIL, so searches overlap on the cores. Writes run in a
child process with an Index of its own, so a long write never holds up a search, and readers follow it as they
follow any other process's writes (`Index.refresh`). (Several Index objects on one path in one process are safe:
the store never opens a file SQLite holds open, store.py.)"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import multiprocessing
import os
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from ..errors import SemsearchError
from .protocol import ApiError, error_of

if TYPE_CHECKING:
    from ..index import Index

T = TypeVar("T")


def identity(path: Path) -> tuple[int, ...] | None:
    """What changes when an index directory is replaced (a restore, a new index moved into place) rather than
    written to: the directory's and its store's device and inode. None: no index there now."""
    try:
        directory, store = os.stat(path), os.stat(path / "documents.db")
        os.stat(path / "manifest.json")
    except OSError:
        return None
    return directory.st_dev, directory.st_ino, store.st_dev, store.st_ino


@dataclass(frozen=True)
class Opened:
    """An Index a worker holds, with what identified its directory when it was opened (`identity`)."""

    index: Index
    identity: tuple[int, ...] | None


def current(opened: Opened | None, open_index: Callable[[], Index]) -> Opened:
    """`opened` while its directory is the one it opened, else the index now there (the old one closed), or a
    503 while there is none: a server follows its index directory being replaced or removed."""
    if opened is not None and identity(opened.index.path) == opened.identity:
        return opened
    if opened is not None:
        with contextlib.suppress(Exception):
            opened.index.close()
    try:
        index = open_index()
    except SemsearchError as error:
        raise ApiError(
            503, "index_unavailable", f"the index cannot be opened: {error}", {"Retry-After": "1"}
        ) from None
    return Opened(index, identity(index.path))


def warm(index: Index) -> None:
    """Load the encoder and vector index before the first query (a job for a reader thread)."""
    with contextlib.suppress(SemsearchError):  # an empty index, or one without a model
        index.search("warm up", k=1)


class IndexThreads:
    """Threads taking jobs from one queue; a job is `fn(index, *args)` on the Index of the thread that takes it,
    opened by `open_index` on that thread's first job (again when its directory is replaced: `current`) and
    closed by `close`. `path`: the index's, once a thread has opened it."""

    def __init__(self, open_index: Callable[[], Index], count: int = 1, name: str = "index"):
        self.open_index = open_index
        self.path: Path | None = None
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.threads = [
            threading.Thread(target=self._work, name=f"{name}-{n}", daemon=True) for n in range(count)
        ]
        for thread in self.threads:
            thread.start()

    def submit(self, fn: Callable[..., T], *args: Any) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self.jobs.put((fn, args, future))
        return future

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """Run a job on the thread and wait for it without blocking the event loop."""
        return await asyncio.wrap_future(self.submit(fn, *args))

    def close(self) -> None:
        for _ in self.threads:
            self.jobs.put(None)
        for thread in self.threads:
            thread.join()

    def _work(self) -> None:
        opened: Opened | None = None
        while (job := self.jobs.get()) is not None:
            fn, args, future = job
            if not future.set_running_or_notify_cancel():
                continue
            try:
                opened = current(opened, self.open_index)
                self.path = opened.index.path
                future.set_result(fn(opened.index, *args))
            except BaseException as error:  # handed to the waiting request, which answers with it
                future.set_exception(error)
        if opened is not None:
            with contextlib.suppress(Exception):
                opened.index.close()


class WriterProcess:
    """Writes, one at a time, in a child process (started at the first write) holding its own Index, opened
    with `open_index(wait)`: a write waits `wait` seconds for another process's write, or for this server's
    write before it, then answers 503."""

    def __init__(self, open_index: Callable[[float], Index], wait: float):
        self.open_index, self.wait = open_index, wait
        self.pool: concurrent.futures.ProcessPoolExecutor | None = None
        self.turn: asyncio.Lock | None = None  # made on the event loop, at the first write
        self.queued: Callable[[int], None] = lambda change: None  # told of each write in and out of the queue

    async def run(self, fn: Callable[..., dict], *args: Any) -> dict:
        """`fn(index, *args)` in the writer process, once the writes before it are done (in the queue, for
        `queued`, until its own is)."""
        self.queued(1)
        try:
            return await self._run(fn, *args)
        finally:
            self.queued(-1)

    async def _run(self, fn: Callable[..., dict], *args: Any) -> dict:
        self.turn = self.turn or asyncio.Lock()
        try:
            await asyncio.wait_for(self.turn.acquire(), self.wait)
        except TimeoutError:
            message = f"this server's write before this one took over {self.wait:g} s; try again"
            raise ApiError(503, "busy", message, {"Retry-After": "1"}) from None
        try:
            if self.pool is None:
                context = multiprocessing.get_context("spawn")  # no fork of a threaded process
                self.pool = concurrent.futures.ProcessPoolExecutor(1, mp_context=context)
            outcome = await asyncio.wrap_future(
                self.pool.submit(write, self.open_index, self.wait, fn, *args)
            )
        except concurrent.futures.process.BrokenProcessPool:
            self.pool = None  # the next write starts another
            message = "the writing process ended; the write may be incomplete"
            raise ApiError(500, "writer_lost", message) from None
        finally:
            self.turn.release()
        if "error" in outcome:
            raise ApiError(**outcome["error"])
        return outcome["result"]

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


_WRITER: Opened | None = None  # the writer process's Index, opened at its first write


def write(open_index: Callable[[float], Index], wait: float, fn: Callable, *args: Any) -> dict:
    """In the writer process: `fn(index, *args)`, its error as the API's (a document's DataError: 422)."""
    global _WRITER
    try:
        _WRITER = current(_WRITER, lambda: open_index(wait))
        index = _WRITER.index
        if index.read_only:
            raise ApiError(403, "read_only", f"the index is read-only: {index.read_only}")
        return {"result": fn(index, *args)}
    except Exception as error:
        api = error_of(error, invalid_documents=True)
        return {
            "error": {"status": api.status, "code": api.code, "message": api.message, "headers": api.headers}
        }
