"""Small file helpers: atomic replacement of files (write beside, fsync, rename)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yields a temporary path beside `path`; on success it is fsynced and renamed over `path`, so a
    reader or a crash sees the old file or the new one, never half of one."""
    path = Path(path)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        yield tmp
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.replace(tmp, path)
        fsync_directory(path.parent)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


def atomic_write_text(path: str | Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def fsync_directory(directory: str | Path) -> None:
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class WriterLock:
    """One writer per index at a time: an exclusive flock on a file in the index directory, released by
    the kernel if the process dies, so a crash never leaves a stale lock. The file names the holder."""

    FILE = "writer.lock"

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / self.FILE
        self.handle = None

    def acquire(self, timeout: float) -> None:
        """Wait up to `timeout` seconds; raise IndexStateError naming the other writer after that."""
        import fcntl
        import time

        from .errors import IndexStateError

        handle = open(self.path, "a+")  # noqa: SIM115 (held until release)
        deadline = time.monotonic() + timeout
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    handle.seek(0)
                    holder = handle.read().strip() or "another process"
                    handle.close()
                    raise IndexStateError(
                        f"{self.path.parent} is being written by {holder}; waited {timeout:g} s. "
                        "Try again when it has finished (or give --wait SECONDS)"
                    ) from None
                time.sleep(0.05)
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self.handle = handle

    def release(self) -> None:
        if self.handle is not None:
            self.handle.close()  # closing drops the flock
            self.handle = None

    def held_elsewhere(self) -> bool:
        """Whether another process is writing now (a probe: takes and drops a shared lock)."""
        import fcntl

        if self.handle is not None or not self.path.exists():
            return False
        with open(self.path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False
