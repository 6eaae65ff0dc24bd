"""The encoder an index was built with, opened for its settings: the one factory every process uses (the
facade's directory, an ingest's fidelity check, a Dask worker)."""

from __future__ import annotations

from pathlib import Path

from ..errors import IndexStateError
from ..settings import NO_MODEL
from ..storage.manifest import IndexSettings
from .encoder import Encoder
from .model import model_fingerprint, resolve_model_path


def make_encoder(path: Path, settings: IndexSettings, quantize: str) -> Encoder:
    """The encoder of the index at `path` (with `quantize` weights), after checking the model is its own."""
    if settings.model == NO_MODEL:
        raise IndexStateError(
            f"{path} holds vectors made elsewhere and has no model to encode text: give vectors "
            "(query --vector FILE; ingest --vectors FILE or --vector-field F)"
        )
    model_path = resolve_model_path(settings.model)
    if model_fingerprint(model_path) != settings.model_fingerprint:
        raise IndexStateError(f"the model at {model_path} is not the one {path} was built with")
    return Encoder(
        model_path,
        pooling=settings.pooling,
        max_length=settings.max_length,
        normalize=settings.normalize,
        batch_size=settings.batch_size,
        quantize=quantize,
        backend=settings.backend,
        int8_method=settings.int8_method,
    )
