"""Backups: a consistent copy of an index as of one published generation, made while it is read and written.

Pinning the generation takes an instant: a read transaction is opened on the document store (SQLite then keeps
that snapshot however the writers go on), the manifest of the generation it committed is read, and the
generation's files and raw segments are hard-linked into the backup's staging directory (or opened, where links
are not possible: an open file outlives its removal by a later write's clean-up). Segments and generation files
are never changed once written (each write publishes new files under new names), so a link is as good as a copy.
The writer lock is taken for that instant if it is free; while another process writes, the generation is pinned
as a reader pins it, and pinned again should two publications remove its files meanwhile (`pin`). Then SQLite's
backup API copies the store from the snapshot, the files not linked are copied, and `backup.json` records every
file's sha256 and size, the generation and its counts.

The copy is built in a hidden sibling of DEST and renamed into place when complete and fsynced: an interrupted
backup (SIGKILL, disk full) leaves no DEST at all. In the staging directory `manifest.json` is written last,
after `backup.json`, so a staging directory is never an index that looks whole."""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import sqlite3
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import IndexStateError, WriterBusy
from .faults import fault_point
from .files import fsync_directory
from .generations import Generations, WriterLock, cannot_write, generation_name
from .manifest import FILE, PENDING, Manifest, now
from .rawvectors import DIRECTORY, RawVectors, Segment
from .store import DocumentStore

BACKUP_FILE = "backup.json"
PINNED = ".manifest.pinned"  # the pinned manifest, read back in the staging directory
PIN_ATTEMPTS = 50  # while a writer publishes generation after generation
# Fault points (faults.py) of a backup, in order: the crash tests end a real backup at each.
BACKUP_STEPS = ("backup-pinned", "backup-copied", "backup-hashed", "backup-written")
BACKUP_FORMAT = 1
HASH_BUFFER = 1 << 20
Progress = Callable[[int], None]  # bytes done since the last call


def staging_path(target: Path, purpose: str) -> Path:
    """A hidden sibling of `target`, named for this process, where a backup or restore is built."""
    return target.with_name(f".{target.name}.{purpose}-{os.getpid()}")


def remove_stale(target: Path, purpose: str) -> None:
    """Staging directories of `target` left by processes that died (killed mid-copy)."""
    for path in target.parent.glob(f".{target.name}.{purpose}-*"):
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            _remove(path)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def sha256_of(path: Path, progress: Progress | None = None) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        while chunk := handle.read(HASH_BUFFER):
            digest.update(chunk)
            if progress:
                progress(len(chunk))
    return digest.hexdigest()


@dataclass
class Pinned:
    """One generation held still: its manifest's bytes, the store's snapshot, and its other files (linked into
    the staging directory, or kept open to be copied)."""

    manifest_text: str
    manifest: Manifest
    linked: list[str] = field(default_factory=list)
    to_copy: dict[str, Any] = field(default_factory=dict)  # relative name -> open file, its rows' bytes
    partial: dict[str, int] = field(default_factory=dict)  # relative name -> bytes to copy (the rows only)


@dataclass(frozen=True)
class BackupReport:
    path: Path
    generation: int
    documents: int
    files: int
    bytes: int
    linked_bytes: int  # of those, hard-linked rather than copied
    seconds: float


def expected_files(manifest: Manifest, source: Path) -> list[str]:
    """The files of the manifest's generation, relative to the index: its directory's, the raw segments."""
    names = []
    directory = source / generation_name(manifest.state.generation)
    if manifest.state.count and not directory.is_dir():
        raise FileNotFoundError(errno.ENOENT, "missing", str(directory))
    if directory.is_dir():
        names += [f"{directory.name}/{p.name}" for p in sorted(directory.iterdir()) if p.is_file()]
    for segment in Segment.all_of(manifest.state.segments):
        names += [f"{DIRECTORY}/{name}" for name in segment.files]
    return names


def _rows_bytes(source: Path, manifest: Manifest, name: str) -> int | None:
    """For a raw segment: the bytes of its header and the rows the generation counts (None: any other file).
    A segment is never appended to today; were one longer than its rows, only the rows would be copied."""
    if not (source / name).exists():
        raise FileNotFoundError(errno.ENOENT, "missing", str(source / name))
    for segment in Segment.all_of(manifest.state.segments):
        if name == f"{DIRECTORY}/{segment.name}":
            raw = RawVectors(source, [segment], manifest.settings.encoder_dim)
            problem = raw.problem(segment)
            if problem and not problem.startswith("too long"):
                raise IndexStateError(
                    f"{source / name} is damaged ({problem}): run `semsearch check --index {source}` first"
                )
            if not problem:
                return None
            offset = np.load(source / name, mmap_mode="r", allow_pickle=False).offset
            return offset + segment.count * segment.width(raw.dim) * segment.dtype.itemsize
    return None


def pin(source: Path, store: DocumentStore, staging: Path) -> Pinned:
    """The current generation held still: its manifest, the store's snapshot, its files linked (or opened).
    With the writer lock when it is free, for an instant (a write that crashed after its commit is rolled
    forward first). While another process writes, as a reader pins it: the generation the store's snapshot
    committed, whose manifest is the published or the pending one; its files are linked before two more
    writes could remove them (a write keeps the previous generation's), and all is tried again if they did."""
    lock = WriterLock(source)
    locked = False
    if cannot_write(source) is None:
        with contextlib.suppress(WriterBusy):
            lock.acquire(0)
            locked = True
    try:
        if locked:
            Generations(source, store).roll_forward()
        for attempt in range(PIN_ATTEMPTS):
            try:
                return _pin_once(source, store, staging)
            except (FileNotFoundError, _Moved) as error:
                if locked or attempt == PIN_ATTEMPTS - 1:
                    detail = "its manifest does not match the store" if isinstance(error, _Moved) else error
                    raise IndexStateError(
                        f"{source} is inconsistent ({detail}): run `semsearch check --index {source}`"
                    ) from None
                for path in staging.iterdir():
                    _remove(path)
                time.sleep(0.05)
        raise AssertionError("unreachable")
    finally:
        lock.release()


class _Moved(Exception):
    """The manifest read was not the generation the store's snapshot holds (a write published meanwhile)."""


def _committed_text(source: Path, committed: int) -> str | None:
    """The text of the manifest of generation `committed`: the published one, or the pending one between a
    write's commit and its publication."""
    for name in (FILE, PENDING):
        try:
            text = (source / name).read_text()
            if json.loads(text).get("generation") == committed:
                return text
        except (OSError, ValueError, AttributeError):
            continue
    return None


def _pin_once(source: Path, store: DocumentStore, staging: Path) -> Pinned:
    conn = store.db.conn
    conn.execute("BEGIN")  # the snapshot the backup API copies, after the lock is gone
    pinned = None
    try:
        committed = store.generation()
        text = _committed_text(source, committed)
        if text is None:
            raise _Moved()
        (staging / PINNED).write_text(text)
        manifest = Manifest.load(staging, PINNED)
        (staging / PINNED).unlink()
        if manifest.state.count != store.count():
            raise _Moved()
        pinned = Pinned(text, manifest)
        for name in expected_files(manifest, source):
            target = staging / name
            target.parent.mkdir(parents=True, exist_ok=True)
            size = _rows_bytes(source, manifest, name)
            if size is None:
                try:
                    os.link(source / name, target)
                    pinned.linked.append(name)
                    continue
                except OSError as error:
                    if error.errno not in (errno.EXDEV, errno.EPERM, errno.EMLINK, errno.ENOTSUP):
                        raise
            pinned.to_copy[name] = open(source / name, "rb")  # noqa: SIM115 (closed by copy_pinned)
            if size is not None:
                pinned.partial[name] = size
        return pinned
    except BaseException:
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        for handle in pinned.to_copy.values() if pinned else ():
            handle.close()
        raise


def copy_store(store: DocumentStore, target: Path) -> None:
    """The store's pinned snapshot into `target`, by SQLite's backup API, in one step (a step-wise backup
    restarts whenever another process writes)."""
    destination = sqlite3.connect(target)
    try:
        with store.guarded():
            store.db.conn.backup(destination)
    finally:
        destination.close()
        with contextlib.suppress(sqlite3.Error):
            store.db.conn.execute("COMMIT")


def copy_pinned(pinned: Pinned, staging: Path, progress: Progress | None) -> None:
    for name, handle in pinned.to_copy.items():
        with handle, open(staging / name, "wb") as out:
            left = pinned.partial.get(name)
            while left is None or left > 0:
                chunk = handle.read(HASH_BUFFER if left is None else min(HASH_BUFFER, left))
                if not chunk:
                    break
                out.write(chunk)
                left = None if left is None else left - len(chunk)
                if progress:
                    progress(len(chunk))
    pinned.to_copy.clear()


def describe_files(
    directory: Path, names: list[str], progress: Progress | None = None
) -> dict[str, dict[str, Any]]:
    return {
        name: {"sha256": sha256_of(directory / name, progress), "size": (directory / name).stat().st_size}
        for name in names
    }


def fsync_tree(directory: Path) -> None:
    """Every file and directory under `directory` on disk (before the rename that makes it visible)."""
    for root, _, files in os.walk(directory):
        for name in files:
            fd = os.open(os.path.join(root, name), os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
        fsync_directory(root)


def write_backup(
    source: Path,
    staging: Path,
    store: DocumentStore,
    progress: Progress | None = None,
    total: Callable[[int], None] | None = None,
) -> BackupReport:
    """Fill the empty `staging` directory with a verified copy of the index in `source` (see the module)."""
    started = time.perf_counter()
    pinned = pin(source, store, staging)
    fault_point("backup-pinned")
    try:
        copy_store(store, staging / DocumentStore.FILE)
    except BaseException:
        for handle in pinned.to_copy.values():
            handle.close()
        raise
    names = [DocumentStore.FILE, *pinned.linked, *pinned.to_copy]
    if total:  # the bytes copied, then every file's hashed
        copied = sum(pinned.partial.get(n, os.fstat(h.fileno()).st_size) for n, h in pinned.to_copy.items())
        total(2 * copied + sum((staging / n).stat().st_size for n in [DocumentStore.FILE, *pinned.linked]))
    copy_pinned(pinned, staging, progress)
    fault_point("backup-copied")
    files = describe_files(staging, names, progress)
    manifest_bytes = pinned.manifest_text.encode()
    files[FILE] = {"sha256": hashlib.sha256(manifest_bytes).hexdigest(), "size": len(manifest_bytes)}
    fault_point("backup-hashed")
    state = pinned.manifest.state
    record = {
        "semsearch_backup": BACKUP_FORMAT,
        "generation": state.generation,
        "documents": state.count,
        "passages": state.rows,
        "created": now(),
        "source": str(source.resolve()),
        "files": files,
    }
    # manifest.json last: a staging directory cut short is no index (nor one whose checksums could agree)
    (staging / BACKUP_FILE).write_text(json.dumps(record, indent=2) + "\n")
    (staging / FILE).write_bytes(manifest_bytes)
    fsync_tree(staging)
    fault_point("backup-written")
    linked = sum(files[name]["size"] for name in pinned.linked)
    return BackupReport(
        staging,
        state.generation,
        state.count,
        len(files),
        sum(f["size"] for f in files.values()),
        linked,
        time.perf_counter() - started,
    )


def read_record(directory: Path) -> dict[str, Any] | None:
    """The backup.json of a directory (None: there is none); a damaged one is an error."""
    path = Path(directory) / BACKUP_FILE
    if not path.is_file():
        return None
    try:
        record = json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise IndexStateError(
            f"{path} is damaged (unreadable: {error}): the backup cannot be verified"
        ) from None
    if not isinstance(record, dict) or not isinstance(record.get("files"), dict):
        raise IndexStateError(f"{path} is damaged (no list of files): the backup cannot be verified")
    return record


def checksum_problems(directory: Path, progress: Progress | None = None) -> dict[str, str | None] | None:
    """Each file backup.json lists -> what is wrong with it (None: its size and sha256 agree); None when there
    is no backup.json, or the index has written a newer generation since (the list then describes the past)."""
    directory = Path(directory)
    record = read_record(directory)
    if record is None:
        return None
    with contextlib.suppress(IndexStateError, OSError):
        if Manifest.load(directory).state.generation != record.get("generation"):
            return None
    problems: dict[str, str | None] = {}
    for name, expected in record["files"].items():
        path = directory / name
        if not path.is_file():
            problems[name] = "missing"
        elif path.stat().st_size != expected.get("size"):
            problems[name] = f"{path.stat().st_size} bytes, the backup recorded {expected.get('size')}"
        elif sha256_of(path, progress) != expected.get("sha256"):
            problems[name] = "its sha256 differs from the one the backup recorded"
        else:
            problems[name] = None
    return problems


@contextlib.contextmanager
def staged(target: Path, purpose: str) -> Iterator[Path]:
    """A fresh staging directory beside `target`, removed unless the caller renamed it into place."""
    remove_stale(target, purpose)
    staging = staging_path(target, purpose)
    _remove(staging)
    staging.mkdir(parents=True)
    try:
        yield staging
    finally:
        if staging.exists():
            _remove(staging)
