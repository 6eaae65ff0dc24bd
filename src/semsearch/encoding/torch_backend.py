"""The torch backend: the transformer itself, with the pooling written in torch. Its forward pass (`embed`)
is also what the onnx backend exports and checks its graph against. torch is imported inside the functions,
so a process that never encodes with torch never loads it."""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import TYPE_CHECKING

import numpy as np

from ..errors import ModelError
from ..settings import Pooling, Quantize
from ..threads import one_torch_thread
from .backend import EncoderBackend

if TYPE_CHECKING:
    import torch


@functools.lru_cache(maxsize=4)
def load_model(path: str, quantize: Quantize | str = Quantize.NONE) -> torch.nn.Module:
    """The torch model (tokens come from `Tokenizer`), loaded once per process, directory and weights."""
    import torch  # imported here so the CLI starts without it
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:
        model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    # any failure to read the files (truncated weights, bad JSON, ...) is the model's
    except Exception as error:
        raise ModelError(f"{path}: cannot load the model ({type(error).__name__}: {error})") from None
    model.eval()
    if quantize == Quantize.INT8:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's notice that quantization is moving to torchao
            # Per output channel: cosine to the fp32 vectors 0.95-0.98 on short sentences, 0.92-0.95 with
            # one scale per tensor, at the same speed.
            qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
            model = torch.ao.quantization.quantize_dynamic(
                model, {torch.nn.Linear: qconfig}, dtype=torch.qint8
            )
    return model


def embed(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    pooling: Pooling,
    normalize: bool,
) -> torch.Tensor:
    """Sentence vectors from a transformer (torch tensors in and out): the torch backend's forward pass, and
    what the ONNX graph is traced from."""
    import torch

    output = model(
        input_ids=input_ids,
        attention_mask=attention_mask,
        output_hidden_states=pooling is Pooling.FIRST_LAST_AVG,
    )
    if pooling is Pooling.CLS:
        pooled = output.last_hidden_state[:, 0]
    elif pooling is Pooling.MEAN:
        pooled = _masked_mean(output.last_hidden_state, attention_mask)
    else:
        # BERT-whitening's first-last-avg: hidden_states[0] is the embedding layer, [1] the first block.
        layers = output.hidden_states
        pooled = _masked_mean((layers[1] + layers[-1]) / 2, attention_mask)
    if normalize:
        pooled = torch.nn.functional.normalize(pooled, dim=-1)
    return pooled


def _masked_mean(hidden: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)


class TorchBackend(EncoderBackend):
    """The model run by torch, for models the exporter cannot reproduce."""

    _model: torch.nn.Module | None = None

    def load(self) -> None:
        if self._model is None:
            self._model = load_model(str(self.spec.path), self.spec.quantize)

    def run(self, ids: np.ndarray, mask: np.ndarray, threads: int = 0) -> np.ndarray:
        import torch

        if self._model is None:
            raise ModelError(f"{self.spec.path}: the torch backend runs only once loaded")
        with one_torch_thread() if threads == 1 else contextlib.nullcontext(), torch.inference_mode():
            spec = self.spec
            vectors = embed(
                self._model, torch.from_numpy(ids), torch.from_numpy(mask), spec.pooling, spec.normalize
            )
        return vectors.float().numpy()

    def release(self) -> None:
        # The model stays in load_model's cache: the next encoder of this directory reuses it.
        self._model = None
