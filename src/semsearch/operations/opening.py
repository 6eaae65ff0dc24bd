"""Making and opening an index directory (the facade's create, open and open_or_create): a new one is written
whole under the writer lock; an existing one is opened at its latest generation, refusing options that
contradict it."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

from ..errors import IndexStateError
from ..ingest.creation import check_compatible, check_new_directory, new_settings
from ..ingest.documents import Corpus
from ..ingest.first import is_index
from ..settings import NO_MODEL, IndexOptions
from ..storage.faults import fault_point
from ..storage.generations import cannot_write
from ..storage.manifest import FILE, IndexState, Manifest
from .directory import IndexDirectory, derived_files


def create(path: Path, options: IndexOptions, wait: float) -> IndexDirectory:
    """A new, empty index directory; the transform is fitted when the first documents arrive."""
    check_new_directory(path)
    settings = new_settings(options)  # loads the model first: nothing is written for one that fails
    path.mkdir(parents=True, exist_ok=True)
    directory = IndexDirectory(path, Manifest(settings, IndexState()), wait)
    with closed_on_error(directory), directory.writing(refresh=False):
        if (path / FILE).exists():
            raise IndexStateError(f"{path} was just made an index by another process")
        with directory.store.transaction():
            directory.store.set_generation(0)
        fault_point("creating")
        directory.manifest = directory.manifest.save(path)
    return directory


def open_directory(path: Path, wait: float) -> IndexDirectory:
    """An existing index at its latest generation (not an index: Manifest.load says so)."""
    directory = IndexDirectory(path, Manifest.load(path), wait, cannot_write(path))
    with closed_on_error(directory), directory.store.guarded():
        directory.manifest = directory.generations.read(directory.lock, derived_files)
    return directory


def open_or_create(
    path: Path, options: IndexOptions, wait: float, corpus: Corpus | None = None
) -> IndexDirectory:
    """The index at `path` (options that contradict it refused), or a new one made with them; with a checked
    `corpus` that brings its own vectors and no model named, a new index has no model and their width."""
    width = corpus.check().vector_width if corpus is not None else None
    if not is_index(path):
        if width is not None and options.model is None:
            options = replace(options, model=NO_MODEL)
        return create(path, replace(options, dim=width or options.dim), wait)
    directory = open_directory(path, wait)
    with closed_on_error(directory):
        check_compatible(path, directory.settings, options)
    if options.batch_size:  # a setting of this run's encoding, not of the index
        settings = directory.settings.with_changes(batch_size=options.batch_size)
        directory.manifest = Manifest(settings, directory.state)
    return directory


@contextlib.contextmanager
def closed_on_error(directory: IndexDirectory) -> Iterator[None]:
    try:
        yield
    except BaseException:
        directory.close()
        raise
