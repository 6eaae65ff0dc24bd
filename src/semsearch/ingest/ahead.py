"""Documents read ahead: a thread pulls them from their source (files parsed, in a pool of processes) into a
queue of bounded length while the ingest encodes the documents before them, so parsing and encoding overlap
and no more than the queue's worth of parsed documents waits in memory."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterable, Iterator
from typing import TypeVar

Item = TypeVar("Item")
_END = object()


def read_ahead(items: Iterable[Item], depth: int) -> Iterator[Item]:
    """The items in order, read by a thread at most `depth` ahead of the caller; what reading them raises is
    raised here, where the caller reached it. Stopping early (an error in the caller) stops the thread, which
    closes the source (its pool then parses no more)."""
    waiting: queue.Queue = queue.Queue(maxsize=max(1, depth))
    stop = threading.Event()

    def put(entry: tuple[bool, object]) -> bool:
        while not stop.is_set():
            try:
                waiting.put(entry, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def fill() -> None:
        source = iter(items)
        try:
            for item in source:
                if not put((True, item)):
                    return
            put((True, _END))
        except BaseException as error:  # raised again in the caller's thread
            put((False, error))
        finally:
            close = getattr(source, "close", None)
            if close is not None:
                close()

    thread = threading.Thread(target=fill, name="semsearch-read-ahead", daemon=True)
    thread.start()
    try:
        while True:
            ok, item = waiting.get()
            if not ok:
                raise item
            if item is _END:
                return
            yield item
    finally:
        stop.set()
        thread.join()
