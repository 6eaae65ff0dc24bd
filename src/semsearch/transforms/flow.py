"""BERT-flow (Li et al., EMNLP 2020) as a transform: a small Glow-style normalizing flow (flow_layers.py)
trained by maximum likelihood to map the corpus's vectors to a standard Gaussian, the encoder frozen.

Inputs are first standardised with the streaming statistics on the directions the corpus spans (mean 0,
covariance I there): along a rank-deficient covariance's null directions the likelihood is unbounded and
training diverges.

Files: `flow.safetensors` (flow weights and buffers, standardisation and PCA arrays) and `flow.json` (sizes
to rebuild the modules, and the training report). Never pickled.

Training draws no progress bar: it reports rows to an optional `progress` callback and logs each epoch."""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import torch

from ..errors import IndexStateError, SettingsError
from ..settings import TransformKind, TransformSpec
from ..storage.damage import brief, derived, json_problem, safetensors_problem
from ..threads import one_torch_thread
from .base import FitData, Progress, Transform, VectorBatches, load_arrays, save_arrays
from .flow_layers import Flow
from .linear import LinearTransform
from .stats import RunningStats

log = logging.getLogger(__name__)

LEARNING_RATE, BATCH_SIZE = 1e-3, 64
SHUFFLE_BUFFER = 4096  # rows shuffled together while streaming: memory stays bounded whatever the corpus
HELD_OUT_ROWS = 512  # at most this many rows measure held-out NLL ...
HELD_OUT_MIN_CORPUS = 500  # ... taken out of training only from corpora at least this large
APPLY_ROWS = 4096  # rows per forward pass in apply(): bounds the activations' memory
FORMAT_VERSION = 1  # of flow.json and flow.safetensors; load refuses others
STANDARDISE = TransformSpec(TransformKind.WHITEN, power=1.0)


class FlowTransform(Transform):
    """x -> PCA(flow(standardise(x))): the PCA (a rotation keeping the first `dims` principal directions of
    the flow's outputs) only when `dims` is below the corpus's rank."""

    kind = TransformKind.FLOW
    WEIGHTS, CONFIG = "flow.safetensors", "flow.json"
    FILES = (CONFIG, WEIGHTS)

    def __init__(
        self,
        spec: TransformSpec,
        in_dim: int,
        standardise: LinearTransform,
        flow: Flow,
        pca: tuple[np.ndarray, np.ndarray] | None,
        training_report: dict,
    ):
        super().__init__(spec, in_dim)
        self.standardise, self.flow, self.pca = standardise, flow.eval(), pca
        self.training_report = training_report

    @property
    def rank(self) -> int:
        return self.flow.dim

    @property
    def out_dim(self) -> int:
        return self.rank if self.pca is None else self.pca[1].shape[1]

    @classmethod
    def fit(cls, spec: TransformSpec, data: FitData) -> FlowTransform:
        """Train on the raw vectors for `spec.epochs` passes; the rows reported sum to epochs x count."""
        stats, vectors = data.stats, data.vectors
        if vectors is None:
            raise SettingsError(
                "flow trains on the documents' raw vectors, and none were given "
                "(an index refits flow only from the raw vectors it keeps)"
            )
        if stats.count < 2:
            raise SettingsError(f"flow needs at least 2 documents to train on, got {stats.count}")
        # Whitening on the spanned directions (LinearTransform drops those below RANK_TOLERANCE).
        standardise = LinearTransform.fit(STANDARDISE, data)
        flow = Flow(standardise.out_dim, seed=spec.seed)
        report = _train(flow, standardise, vectors, spec, stats.count, data.report)
        log.info(
            "flow trained in %.1f s: held-out NLL %.3f -> %.3f nats/dim",
            report["train_seconds"],
            report["held_out_nll_before"],
            report["held_out_nll_after"],
        )
        flow.eval()
        pca = None
        if spec.dims is not None and spec.dims > flow.dim:
            log.warning(
                "the corpus spans only %d directions; keeping %d dims, not %d", flow.dim, flow.dim, spec.dims
            )
        if spec.dims is not None and spec.dims < flow.dim:
            pca = _principal_directions(flow, standardise, vectors, spec.dims)
        fitted_spec = replace(spec, dims=None if pca is None else spec.dims)
        return cls(fitted_spec, stats.dim, standardise, flow, pca, report)

    def apply(self, vectors: np.ndarray) -> np.ndarray:
        z = _flow_outputs(self.flow, self.standardise.apply(vectors))
        if self.pca is not None:
            mean, basis = self.pca
            z = (z.astype(np.float64) - mean) @ basis
        return z.astype(np.float32, copy=False)

    def drift(self, stats: RunningStats) -> float | None:
        """The standardisation's drift: the flow was trained on inputs it made isotropic."""
        return self.standardise.drift(stats)

    def save(self, directory: Path) -> None:
        from ..storage.files import atomic_write_text

        directory = Path(directory)
        arrays = {f"flow.{name}": t.detach().numpy() for name, t in self.flow.state_dict().items()}
        arrays.update(self.standardise.arrays("standardise."))
        if self.pca is not None:
            arrays["pca.mean"], arrays["pca.basis"] = self.pca
        save_arrays(directory / self.WEIGHTS, arrays)
        config = {
            "format_version": FORMAT_VERSION,
            "layers": ["actnorm", "invertible_linear_lu", "additive_coupling", "reverse"],
            "in_dim": self.in_dim,
            "rank": self.rank,
            "levels": self.flow.levels,
            "depth": self.flow.depth,
            "hidden": self.flow.hidden,
            "out_dim": self.out_dim,
            "pca_dims": None if self.pca is None else self.out_dim,
            "training": self.training_report,
        }
        atomic_write_text(directory / self.CONFIG, json.dumps(config, indent=2) + "\n")

    @classmethod
    def load(cls, directory: Path, spec: TransformSpec, in_dim: int) -> FlowTransform:
        """The saved flow; a file that is not whole, or does not hold the flow it describes, is damaged."""
        directory = Path(directory)
        for path, problem in (
            (directory / cls.CONFIG, json_problem(directory / cls.CONFIG)),
            (directory / cls.WEIGHTS, safetensors_problem(directory / cls.WEIGHTS)),
        ):
            if problem:
                raise derived(path, problem)
        try:
            return cls._load(directory, spec, in_dim)
        except IndexStateError:
            raise
        except Exception as error:  # a key, a shape or a tensor missing: the files do not hold a whole flow
            raise derived(directory / cls.WEIGHTS, f"unreadable: {brief(error)}") from None

    @classmethod
    def _load(cls, directory: Path, spec: TransformSpec, in_dim: int) -> FlowTransform:
        config = json.loads((directory / cls.CONFIG).read_text())
        if config.get("format_version") != FORMAT_VERSION:
            raise IndexStateError(
                f"{directory / cls.CONFIG} is flow format {config.get('format_version')}; this semsearch "
                f"reads format {FORMAT_VERSION} (refit the index with transform flow)"
            )
        arrays = load_arrays(directory / cls.WEIGHTS)
        standardise = LinearTransform.from_arrays(arrays, STANDARDISE, in_dim, prefix="standardise.")
        flow = Flow(config["rank"], config["levels"], config["depth"], config["hidden"])
        state = {
            name[len("flow.") :]: torch.from_numpy(a)
            for name, a in arrays.items()
            if name.startswith("flow.")
        }
        flow.load_state_dict(state)  # strict: a missing or extra tensor is an error
        pca = (arrays["pca.mean"], arrays["pca.basis"]) if "pca.mean" in arrays else None
        return cls(spec, in_dim, standardise, flow, pca, config["training"])


def _flow_outputs(flow: Flow, standardised: np.ndarray) -> np.ndarray:
    # One torch thread, here and in training: the flow's matrices are small and a second thread mostly
    # waits (measured under load: the flow tests took 190 s on two threads, 24 s on one). It also makes the
    # outputs the same in every process.
    out = []
    with one_torch_thread(), torch.inference_mode():
        for begin in range(0, len(standardised), APPLY_ROWS):
            rows = torch.from_numpy(np.ascontiguousarray(standardised[begin : begin + APPLY_ROWS]))
            out.append(flow(rows)[0].numpy())
    return np.concatenate(out) if out else np.empty((0, flow.dim), dtype=np.float32)


def _principal_directions(
    flow: Flow, standardise: LinearTransform, vectors: VectorBatches, dims: int
) -> tuple[np.ndarray, np.ndarray]:
    """The mean of the flow's outputs and their first `dims` principal directions (a rotation, no scaling:
    the flow already aims at unit variance), from one more streaming pass."""
    outputs = RunningStats(flow.dim)
    for batch in vectors():
        outputs.update(_flow_outputs(flow, standardise.apply(batch)))
    values, basis = np.linalg.eigh(outputs.covariance())
    order = np.argsort(values)[::-1][:dims]
    return outputs.mean, np.ascontiguousarray(basis[:, order])


def _held_out_stride(count: int) -> int:
    """Every stride-th row is held out of training: spread over the whole corpus (not its first rows, which
    may all be one topic), at most ~HELD_OUT_ROWS and at most a tenth of it. 1 (nothing held out, the
    figure then measured on training rows) for small corpora, which need every row to train on."""
    return max(10, math.ceil(count / HELD_OUT_ROWS)) if count >= HELD_OUT_MIN_CORPUS else 1


def _every(vectors: Iterable[np.ndarray], stride: int) -> np.ndarray:
    """Rows 0, stride, 2 stride, ... of the stream (for stride 1, the first HELD_OUT_ROWS)."""
    parts, seen = [], 0
    for batch in vectors:
        first = (-seen) % stride
        parts.append(np.asarray(batch[first::stride], dtype=np.float32))
        seen += len(batch)
        if stride == 1 and seen >= HELD_OUT_ROWS:
            break
    rows = np.concatenate(parts) if parts else np.empty((0, 0), dtype=np.float32)
    return rows[:HELD_OUT_ROWS] if stride == 1 else rows


def _minibatches(
    vectors: Iterable[np.ndarray], rng: np.random.Generator, stride: int
) -> Iterator[np.ndarray]:
    """Shuffled minibatches of BATCH_SIZE rows from a stream of batches, through a bounded shuffle buffer;
    rows 0, stride, 2 stride, ... (the held-out set) left out when stride > 1."""
    buffer: list[np.ndarray] = []
    held, seen = 0, 0
    for batch in vectors:
        if stride > 1:
            start = (-seen) % stride
            seen += len(batch)
            batch = np.delete(batch, np.arange(start, len(batch), stride), axis=0)
        buffer.append(batch)
        held += len(batch)
        if held >= SHUFFLE_BUFFER:
            rows = np.concatenate(buffer)
            rows = rows[rng.permutation(len(rows))]
            whole = len(rows) - len(rows) % BATCH_SIZE
            yield from (rows[i : i + BATCH_SIZE] for i in range(0, whole, BATCH_SIZE))
            buffer, held = [rows[whole:]], len(rows) - whole  # the remainder waits for the next fill
    if held:
        rows = np.concatenate(buffer)
        rows = rows[rng.permutation(len(rows))]
        for i in range(0, len(rows), BATCH_SIZE):
            if len(rows[i : i + BATCH_SIZE]) > 1:  # actnorm's initialisation needs a spread
                yield rows[i : i + BATCH_SIZE]


def _adam(flow: Flow) -> torch.optim.Adam:
    """Adam at LEARNING_RATE, except the invertible linears' triangular factors at LEARNING_RATE / dim.

    Adam moves every entry by about the learning rate whatever its gradient, so a d x d factor changes by
    ~lr * d in norm each step (the fan-in scaling of muP). Measured on 5,000 skewed 300-dim vectors: at
    1e-3 the held-out NLL rose from 1.54 to 1.62 nats/dim in an epoch and kept rising; at 1e-3 / d it fell
    to 1.45, and to 1.44 after 3 epochs (a fixed rotation instead: 1.50).

    Fused: one kernel over all parameters, 4x faster a step at 384 dims than the default (the update of the
    dense factors cost as much as the forward pass). CPU support came in torch 2.4."""
    factors = [p for name, p in flow.named_parameters() if name.endswith((".lower", ".upper"))]
    others = [p for name, p in flow.named_parameters() if not name.endswith((".lower", ".upper"))]
    groups: list[dict[str, Any]] = [{"params": factors, "lr": LEARNING_RATE / flow.dim}, {"params": others}]
    try:
        return torch.optim.Adam(groups, lr=LEARNING_RATE, fused=True)
    except RuntimeError:
        return torch.optim.Adam(groups, lr=LEARNING_RATE)


def _train(
    flow: Flow,
    standardise: LinearTransform,
    vectors: VectorBatches,
    spec: TransformSpec,
    count: int,
    progress: Progress,
) -> dict:
    """Maximum likelihood with Adam over `spec.epochs` streamed passes; returns the training report.

    `progress` hears of each minibatch's rows, and at an epoch's end of the rows it did not train on (held
    out, or a last row alone), so a pass counts `count` rows whatever the held-out share."""
    started = time.perf_counter()
    stride = _held_out_stride(count)
    held_out_rows = _every(vectors(), stride)
    if len(held_out_rows) == 0:
        raise SettingsError("flow found no rows in the documents' vectors to train on")
    held_out = torch.from_numpy(standardise.apply(held_out_rows))
    rng = np.random.default_rng(spec.seed)  # the data order; the flow's initial weights come from its seed
    optimiser = _adam(flow)
    flow.train()
    before: float | None = None
    steps = 0
    epoch_losses: list[float] = []
    with one_torch_thread():
        for epoch in range(spec.epochs):
            epoch_losses, trained = [], 0
            for batch in _minibatches(vectors(), rng, stride):
                x = torch.from_numpy(standardise.apply(batch))
                if before is None:
                    with torch.no_grad():
                        flow(x)  # actnorm's data-dependent initialisation, on the first training batch
                        before = float(flow.nll(held_out))
                loss = flow.nll(x)
                if not torch.isfinite(loss):
                    raise SettingsError(
                        f"flow training diverged (NLL not finite at step {steps}); try another seed"
                    )
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                steps += 1
                epoch_losses.append(loss.item())
                trained += len(batch)
                progress(len(batch))
            if count > trained:
                progress(count - trained)
            if epoch_losses:
                log.info(
                    "flow epoch %d/%d: train NLL %.3f nats/dim", epoch + 1, spec.epochs, np.mean(epoch_losses)
                )
    if before is None:
        raise SettingsError("flow found no training rows in the documents' vectors")
    with torch.no_grad():
        after = float(flow.nll(held_out))
    return {
        "epochs": spec.epochs,
        "seed": spec.seed,
        "learning_rate": LEARNING_RATE,
        "lu_factor_learning_rate": LEARNING_RATE / flow.dim,
        "batch_size": BATCH_SIZE,
        "steps": steps,
        "train_seconds": round(time.perf_counter() - started, 3),
        "nll_unit": "nats per dimension",
        "final_train_nll": round(float(np.mean(epoch_losses)), 5),  # mean over the last epoch
        "held_out_rows": len(held_out),
        "held_out_is_training_data": stride == 1,
        "held_out_nll_before": round(before, 5),
        "held_out_nll_after": round(after, 5),
    }
