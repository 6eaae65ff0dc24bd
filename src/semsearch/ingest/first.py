"""A first ingest is one step: the new index is built in a directory beside its target, `.NAME.partial`, and
renamed into place once complete. An interrupted first ingest leaves no index at the target (`check` and
`query` say there is none); running it again resumes in the partial directory, reusing what was encoded.
A first ingest that fails on its input, or on a full disk, removes the partial directory."""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

from ..errors import IndexStateError, SemsearchError
from ..storage.files import fsync_directory
from ..storage.manifest import FILE, PENDING
from .creation import check_new_directory
from .resume import start_afresh

# Errors after which the partial directory is not worth keeping to resume (a disk full: free its space).
DISCARDING = (errno.ENOSPC, errno.EFBIG, errno.EDQUOT)


def is_partial(path: Path) -> bool:
    """A directory `building` gives a first ingest (no reader sees it)."""
    return path.name.startswith(".") and path.name.endswith(".partial")


def is_index(path: Path) -> bool:
    return (path / FILE).exists() or (path / PENDING).exists()


def partial_of(target: Path) -> Path:
    return target.parent / f".{target.name}.partial"


def target_of(path: Path) -> Path:
    """The directory an index path names: a symlink is followed, one to nothing is an error."""
    if path.is_symlink() and not path.exists():
        raise IndexStateError(f"{path} is a symbolic link to {os.readlink(path)}, which does not exist")
    return path.resolve() if path.is_symlink() else path


@contextlib.contextmanager
def building(path: Path, identity: list | None = None) -> Iterator[Path]:
    """Where to write an ingest into `path`: the index itself when it exists, else the partial directory
    beside it, published to `path` when the block completes. `identity`: the corpus's (resume.py); a partial
    directory that kept resume points of another corpus starts afresh."""
    target = target_of(path)
    if is_index(target):
        yield target
        return
    check_new_directory(target)
    partial = partial_of(target)
    if partial.is_dir():
        start_afresh(partial, identity)
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        yield partial
    except SemsearchError:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    except OSError as error:
        if error.errno in DISCARDING:
            shutil.rmtree(partial, ignore_errors=True)
        raise
    publish(partial, target)


def publish(partial: Path, target: Path) -> None:
    """Move a complete index into place: readers see no index, then the whole one."""
    check_new_directory(target)  # another process may have made one meanwhile
    if target.is_dir():
        shutil.rmtree(target)  # empty, or what a killed create left (creation.CREATE_LEFTOVERS)
    try:
        os.rename(partial, target)
    except OSError as error:
        raise IndexStateError(
            f"the new index is complete in {partial} but could not be moved to {target}: {error.strerror}"
        ) from None
    fsync_directory(target.parent)
