"""`semsearch backup` and `semsearch restore`: an exact copy of an index as of one generation (storage/backup.py
makes and verifies it), as a directory that is itself an index or as one .tar.gz; and putting one back in place
of a damaged index, verified first, swapped in so that readers see the old index or the restored one.

Every failure (disk full, a file-size limit, a kill) leaves the target as it was: the new copy is built in a
hidden sibling and renamed into place only when complete and on disk."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import os
import shutil
import sqlite3
import tarfile
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import IndexStateError, SemsearchError
from ..settings import DEFAULT_WAIT
from ..storage.backup import (
    BACKUP_FILE,
    BackupReport,
    Progress,
    checksum_problems,
    fsync_tree,
    read_record,
    staged,
    write_backup,
)
from ..storage.damage import brief
from ..storage.files import fsync_directory
from ..storage.generations import WriterLock, cannot_write
from ..storage.manifest import FILE, Manifest
from ..storage.store import DocumentStore
from .check import check_index

ARCHIVE_SUFFIXES = (".tar.gz", ".tgz")
# Raw vectors hardly compress (float32 noise); the fastest level saves as much as the slowest on the rest.
ARCHIVE_LEVEL = 1


def backup(
    source: str | Path,
    dest: str | Path,
    *,
    archive: bool = False,
    progress: Progress | None = None,
    total: Callable[[int], None] | None = None,
) -> BackupReport:
    """Copy the index in `source` as of its current generation to `dest` (a new path): a directory that is an
    index, or with `archive` one .tar.gz. Nothing waits for it, nor it for a write in progress (storage/backup.py
    pins the generation). `total(bytes)` is called once the size is known, `progress(bytes)`
    as they are copied and hashed."""
    source, dest = Path(source), Path(dest)
    Manifest.load(source)  # says plainly when it is not an index
    if dest.exists() or dest.is_symlink():
        raise IndexStateError(f"{dest} already exists: back up to a new path")
    if dest.resolve().is_relative_to(source.resolve()):
        raise IndexStateError(f"{dest} is inside the index {source}: back up to a path outside it")
    if not dest.parent.is_dir():
        raise IndexStateError(f"{dest.parent} does not exist: make it first")
    store = DocumentStore(
        source / DocumentStore.FILE, read_only=cannot_write(source) is not None, create=False
    )
    try:
        with failing_as(dest, source), staged(dest, "backup") as staging:
            report = write_backup(source, staging, store, progress, total)
            if not archive:
                os.rename(staging, dest)
                fsync_directory(dest.parent)
                return replace(report, path=dest)
            packing_started = time.perf_counter()
            with staged(dest, "archive") as packing:
                packed = packing / dest.name
                with tarfile.open(packed, "w:gz", compresslevel=ARCHIVE_LEVEL) as tar:
                    for name in sorted(p.name for p in staging.iterdir()):
                        tar.add(staging / name, arcname=name)
                with open(packed, "rb") as handle:
                    os.fsync(handle.fileno())
                os.rename(packed, dest)
                fsync_directory(dest.parent)
            seconds = report.seconds + time.perf_counter() - packing_started
            return replace(report, path=dest, bytes=dest.stat().st_size, linked_bytes=0, seconds=seconds)
    finally:
        store.close()


@contextlib.contextmanager
def failing_as(target: Path, source: Path | None = None):
    """Errors of the file system (disk full, a size limit) and of SQLite's copy, as one line naming what
    was not made and that nothing else changed."""
    unchanged = f"{target} was not written" + (f"; {source} is unchanged" if source else "")
    try:
        yield
    except SemsearchError as error:
        if isinstance(error.__context__, (OSError, sqlite3.Error)) or "disk" in str(error):
            raise IndexStateError(f"{error}; {unchanged}") from None
        raise
    except sqlite3.Error as error:
        raise IndexStateError(f"{target}: {brief(error)}; {unchanged}") from None
    except OSError as error:
        reason = error.strerror or brief(error)
        where = error.filename or target
        raise IndexStateError(f"{where}: {reason}; {unchanged}") from None


@dataclass(frozen=True)
class RestoreReport:
    path: Path
    generation: int
    documents: int
    replaced: str | None  # what stood at the path before: None (nothing), or "damaged: ..." / "healthy"


def restore(
    backup_path: str | Path,
    path: str | Path,
    *,
    force: bool = False,
    wait: float = DEFAULT_WAIT,
    progress: Progress | None = None,
    total: Callable[[int], None] | None = None,
) -> RestoreReport:
    """Put the backup (a directory or a .tar.gz that `backup` made) in place of the index at `path`, after
    verifying every file against its checksums and checking the copy as an index. An index at `path` that is
    healthy is replaced only with `force`; readers see it or the restored one, never a mix."""
    backup_path, path = Path(backup_path), Path(path)
    if not backup_path.exists():
        raise IndexStateError(f"{backup_path} does not exist")
    before = _standing(path)
    if before == "healthy" and not force:
        raise IndexStateError(f"{path} is a healthy index: give --force to replace it with {backup_path}")
    with failing_as(path), staged(path, "restore") as staging:
        _unpack(backup_path, staging)
        record = read_record(staging)
        if record is None:
            raise IndexStateError(f"{backup_path} is not a semsearch backup (no {BACKUP_FILE})")
        if total:
            total(sum(int(f.get("size") or 0) for f in record["files"].values()))
        problems = checksum_problems(staging, progress)
        if problems is None:  # its manifest is of a later generation than backup.json records
            raise IndexStateError(
                f"{backup_path} was written to after the backup was made (backup.json records generation "
                f"{record['generation']}): it can no longer be verified, so it is not restored"
            )
        if bad := {name: problem for name, problem in problems.items() if problem}:
            name, problem = next(iter(bad.items()))
            raise IndexStateError(
                f"{backup_path}: {name} fails its checksum ({problem}; {len(bad)} file(s) in all): not restored"
            )
        report = check_index(staging)
        if not report.healthy:
            raise IndexStateError(
                f"{backup_path} does not check as an index: {report.summary()}: not restored"
            )
        for name in (f"{DocumentStore.FILE}-wal", f"{DocumentStore.FILE}-shm", WriterLock.FILE):
            (staging / name).unlink(missing_ok=True)  # the check's own traces
        fsync_tree(staging)
        _swap_in(staging, path, wait)
    return RestoreReport(path, record["generation"], record["documents"], before)


def _standing(path: Path) -> str | None:
    """What is at the path a restore replaces: None (nothing, or an empty directory), "healthy", or
    "damaged: why". Anything that is not an index is refused."""
    if not path.exists():
        return None
    if not path.is_dir():
        raise IndexStateError(f"{path} is not a directory: not replaced")
    names = {p.name for p in path.iterdir()}
    if not names:
        return None
    if not names & {FILE, DocumentStore.FILE, "raw"} and not any(n.startswith("gen-") for n in names):
        raise IndexStateError(f"{path} is not a semsearch index: restore to a new path")
    try:
        report = check_index(path)
    except SemsearchError as error:
        return f"damaged: {error}"
    return "healthy" if report.healthy else f"damaged: {report.summary()}"


def _unpack(backup_path: Path, staging: Path) -> None:
    if backup_path.is_file():
        try:
            with tarfile.open(backup_path, "r:*") as tar:
                if hasattr(tarfile, "data_filter"):
                    tar.extractall(staging, filter="data")  # no paths outside, no links out, no devices
                else:  # Pythons before the filters: regular files and directories inside, nothing else
                    members = tar.getmembers()
                    for member in members:
                        inside = not member.name.startswith("/") and ".." not in Path(member.name).parts
                        if not inside or not (member.isfile() or member.isdir()):
                            raise IndexStateError(f"{backup_path}: {member.name!r} is not a backup's file")
                    tar.extractall(staging, members)
        except (tarfile.TarError, EOFError) as error:
            raise IndexStateError(
                f"{backup_path} is not a readable backup archive ({brief(error)})"
            ) from None
        return
    record = read_record(backup_path)
    if record is None:
        raise IndexStateError(f"{backup_path} is not a semsearch backup (no {BACKUP_FILE})")
    for name in [*record["files"], BACKUP_FILE]:
        (staging / name).parent.mkdir(parents=True, exist_ok=True)
        if (backup_path / name).is_file():  # a missing one fails its checksum next
            shutil.copyfile(
                backup_path / name, staging / name
            )  # copies: the backup stays apart from the index


def _swap_in(staging: Path, path: Path, wait: float) -> None:
    """Rename the restored index into place. Over an existing one: holding its writer lock (no write is half
    done), the two directories are exchanged in one step where the system can (Linux renameat2), else the old
    one is renamed away first; then the old one is removed."""
    if not path.exists():
        os.rename(staging, path)
        fsync_directory(path.parent)
        return
    if not any(path.iterdir()):
        path.rmdir()
        os.rename(staging, path)
        fsync_directory(path.parent)
        return
    lock = WriterLock(path)
    if cannot_write(path) is None:
        lock.acquire(wait)
    try:
        if not _exchange(staging, path):
            aside = staging.with_name(staging.name + "-old")
            os.rename(path, aside)
            os.rename(staging, path)
            os.rename(aside, staging)
        fsync_directory(path.parent)
    finally:
        lock.release()
    shutil.rmtree(staging, ignore_errors=True)  # the old index now


def _exchange(first: Path, second: Path) -> bool:
    """Swap two directories atomically (renameat2 RENAME_EXCHANGE); False where the system cannot."""
    at_cwd, rename_exchange = -100, 2
    try:
        renameat2 = ctypes.CDLL(None, use_errno=True).renameat2
    except (AttributeError, OSError):
        return False
    if renameat2(at_cwd, os.fsencode(first), at_cwd, os.fsencode(second), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.ENOSYS, errno.EINVAL, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(second))
