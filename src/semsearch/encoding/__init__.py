"""Texts to sentence vectors with a local Hugging Face model, on ONNX Runtime or torch.

Modules, each importing only those before it: `model` (which directory, what its configs say),
`tokenizer`, `backend` (the interface), `torch_backend`, `onnx_backend` (export, check, quantize, cache),
`encoder` (batching). Neither torch nor ONNX Runtime is imported until a model is loaded."""

from __future__ import annotations

from .backend import EncoderBackend, EncodingSpec
from .encoder import BACKEND_CLASSES, FEW_TEXTS, MAX_BATCH, TOKEN_BUDGET, Encoder
from .model import (
    WEIGHT_FILES,
    ModelDefaults,
    model_fingerprint,
    model_name,
    read_model_defaults,
    resolve_model_path,
    weights_file,
)
from .onnx_backend import ExportError, OnnxBackend, cache_directory, ensure_graph, graph_path
from .tokenizer import Tokenizer, load_tokenizer, padded
from .torch_backend import TorchBackend, embed, load_model

__all__ = [
    "BACKEND_CLASSES",
    "FEW_TEXTS",
    "MAX_BATCH",
    "TOKEN_BUDGET",
    "WEIGHT_FILES",
    "Encoder",
    "EncoderBackend",
    "EncodingSpec",
    "ExportError",
    "ModelDefaults",
    "OnnxBackend",
    "Tokenizer",
    "TorchBackend",
    "cache_directory",
    "embed",
    "ensure_graph",
    "graph_path",
    "load_model",
    "load_tokenizer",
    "model_fingerprint",
    "model_name",
    "padded",
    "read_model_defaults",
    "resolve_model_path",
    "weights_file",
]
