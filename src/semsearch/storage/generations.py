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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ..errors import IndexStateError, WriterBusy
from . import resumestate
from .damage import derived, json_problem, safetensors_problem, size_problem
from .faults import fault_point
from .files import atomic_write_text, fsync_directory
from .manifest import FILE, PENDING, Manifest
from .rawvectors import Segment, unreferenced
from .store import DocumentStore


def generation_name(generation: int) -> str:
    return f"gen-{generation:06d}"


def file_problem(path: Path) -> str | None:
    """What is wrong with a derived file, from its header and size alone (no loading), or None."""
    if path.suffix == ".safetensors":
        return safetensors_problem(path)
    return json_problem(path) if path.suffix == ".json" else size_problem(path)


def cannot_write(path: Path) -> str | None:
    """Why this process cannot write the index in `path` (None: it can): a file system mounted read-only, or
    no permission to write the directory or the files a write changes in place."""
    with contextlib.suppress(OSError):
        if os.statvfs(path).f_flag & os.ST_RDONLY:
            return "its file system is mounted read-only"
    store = DocumentStore.FILE
    for name in (".", store, f"{store}-wal", f"{store}-shm", WriterLock.FILE):
        target = path / name
        if target.exists() and not os.access(target, os.W_OK):
            what = "the directory" if name == "." else name
            return f"user {os.getuid()} has no permission to write {what}"
    return None


class WriterLock:
    """One writer per index at a time: an exclusive flock on a file in the index directory, released by the
    kernel if the process dies, so a crash never leaves a stale lock. The file names the holder."""

    FILE = "writer.lock"

    def __init__(self, directory: str | Path):
        self.path = Path(directory) / self.FILE
        self.handle: TextIO | None = None

    def acquire(self, timeout: float) -> None:
        """Wait up to `timeout` seconds; raise WriterBusy naming the other writer after that."""
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
                    raise WriterBusy(
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
        try:
            handle = open(self.path)  # noqa: SIM115 (read access is all a shared lock needs)
        except OSError:  # unreadable: no writer can be seen, and readers then take the committed state
            return False
        with handle:
            try:
                fcntl.flock(handle, fcntl.LOCK_SH | fcntl.LOCK_NB)
            except BlockingIOError:
                return True
            except OSError:
                return False
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

    RETAKES = 20  # readings of the manifest while writes commit between it and the store

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
        self.publish(building.manifest, current)

    def write_manifest(self, building: NextGeneration, manifest: Manifest) -> Manifest:
        """Save the next generation's manifest as pending (published after SQLite commits), and a copy in the
        generation's directory: if manifest.json is ever damaged, the store's generation names its copy."""
        state = manifest.state.with_changes(generation=building.number)
        building.manifest = Manifest(manifest.settings, state).save(self.path, PENDING)
        atomic_write_text(building.directory / FILE, (self.path / PENDING).read_text())
        return building.manifest

    def discard(self, generation: int) -> None:
        shutil.rmtree(self.directory(generation), ignore_errors=True)
        (self.path / PENDING).unlink(missing_ok=True)

    def publish(self, manifest: Manifest, previous: Manifest | None = None) -> None:
        """After SQLite committed: make the pending manifest current, then reclaim space: generations older than
        the previous one, raw files neither manifest names (a reader that read the old manifest an instant ago
        may still be loading its files), and the document store's free pages when they are many (after the
        first generation, always: no reader yet, and its pages packed)."""
        os.replace(self.path / PENDING, self.path / FILE)
        fsync_directory(self.path)
        fault_point("published")
        for old in self.path.glob("gen-*"):
            if old.is_dir() and old.name[4:].isdigit() and int(old.name[4:]) < manifest.state.generation - 1:
                shutil.rmtree(old, ignore_errors=True)
        kept = [Segment.all_of(m.state.segments) for m in (manifest, previous) if m is not None]
        for path in unreferenced(self.path, *kept):
            path.unlink(missing_ok=True)
        self.store.reclaim(pack=manifest.state.generation == 1)

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

    def check(self, manifest: Manifest, files: Sequence[str]) -> None:
        """The manifest, the document store and the generation's `files` (operations.directory.derived_files:
        this stage knows no transform or vector index) must agree, and each file be whole by its header and
        size (checked on every open; `semsearch check` loads them all)."""
        self._refuse(manifest, self.disagreement(manifest), files)

    def read(self, lock: WriterLock, files: Callable[[Manifest], Sequence[str]]) -> Manifest:
        """The current manifest, checked as `check` does, for a reader that holds no writer lock."""
        manifest, problem = self.agreed(lock)
        self._refuse(manifest, problem, files(manifest))
        return manifest

    def _refuse(self, manifest: Manifest, problem: str | None, files: Sequence[str]) -> None:
        if problem:
            copy = self.directory(self.store.generation()) / FILE
            repair = (
                f"run `semsearch check --repair` to restore {FILE} from {copy.parent.name}/{FILE}"
                if copy.is_file()
                else f"restore {FILE} and {DocumentStore.FILE} from one backup, or re-ingest the corpus into "
                "a new index"
            )
            raise IndexStateError(f"{self.path} is inconsistent: {problem}; {repair}")
        if manifest.state.count:
            directory = self.directory(manifest.state.generation)
            for name in files:
                if problem := file_problem(directory / name):
                    raise derived(directory / name, problem)

    def disagreement(self, manifest: Manifest) -> str | None:
        return self._disagreement(manifest, *self.store.committed())

    def _disagreement(self, manifest: Manifest, committed: int, stored: int) -> str | None:
        state = manifest.state
        if committed == state.generation and stored == state.count:
            return None
        if committed == state.generation == 0 and stored == resumestate.stored_before(self.store):
            return None  # a first ingest's documents so far, committed at its resume points
        return (
            f"{FILE} says generation {state.generation} with {state.count} documents, {DocumentStore.FILE} "
            f"generation {committed} with {stored}"
        )

    def agreed(self, lock: WriterLock) -> tuple[Manifest, str | None]:
        """The current manifest for a reader, and how it disagrees with the store (None: it agrees). A write
        that commits between reading the manifest and reading the store is no disagreement: the manifest is
        read again, as often as writes keep committing in between (each comparison reads the store's
        generation and count in one statement, one snapshot)."""
        for _ in range(self.RETAKES):
            manifest = self.current(lock)
            committed, stored = self.store.committed()
            problem = self._disagreement(manifest, committed, stored)
            if problem is None or committed <= manifest.state.generation:
                break
        return manifest, problem

    def current(self, lock: WriterLock) -> Manifest:
        """The manifest of the generation the store has committed, for a reader. Rolled forward first when no
        writer is active and the store can be written; on read-only storage a committed pending manifest is
        read in place. While a writer is between its SQLite commit and the rename, the committed manifest is
        the pending one or the copy in its generation's directory (both written before the commit); a writer
        that published meanwhile is seen by reading manifest.json again. Else manifest.json is returned, and
        `agreed` or `check` says how it and the store disagree."""
        writing = lock.held_elsewhere()
        if not writing and not self.store.read_only:
            self.roll_forward()
        manifest = Manifest.load(self.path)
        # inside a snapshot (`DocumentStore.read_snapshot`), fixed from here
        committed = self.store.generation()
        if manifest.state.generation == committed:
            return manifest
        places = [(self.path, FILE), (self.path, PENDING)]
        if writing or lock.held_elsewhere():  # not where no write runs: the copy would hide a stale manifest
            places.append((self.directory(committed), FILE))
        for directory, name in places:
            with contextlib.suppress(IndexStateError, FileNotFoundError):
                candidate = Manifest.load(directory, name)
                if candidate.state.generation == committed:
                    return candidate
        return manifest
