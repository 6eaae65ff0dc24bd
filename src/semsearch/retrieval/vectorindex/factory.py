"""The vector-index kinds by name (the `--index-type` values), `auto`'s choice among them, and the index of a
kind made new, from a file, from a cluster's bytes or from an export's trained arrays."""

from __future__ import annotations

from pathlib import Path

import faiss
import numpy as np

from ...errors import SettingsError
from ...storage.damage import brief, derived, size_problem
from . import wire
from .base import VectorIndex
from .codes import Codes
from .flat import Flat, FlatSQ8
from .hnsw import HNSW, HNSWSQ8, Graph
from .ivf import IVF
from .pq import PQ

KINDS: dict[str, type[VectorIndex]] = {kind.kind: kind for kind in (Flat, FlatSQ8, HNSW, HNSWSQ8, IVF, PQ)}
INDEX_TYPES = (*KINDS, "auto")
GRAPHS = tuple(name for name, kind in KINDS.items() if issubclass(kind, Graph))
CODED = tuple(name for name, kind in KINDS.items() if issubclass(kind, Codes))
LISTED = tuple(name for name, kind in KINDS.items() if issubclass(kind, IVF))

# `auto`: exact search while documents x dims stay within this many documents at AUTO_REFERENCE_DIMS, hnsw-sq8
# above, where an exact scan costs more than a graph's search (benchmarks/results/index-type-quality.md)
AUTO_FLAT_LIMIT, AUTO_REFERENCE_DIMS = 50_000, 128
# within it, the exact scan over 8-bit codes from this many rows (flat-sq8, benchmarks/results/index-type-quality.md):
# a range trained on fewer rows clips the rows added next, and the bytes saved are few
AUTO_CODED_ROWS = 1024


def resolve_index_type(index_type: str, count: int, dim: int = AUTO_REFERENCE_DIMS) -> str:
    """The concrete type for `count` documents of `dim` dims (`auto` picks by both; see AUTO_FLAT_LIMIT)."""
    if index_type not in INDEX_TYPES:
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(INDEX_TYPES)})")
    if index_type == "auto":
        if count * dim > AUTO_FLAT_LIMIT * AUTO_REFERENCE_DIMS:
            return HNSWSQ8.kind
        return Flat.kind if count < AUTO_CODED_ROWS else FlatSQ8.kind
    return index_type


def create_index(dim: int, index_type: str = "flat", count: int = 0) -> VectorIndex:
    """An empty index of a concrete type (see `resolve_index_type`); `count`: the expected number of
    vectors, which sizes ivf and pq."""
    if index_type not in KINDS:
        raise SettingsError(f"unknown index type {index_type!r} (known: {', '.join(KINDS)})")
    return KINDS[index_type].create(dim, count)


def wrap(index: faiss.Index, blocks: list[int] | None = None) -> VectorIndex:
    """A FAISS index as the VectorIndex of the kind that holds its structure (VectorIndex.holds); ValueError
    for a structure no kind makes."""
    concrete = faiss.downcast_index(index)
    for kind in KINDS.values():
        if kind.holds(concrete):
            return kind(index, blocks)
    raise ValueError(f"a FAISS {type(concrete).__name__}, which no index type makes")


def load_index(directory: Path, blocks: list[int] | None = None) -> VectorIndex:
    """The saved index, and its adds where its manifest keeps them (`blocks`); a file FAISS cannot read
    whole is damaged."""
    path = Path(directory) / VectorIndex.FILE
    if problem := size_problem(path):
        raise derived(path, problem)
    try:
        index = faiss.read_index(str(path))
    except RuntimeError as error:  # FAISS reports a short or garbled file so, naming it
        reason = brief(error).replace(f" in {path}", "").replace(" (Success)", "")
        raise derived(path, f"unreadable by FAISS: {reason}") from None
    try:
        return wrap(index, blocks)  # already of its own class; a downcast here would not own it
    except ValueError as error:
        raise derived(path, str(error)) from None


def index_of_bytes(data: np.ndarray) -> VectorIndex:
    """An index sent as `VectorIndex.to_bytes` gives it."""
    return wrap(wire.index_of_bytes(data))


def lists_problem(kind: str, dim: int, trained: dict[str, np.ndarray]) -> str | None:
    """What keeps these trained arrays (VectorIndex.trained_lists) from making an empty `kind` index of `dim`
    dims, or None where they fit: centroids of `dim` dims; for pq alone, codebooks of 4 or 8 bits whose
    sub-spaces split `dim`; every number finite."""
    backend, centroids = KINDS.get(kind), trained.get("centroids")
    if (
        backend is None
        or not issubclass(backend, IVF)
        or not isinstance(centroids, np.ndarray)
        or centroids.ndim != 2
    ):
        return f"no cells' centroids for {kind}"
    return backend.trained_problem(dim, trained)


def index_with_trained_lists(dim: int, kind: str, trained: dict[str, np.ndarray]) -> VectorIndex:
    """An empty ivf or pq index of `dim` dims trained with these (`trained_lists`: its number of lists,
    sub-spaces and bits theirs), as FAISS's training leaves it; ValueError where they do not fit."""
    if problem := lists_problem(kind, dim, trained):
        raise ValueError(problem)
    backend = KINDS[kind]
    assert issubclass(backend, IVF)
    return backend.with_trained(dim, trained)
