"""Pages recognized, counted where the ingest's progress is shown: a scan of a hundred pages is one document,
minutes of recognition before its first passage, so the bar counts its pages as they are read. A page is
reported in whichever process recognized it: in the ingest's own, straight to the listener; in a parsing
worker, through a queue the pool hands each worker at its start (`pool_reports`), which a thread of the
ingest's process passes on to the listener."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

Listener = Callable[[int], None]  # pages recognized since the last call

_listener: Listener | None = None  # in the ingest's process: who is told
_queue: Any = None  # in a parsing worker: where its pages go


def page_recognized() -> None:
    """Called after each page is recognized."""
    if _queue is not None:
        _queue.put(1)
    elif _listener is not None:
        _listener(1)


@contextmanager
def counted_pages(listener: Listener) -> Iterator[None]:
    """Pages recognized while inside, by this process or its parsing pools, told to `listener`."""
    global _listener
    outer, _listener = _listener, listener
    try:
        yield
    finally:
        _listener = outer


def _report_to(queue: Any) -> None:  # a pool worker's initializer
    global _queue
    _queue = queue


@contextmanager
def pool_reports(context: Any) -> Iterator[dict[str, Any]]:
    """The initializer arguments of a process pool whose workers report their pages to this process's listener
    (none where nobody listens), and the thread that passes them on while the pool runs."""
    listener = _listener
    if listener is None:
        yield {}
        return
    queue = context.SimpleQueue()

    def relay() -> None:
        while (pages := queue.get()) is not None:
            listener(pages)

    thread = threading.Thread(target=relay, name="ocr-pages", daemon=True)
    thread.start()
    try:
        yield {"initializer": _report_to, "initargs": (queue,)}
    finally:
        queue.put(None)
        thread.join(timeout=5)
