"""`ingest DIR --watch`: run a folder's sync again after each burst of changes, until interrupted.

The file system's events are collected by watchfiles (the `files` extra) on a thread of their own from before
the first sync to the end, so a change made while a sync runs is held for the next one, never lost. A burst is
one batch: it closes QUIET_MS after its last event or LONGEST_MS after its first, whichever comes first, and
the batches that closed while a sync ran are run as one. What changed is found by the sync's own scan (sizes,
times and hashes against the `files` table), so an event only says when to look. Ctrl-C (or SIGTERM) lets the
sync under way finish, then returns; a second Ctrl-C interrupts at once."""

from __future__ import annotations

import contextlib
import logging
import queue
import signal
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import FrameType, ModuleType
from typing import TYPE_CHECKING

from ..errors import SettingsError

if TYPE_CHECKING:
    from watchfiles import Change

QUIET_MS = 300
LONGEST_MS = 2000
POLL_SECONDS = 0.1  # how often the idle loop looks for a stop

log = logging.getLogger(__name__)


def _watchfiles() -> ModuleType:
    try:
        import watchfiles
    except ImportError:
        raise SettingsError("--watch needs watchfiles: pip install 'semsearch[files]'") from None
    return watchfiles


class Events:
    """The file system's events under `roots` (those under `ignore` left out), collected on a thread into
    batches from the moment it is made."""

    def __init__(self, roots: Sequence[Path], ignore: Sequence[Path] = ()):
        watchfiles = _watchfiles()
        self.stop = threading.Event()
        self.batches: queue.Queue[set[str]] = queue.Queue()
        ignored = [str(Path(p).resolve()) for p in ignore]
        self._started = threading.Event()

        def wanted(change: Change, path: str) -> bool:
            return not any(path == top or path.startswith(top + "/") for top in ignored)

        def collect() -> None:
            changes = watchfiles.watch(
                *roots,
                watch_filter=wanted,
                debounce=LONGEST_MS,
                step=QUIET_MS,
                stop_event=self.stop,
                rust_timeout=int(POLL_SECONDS * 1000),
                yield_on_timeout=True,
                raise_interrupt=False,
            )
            for batch in changes:  # the first yield (a timeout) comes once the watcher runs
                self._started.set()
                if batch:
                    self.batches.put({path for _, path in batch})

        self._thread = threading.Thread(target=collect, name="semsearch-watch", daemon=True)
        self._thread.start()
        self._started.wait(5)

    def next_batch(self, stop: threading.Event) -> set[str] | None:
        """The paths of the next batch, with every batch already waiting; None once `stop` is set."""
        while not stop.is_set():
            try:
                paths = self.batches.get(timeout=POLL_SECONDS)
            except queue.Empty:
                continue
            while not self.batches.empty():
                paths |= self.batches.get_nowait()
            return paths
        return None

    def close(self) -> None:
        self.stop.set()
        self._thread.join(timeout=2)


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[threading.Event]:
    """An event set by the first SIGINT or SIGTERM (the work under way goes on to its end); a second SIGINT
    raises KeyboardInterrupt as usual."""
    stop = threading.Event()

    def on_signal(number: int, frame: FrameType | None) -> None:
        if stop.is_set() and number == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()

    previous = {number: signal.signal(number, on_signal) for number in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def watch(
    roots: Sequence[Path],
    sync: Callable[[set[str] | None], None],
    *,
    ignore: Sequence[Path] = (),
    stop: threading.Event,
) -> None:
    """Call `sync(None)` once the events are being collected (what changed before), then `sync(paths)` after
    each batch, until `stop` is set."""
    events = Events(roots, ignore)
    try:
        sync(None)
        while (paths := events.next_batch(stop)) is not None:
            log.debug("%d paths changed", len(paths))
            sync(paths)
    finally:
        events.close()
