"""The write protocol of an index directory: one writer at a time, each write a new generation.

A write builds the next generation's directory (`gen-NNNNNN/`: statistics, transform, FAISS index) and a
pending manifest beside the current ones, then commits SQLite, which records the new generation number in the
same transaction as the documents, then renames the pending manifest over `manifest.json`. Until that rename
readers see the old generation. A crash before the commit leaves the old state (the scraps are discarded); a
crash after it is rolled forward on the next open, because every file the new generation needs was written and
fsynced before SQLite committed.

Named fault points (faults.py) mark the steps; the tests crash a real process at each of them."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from .errors import IndexStateError
from .faults import fault_point
from .manifest import FILE, PENDING, Manifest
from .storage import fsync_directory
from .store import DocumentStore
from .vectorindex import VectorIndex


def generation_name(generation: int) -> str:
    return f"gen-{generation:06d}"


class WriterLock:
    """One writer per index at a time: an exclusive flock on a file in the index directory, released by the
    kernel if the process dies, so a crash never leaves a stale lock. The file names the holder."""

    FILE = "writer.lock"

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / self.FILE
        self.handle = None

    def acquire(self, timeout: float) -> None:
        """Wait up to `timeout` seconds; raise IndexStateError naming the other writer after that."""
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
                        "Try again when it has finished, or wait longer",
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
        if self.handle is not None or not self.path.exists():
            return False
        with open(self.path) as handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            fcntl.flock(handle, fcntl.LOCK_UN)
        return False


@dataclass
class NextGeneration:
    """The generation a write is building: its directory, and the manifest it will publish once written."""

    directory: Path
    number: int
    manifest: Manifest | None = None  # set by `Generations.write_manifest`


class Generations:
    """The generations of one index directory, for its writer and its readers."""

    def __init__(self, path: Path, store: DocumentStore):
        self.path = Path(path)
        self.store = store

    def directory(self, generation: int) -> Path:
        return self.path / generation_name(generation)

    @contextlib.contextmanager
    def next(self, current: Manifest) -> Iterator[NextGeneration]:
        """Build the generation after `current`, inside one SQLite transaction: the caller changes the store
        and writes the generation's files into `directory`, then hands its manifest to `write_manifest`.
        On leaving, SQLite commits with the new generation number and the manifest is published; an error
        (or a caller that wrote no manifest: nothing to change) leaves everything as it was."""
        number = current.state.generation + 1
        target = self.directory(number)
        shutil.rmtree(target, ignore_errors=True)  # scraps of a write that crashed before its commit
        target.mkdir()
        building = NextGeneration(target, number)
        try:
            with self.store.transaction():
                yield building
                if building.manifest is None:
                    self.discard(number)
                    return
                fault_point("generation-written")
                self.store.set_generation(number)
            fault_point("committed")
        except BaseException:
            self.discard(number)
            raise
        self.publish(building.manifest)

    def write_manifest(self, building: NextGeneration, manifest: Manifest) -> Manifest:
        """Save the next generation's manifest as pending (published after SQLite commits)."""
        state = manifest.state.with_changes(generation=building.number)
        building.manifest = Manifest(manifest.settings, state).save(self.path, PENDING)
        return building.manifest

    def discard(self, generation: int) -> None:
        shutil.rmtree(self.directory(generation), ignore_errors=True)
        (self.path / PENDING).unlink(missing_ok=True)

    def publish(self, manifest: Manifest) -> None:
        """After SQLite committed: make the pending manifest current and drop generations older than the
        previous one (a reader that read the old manifest an instant ago may still be loading its files)."""
        os.replace(self.path / PENDING, self.path / FILE)
        fsync_directory(self.path)
        fault_point("published")
        for old in self.path.glob("gen-*"):
            if old.is_dir() and old.name[4:].isdigit() and int(old.name[4:]) < manifest.state.generation - 1:
                shutil.rmtree(old, ignore_errors=True)

    def roll_forward(self) -> None:
        """Finish a write that crashed after SQLite committed but before its manifest was published, or drop
        the pending manifest of one that crashed before (only with the writer lock held, or no writer)."""
        pending = self.path / PENDING
        if not pending.is_file():
            return
        try:
            generation = json.loads(pending.read_text()).get("generation")
        except (OSError, ValueError, AttributeError):
            generation = None
        if generation is not None and self.store.generation() == generation:
            os.replace(pending, self.path / FILE)
            fsync_directory(self.path)
        else:
            pending.unlink(missing_ok=True)

    def check(self, manifest: Manifest) -> None:
        """The manifest, the document store and the generation's files must agree (checked on every open)."""
        state, stored = manifest.state, self.store.count()
        if self.store.generation() != state.generation or stored != state.count:
            raise IndexStateError(
                f"{self.path} is inconsistent: the manifest says generation {state.generation} with {state.count} "
                f"documents, the document store generation {self.store.generation()} with {stored}; "
                "re-run the last ingest to repair it"
            )
        if state.count and not (self.directory(state.generation) / VectorIndex.FILE).is_file():
            raise IndexStateError(
                f"{self.path}: {generation_name(state.generation)} is incomplete; re-run the ingest"
            )

    def current(self, lock: WriterLock) -> Manifest:
        """The manifest of the last committed generation, for a reader. Rolled forward first when no writer
        is active; while one is publishing, its committed pending manifest is read without touching files."""
        if not lock.held_elsewhere():
            self.roll_forward()
            return Manifest.load(self.path)
        for _ in range(100):
            manifest = Manifest.load(self.path)
            committed = self.store.generation()
            if committed == manifest.state.generation:
                return manifest
            with contextlib.suppress(IndexStateError, FileNotFoundError):
                candidate = Manifest.load(self.path, PENDING)
                if candidate.state.generation == committed:
                    return candidate
            time.sleep(0.01)  # between the SQLite commit and the manifest rename: a moment
        raise IndexStateError(
            f"{self.path}: the manifest and the document store disagree while a write is running"
        )
