"""What the Encoder asks of a backend: load the model once, turn padded token ids into sentence vectors,
and let go of what it holds. The backends (torch_backend, onnx_backend) differ only behind this."""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..settings import Choice, Pooling, Quantize


class Int8Method(Choice):
    """How the onnx backend's int8 graph quantizes the activations entering its Linear layers (their weights are
    int8 per output channel either way). An index records it (manifest `int8_method`)."""

    # One scale per row (token), from that row alone: a text's vector is the same whatever is batched with it.
    PER_ROW = "per-row"
    # ONNX Runtime's quantize_dynamic: one scale per batch, so a vector depends on its batch (indexes made
    # before per-row; their queries keep it, so they answer as they did).
    DYNAMIC = "dynamic"


@dataclass(frozen=True)
class EncodingSpec:
    """The model and the settings its vectors depend on."""

    path: Path
    pooling: Pooling
    normalize: bool
    quantize: Quantize
    max_length: int  # the tokenizer's; the onnx backend tokenizes its probe texts with it
    int8_method: Int8Method = Int8Method.PER_ROW  # of the onnx backend (torch quantizes per batch)


class EncoderBackend(ABC):
    """One way to run the model. `load` may be called before every encoding: it loads only the first time."""

    graph: Path | None = None  # the exported graph it runs, for a backend that runs one
    concurrent = False  # whether runs may overlap on threads of their own (ONNX Runtime's may)

    def __init__(self, spec: EncodingSpec):
        self.spec = spec

    @abstractmethod
    def load(self) -> None:
        """Load the model now; ModelError (or its ExportError) if it cannot be loaded."""

    @abstractmethod
    def run(self, ids: np.ndarray, mask: np.ndarray, threads: int = 0) -> np.ndarray:
        """Sentence vectors (float32, one row per row of `ids`) from int64 token ids and attention mask.
        `threads`: 0 for the backend's default (every core), 1 for work too small to share."""

    @abstractmethod
    def release(self) -> None:
        """Free what this backend holds beyond the process-wide caches (loaded again on the next use)."""
