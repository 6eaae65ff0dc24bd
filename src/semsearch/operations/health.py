"""Whether what a query loads agrees with the manifest: `health`, `info`'s cheap check (the raw segments'
headers and sizes, the generation's statistics, transform and vector index loaded), and the agreements of the
derived files with the manifest and the store that `check` verifies too (check.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import numpy as np

from ..retrieval.vectorindex import VectorIndex
from ..storage.damage import DamagedFile, derived
from ..storage.manifest import Manifest
from ..storage.rawvectors import lost
from ..transforms import Transform
from ..transforms.stats import RunningStats
from .directory import IndexDirectory, derived_files

OK = "ok"


def health(directory: IndexDirectory) -> str:
    """`info`'s check: what a query loads, loaded, agreeing with the manifest, and the raw segments' headers
    and sizes; the first damaged file is raised (DamagedFile). 'ok' otherwise."""
    raw = directory.raw
    for segment in raw.segments:
        if problem := raw.problem(segment):
            raise lost(raw.directory / segment.name, problem)
    if directory.state.count:
        for damaged in disagreements(
            directory.manifest,
            directory.generation_dir,
            directory.stats(),
            directory.transform,
            directory.vectors,
        ):
            raise damaged
    return OK


def disagreements(
    manifest: Manifest,
    directory: Path,
    stats: RunningStats | None,
    transform: Transform | None,
    vectors: VectorIndex | None,
    live: np.ndarray | None = None,
) -> Iterator[DamagedFile]:
    """Derived files that load but do not fit the manifest (or, given the live rows, the store)."""
    state, settings = manifest.state, manifest.settings
    if stats is not None and (stats.count, stats.dim) != (state.rows, settings.encoder_dim):
        yield derived(
            directory / RunningStats.FILE,
            f"statistics of {stats.count} vectors of {stats.dim} dims; the index holds {state.rows} of "
            f"{settings.encoder_dim}",
        )
    names = derived_files(manifest)
    if transform is not None and transform.out_dim != state.dims and len(names) > 2:
        yield derived(directory / names[1], f"{transform.out_dim} dims out; the manifest says {state.dims}")
    if vectors is not None:
        dims = state.dims if transform is None else transform.out_dim
        if (vectors.count, vectors.dim) != (state.rows, dims):
            yield derived(
                directory / VectorIndex.FILE,
                f"{vectors.count} vectors of {vectors.dim} dims; the index holds {state.rows} of {dims}",
            )
        elif live is not None and not np.array_equal(vectors.ids(), live):
            yield derived(directory / VectorIndex.FILE, "its ids are not the documents' rows")
