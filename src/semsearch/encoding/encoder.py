"""Encoding: texts in, sentence vectors out, from a local Hugging Face model directory (never a hub)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from pathlib import Path

import numpy as np

from ..errors import DataError
from ..settings import DEFAULT_BACKEND, Backend, Pooling, Quantize
from ..threads import threads_counted
from .backend import EncoderBackend, EncodingSpec, Int8Method
from .cache import EncodingCache, cache_directory_from_environment
from .external import ExternalRunner, UnitTokenizer, external_model
from .model import model_fingerprint, read_model_defaults, resolve_model_path
from .onnx_backend import OnnxBackend
from .tokenizer import Tokenizer, load_tokenizer, padded
from .torch_backend import TorchBackend

# Padded tokens per batch when no batch size is given. Measured here (2 cores, idle): WordNet glosses (~22
# tokens) 245 docs/s at 2048 against 180 with batches of 32 texts (and 183 at 8192); SciFact abstracts
# (~256 tokens) 20-22 docs/s at 2048 against 16.5 with batches of 32.
TOKEN_BUDGET = 2048
MAX_BATCH = 512  # texts per batch at most, however short
FEW_TEXTS = 4  # encoded on one thread
# Padded tokens that cost about what another call of the model costs (1-3 ms of MiniLM's 0.1 ms a token): a tight
# batch (`encode(tight=True)`) ends before a text that would add more padding than this to the texts before it.
# A renewal of the calibration's few texts (STS-B dev: 910 of its 2,883 tokens were padding) encodes in 0.27 CPU-s,
# not 0.34; its vectors equal to fp32's jitter (1.5e-7, onnx_backend.py), not bit for bit: not the ingest's.
PADDING_PER_CALL = 32
# Padded tokens a tight batch holds at most: a renewal's few texts in pieces small enough to share the cores
# side by side, longest first (STS-B dev's 124 texts: 0.10 s against 0.19 in two to three batches, and less
# CPU, 0.20 s against 0.24: a piece of the model's work fits the caches); the vectors equal to fp32's jitter
TIGHT_TOKENS = 384
CHARS_PER_TOKEN = 64  # text read per token of max_length (word pieces average about 4 characters)

BACKEND_CLASSES: dict[Backend, type[EncoderBackend]] = {
    Backend.ONNX: OnnxBackend,
    Backend.TORCH: TorchBackend,
}


class Encoder:
    """A frozen transformer that turns texts into float32 sentence vectors.

    Texts are tokenised once per call, sorted by length and batched so padding is small (about 1.6x faster
    than input order on this model); results come back in input order. Batches hold `batch_size` texts if
    given, else as many as fit TOKEN_BUDGET padded tokens: short texts go in large batches, long ones in
    small, which is faster on CPU either way and bounds the activations' memory."""

    threads = 0  # the backend's threads for a batch of many texts (0: one per core); a cluster's task sets 1

    def __init__(
        self,
        model: str | Path | None = None,
        *,
        pooling: Pooling | str | None = None,
        max_length: int | None = None,
        normalize: bool | None = None,
        batch_size: int | None = None,
        quantize: Quantize | str = Quantize.NONE,
        backend: Backend | str = DEFAULT_BACKEND,
        int8_method: Int8Method | str = Int8Method.PER_ROW,  # an index made before per-row gives "dynamic"
    ):
        self.quantize = Quantize.parse(quantize, "quantize")
        self.int8_method = Int8Method.parse(int8_method, "int8_method")
        self.backend = Backend.parse(backend, "backend")
        self.path = resolve_model_path(model)
        external = external_model(self.path)
        self._external = ExternalRunner(external) if external is not None else None
        defaults = read_model_defaults(self.path)
        self.pooling = Pooling.parse(pooling, "pooling") if pooling is not None else defaults.pooling
        self.max_length = max_length or defaults.max_length
        self.normalize = defaults.normalize if normalize is None else normalize
        self.dim = defaults.dim
        self.batch_size = batch_size
        spec = EncodingSpec(
            self.path, self.pooling, self.normalize, self.quantize, self.max_length, self.int8_method
        )
        self._backend = BACKEND_CLASSES[self.backend](spec)
        self._cache_identity: str | None = None

    @property
    def graph_path(self) -> Path | None:
        """The cached ONNX graph this encoder runs, once loaded (None on the torch backend)."""
        return self._backend.graph

    def load(self) -> Encoder:
        """Load the tokenizer and model now (else on first use); a directory whose files cannot be loaded
        raises ModelError, a model the onnx backend cannot export ExportError. Loaded once per process and
        directory: queries and tests reuse them."""
        if self._external is not None:  # a named model run by its own package (external.py)
            self._external.load()
            return self
        load_tokenizer(str(self.path), self.max_length)
        self._backend.load()
        return self

    def release(self) -> None:
        """Free the backend's hold on the model (the onnx backend's sessions of this encoder's graph),
        loaded again on the next use."""
        if self._external is None:
            self._backend.release()

    def tokenize(self, texts: Sequence[str]) -> list[list[int]]:
        """Token ids, truncated to max_length. Texts are cut to CHARS_PER_TOKEN characters a token first: the
        tokenizer reads a whole text before truncating (a 50 MB line took minutes and GBs), and max_length
        word pieces never span that much text but for runs of whitespace."""
        limit = self.max_length * CHARS_PER_TOKEN
        return load_tokenizer(str(self.path), self.max_length)([text[:limit] for text in texts])

    @property
    def tokenizer(self) -> Tokenizer | UnitTokenizer:
        if self._external is not None:
            return UnitTokenizer(self.max_length)
        return load_tokenizer(str(self.path), self.max_length)

    def encode(
        self,
        texts: Sequence[str],
        progress: Callable[[int], None] | None = None,
        *,
        threads: int | None = None,
        tight: bool = False,
        side_by_side: int = 1,
    ) -> np.ndarray:
        """Vectors of shape (len(texts), dim), float32, in input order; `progress(n)` after each batch of n;
        `threads`: the backend's for this call (None: the encoder's `threads`; the same vectors either way);
        `tight`: batches that end where padding would cost more than another call (PADDING_PER_CALL);
        `side_by_side`: batches run at once, each on `threads` (a backend that can: `concurrent`)."""
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        for text in texts:  # a lone surrogate (a query from a JSON "\ud800" escape) no tokenizer takes
            if not text.isascii() and any(0xD800 <= ord(char) <= 0xDFFF for char in text):
                raise DataError("the text holds a lone surrogate: not valid Unicode")
        threads = self.threads if threads is None else threads
        if self._external is not None:
            self.load()
            threads = 1 if len(texts) <= FEW_TEXTS else threads
            return self._encode_external(self._external, texts, threads, progress)
        token_ids = self.tokenize(texts)
        cache = self._cache()
        if cache is None:
            return self._run(token_ids, progress, threads, tight, side_by_side)
        # kept by the model's very input, so a passage and a document truncated to the same tokens are one
        keys = [np.asarray(ids, dtype=np.int32).tobytes() for ids in token_ids]
        out, missing = cache.get(keys)
        if progress and len(missing) < len(texts):
            progress(len(texts) - len(missing))
        if missing:
            fresh = self._run([token_ids[row] for row in missing], progress, threads, tight, side_by_side)
            out[missing] = fresh
            cache.put([keys[row] for row in missing], fresh)
        return out

    def _cache(self) -> EncodingCache | None:
        """The encoding cache of these settings, if the environment names one (cache.py) and a text's vector
        does not depend on its batch: fp32 weights, or int8 with per-row activations (not the older dynamic
        int8, nor torch's)."""
        directory = cache_directory_from_environment()  # first: without one, nothing else is read
        if directory is None or not (
            self.quantize is Quantize.NONE
            or (self.backend is Backend.ONNX and self.int8_method is Int8Method.PER_ROW)
        ):
            return None
        if self._cache_identity is None:
            fingerprint = model_fingerprint(self.path)
            self._cache_identity = (
                f"{fingerprint}|{self.backend.value}|{self.quantize.value}|{self.int8_method.value}|"
                f"{self.pooling.value}|{self.normalize}|{self.max_length}"
            )
        return EncodingCache(directory, self._cache_identity, self.dim)

    def _run(
        self,
        token_ids: list[list[int]],
        progress: Callable[[int], None] | None,
        threads: int,
        tight: bool = False,
        side_by_side: int = 1,
    ) -> np.ndarray:
        """The model's vectors of these token ids, batched by length, in input order; `side_by_side` batches
        at a time on threads of their own (the backend's runs release the GIL)."""
        self.load()
        # A query's few tokens give the threads nothing to share; they only wait on each other, and far
        # longer when other work has the cores (measured on a busy 2-core machine: 18-23 ms a query on one
        # thread, 62 ms on two).
        threads = 1 if len(token_ids) <= FEW_TEXTS else threads
        order = np.argsort([len(ids) for ids in token_ids], kind="stable")
        out = np.empty((len(token_ids), self.dim), dtype=np.float32)
        pad_id = self.tokenizer.pad_id

        def run(rows: np.ndarray) -> np.ndarray:
            ids, mask = padded([token_ids[i] for i in rows], pad_id)
            return self._backend.run(ids, mask, threads)

        batches = list(self.batches(order, [len(token_ids[i]) for i in order], tight))
        ran: Iterable[tuple[np.ndarray, np.ndarray]]
        if side_by_side > 1 and len(batches) > 1 and self._backend.concurrent:
            from concurrent.futures import ThreadPoolExecutor

            # the longest first: the last to start are short, so the threads end together
            batches.sort(key=lambda rows: -len(rows) * len(token_ids[rows[-1]]))
            with ThreadPoolExecutor(side_by_side) as pool:
                ran = list(zip(batches, pool.map(run, batches)))
        else:
            ran = ((rows, run(rows)) for rows in batches)
        for rows, vectors in ran:
            out[rows] = vectors
            if progress:
                progress(len(rows))
        return out

    def _encode_external(
        self,
        runner: ExternalRunner,
        texts: Sequence[str],
        threads: int,
        progress: Callable[[int], None] | None,
    ) -> np.ndarray:
        """An external model's vectors, MAX_BATCH texts a call (each cut to max_length units' characters)."""
        limit = self.max_length * CHARS_PER_TOKEN
        out = np.empty((len(texts), self.dim), dtype=np.float32)
        for start in range(0, len(texts), MAX_BATCH):
            batch = [text[:limit] for text in texts[start : start + MAX_BATCH]]
            out[start : start + len(batch)] = runner.encode(batch, threads)
            if progress:
                progress(len(batch))
        return out

    def batches(self, order: np.ndarray, lengths: list[int], tight: bool = False) -> Iterator[np.ndarray]:
        """Consecutive runs of `order` (sorted by length, ascending; `lengths` in that order): `batch_size`
        texts each, or as many as fit TOKEN_BUDGET padded tokens (MAX_BATCH at most); `tight`: each ending
        before a text that would pad those before it by more than PADDING_PER_CALL tokens, or hold more than
        TIGHT_TOKENS padded tokens."""
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
                or (tight and (end - start) * (lengths[end] - lengths[end - 1]) > PADDING_PER_CALL)
                or (tight and (end + 1 - start) * lengths[end] > TIGHT_TOKENS)
            ):
                yield order[start:end]
                start = end


def for_few_texts(encoder: Encoder) -> Callable[[Sequence[str]], np.ndarray]:
    """`encoder.encode` for a few hundred short texts at most (a calibration's renewal: what changed): tight
    batches of TIGHT_TOKENS at most, side by side, one a core (threads_allowed), each on one thread, the
    longest first. A second thread inside such a batch only waits on the first (STS-B dev's 124 texts:
    0.29-0.31 CPU-s on one against 0.38-0.42 on two); side by side, the same vectors bit for bit. The model
    started on a thread of its own while the index is read gained no wall time (its import and tokenizer hold
    the GIL; its session's start does not, but the draw is too short to hide it: 0.724 s against 0.730)."""
    side_by_side = threads_counted()

    def encode(texts: Sequence[str]) -> np.ndarray:
        return encoder.encode(texts, threads=1, tight=True, side_by_side=side_by_side)

    return encode
