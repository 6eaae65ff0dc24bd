"""The isotropy figures `info` shows: as the manifest keeps them (every write measures them), or for an index
written before they were kept, measured now from its files; with the advice they give (transforms/advice.py)."""

from __future__ import annotations

from typing import Any

from ..transforms.advice import advise
from ..transforms.isotropy import measure
from .directory import IndexDirectory


def current(index: IndexDirectory) -> dict[str, Any] | None:
    """The index's isotropy object with its advice; None for an empty index."""
    if index.state.count == 0:
        return None
    figures = index.state.isotropy
    if figures is None:  # an index written before the figures were kept
        figures = measure(index.stats(), index.transform, index.raw, index.store.vector_pks())
    return {**figures, "advice": advise(figures)}
