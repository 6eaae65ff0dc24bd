"""BERT-flow (Li et al., EMNLP 2020) as a transform: a small Glow-style normalizing flow trained by maximum
likelihood to map the corpus's vectors to a standard Gaussian, the encoder frozen.

Layers, on vectors: actnorm (per-dimension scale and shift, initialised from the first batch), an invertible
linear map (LU-parametrised, so its log-determinant is the sum of log|diag U|), and additive coupling (half
the dimensions shifted by a small network of the other half: volume preserving). A fixed reversal follows
each step so both halves get shifted. `levels x depth` steps, as in the authors' code (3 x 3, width 32),
with the learned LU linear in place of their fixed permutation.

Inputs are first standardised with the streaming statistics on the directions the corpus spans (mean 0,
covariance I there): along a rank-deficient covariance's null directions the likelihood is unbounded and
training diverges. No flow library is used: zuko, normflows and nflows target densities over small
dimensions and bring their own dependencies; the three layers are small and tested here.

Files: `flow.safetensors` (flow weights and buffers, standardisation and PCA arrays) and `flow.json` (sizes
to rebuild the modules, and the training report). Never pickled."""

from __future__ import annotations

import json
import logging
import math
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import replace
from pathlib import Path

import numpy as np
import torch
from torch import nn

from .encoder import one_torch_thread
from .errors import IndexStateError, SettingsError
from .stats import RunningStats
from .transforms import LinearTransform, Transform, TransformKind, TransformSpec, VectorBatches

log = logging.getLogger(__name__)

LEVELS, DEPTH, HIDDEN = 3, 3, 32
LEARNING_RATE, BATCH_SIZE = 1e-3, 64
SHUFFLE_BUFFER = 4096  # rows shuffled together while streaming: memory stays bounded whatever the corpus
HELD_OUT_ROWS = 512  # at most this many rows measure held-out NLL ...
HELD_OUT_MIN_CORPUS = 500  # ... taken out of training only from corpora at least this large
APPLY_ROWS = 4096  # rows per forward pass in apply(): bounds the activations' memory
FORMAT_VERSION = 1  # of flow.json and flow.safetensors; load refuses others


class ActNorm(nn.Module):
    """y = (x + loc) * exp(log_scale), initialised on the first batch to zero mean and unit variance."""

    def __init__(self, dim: int):
        super().__init__()
        self.loc = nn.Parameter(torch.zeros(dim))
        self.log_scale = nn.Parameter(torch.zeros(dim))
        # A buffer, so a loaded flow does not initialise itself again on its first batch.
        self.register_buffer("initialised", torch.tensor(0, dtype=torch.uint8))

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.initialised:
            with torch.no_grad():
                self.loc.copy_(-x.mean(0))
                self.log_scale.copy_(-torch.log(x.std(0) + 1e-6))
                self.initialised.fill_(1)
        return (x + self.loc) * torch.exp(self.log_scale), self.log_scale.sum().expand(len(x))

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y * torch.exp(-self.log_scale) - self.loc


class InvertibleLinear(nn.Module):
    """y = x W^T with W = P L (U + diag(sign * exp(log_s))): log|det W| = sum(log_s), at any width.

    P is fixed, L unit lower triangular, U strictly upper triangular; all start from the LU factors of a
    random rotation. The factors are applied to x one at a time rather than multiplied into W: for a batch
    of 64 that is ~10x fewer operations at 384 dims, forward and backward."""

    def __init__(self, dim: int, generator: torch.Generator | None = None):
        super().__init__()
        rotation = torch.linalg.qr(torch.randn(dim, dim, generator=generator))[0]
        permutation, lower, upper = torch.linalg.lu(rotation)
        diagonal = torch.diagonal(upper)
        # P as indices: (P v)_j = v[perm[j]], a gather instead of a d x d product.
        self.register_buffer("permutation", permutation.argmax(1))
        self.register_buffer("sign", torch.sign(diagonal))
        self.lower = nn.Parameter(torch.tril(lower, -1))
        self.upper = nn.Parameter(torch.triu(upper, 1))
        self.log_s = nn.Parameter(torch.log(diagonal.abs()))

    def _factors(self) -> tuple[torch.Tensor, torch.Tensor]:
        # tril/triu each time: the other triangle's gradient is then 0 and Adam leaves it at 0.
        eye = torch.eye(len(self.log_s), dtype=self.lower.dtype)
        lower = torch.tril(self.lower, -1) + eye
        upper = torch.triu(self.upper, 1) + torch.diag(self.sign * torch.exp(self.log_s))
        return lower, upper

    def weight(self) -> torch.Tensor:
        lower, upper = self._factors()
        return (lower @ upper)[self.permutation]

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        lower, upper = self._factors()
        return ((x @ upper.T) @ lower.T)[:, self.permutation], self.log_s.sum().expand(len(x))

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        lower, upper = self._factors()
        v = y[:, torch.argsort(self.permutation)]
        # Row form: solve u L^T = v, then x U^T = u.
        u = torch.linalg.solve_triangular(lower.T, v, upper=True, left=False, unitriangular=True)
        return torch.linalg.solve_triangular(upper.T, u, upper=False, left=False)


class AdditiveCoupling(nn.Module):
    """The second half shifted by a network of the first: y_b = x_b + net(x_a). Volume preserving."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.split = dim // 2  # odd dims: the shifted half is the larger one
        self.net = nn.Sequential(
            nn.Linear(self.split, hidden),
            nn.ReLU(),
            nn.Linear(hidden, hidden),
            nn.ReLU(),
            nn.Linear(hidden, dim - self.split),
        )
        # The last layer starts at zero: the flow starts as actnorm and rotations, training adds the rest.
        nn.init.zeros_(self.net[-1].weight)
        nn.init.zeros_(self.net[-1].bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = x[:, : self.split], x[:, self.split :]
        return torch.cat([a, b + self.net(a)], dim=1), x.new_zeros(len(x))

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        a, b = y[:, : self.split], y[:, self.split :]
        return torch.cat([a, b - self.net(a)], dim=1)


class Reverse(nn.Module):
    """Reverses the dimensions, so the next coupling shifts the half this one conditioned on."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return x.flip(1), x.new_zeros(len(x))

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        return y.flip(1)


class Flow(nn.Module):
    """levels x depth steps of [actnorm, invertible linear, additive coupling, reversal] on `dim` dims.

    `seed` fixes the initial weights (without touching torch's global random state)."""

    def __init__(
        self, dim: int, levels: int = LEVELS, depth: int = DEPTH, hidden: int = HIDDEN, seed: int = 0
    ):
        super().__init__()
        if dim < 2:
            raise SettingsError(f"a flow needs at least 2 dimensions; the corpus spans {dim}")
        self.dim, self.levels, self.depth, self.hidden = dim, levels, depth, hidden
        generator = torch.Generator().manual_seed(seed)
        self.steps = nn.ModuleList()
        # nn.Linear initialises from the global generator: seed it inside a fork, restored afterwards.
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            for _ in range(levels * depth):
                self.steps.extend(
                    [ActNorm(dim), InvertibleLinear(dim, generator), AdditiveCoupling(dim, hidden), Reverse()]
                )

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """z and log|det dz/dx|, one per row."""
        logdet = x.new_zeros(len(x))
        for step in self.steps:
            x, step_logdet = step(x)
            logdet = logdet + step_logdet
        return x, logdet

    def inverse(self, z: torch.Tensor) -> torch.Tensor:
        for step in reversed(self.steps):
            z = step.inverse(z)
        return z

    def nll(self, x: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of the rows under a standard normal base, in nats per dimension
        (per dimension, so figures compare across models of different widths)."""
        z, logdet = self(x)
        log_p = -0.5 * (z**2).sum(1) - 0.5 * self.dim * math.log(2 * math.pi) + logdet
        return -log_p.mean() / self.dim


class FlowTransform(Transform):
    """x -> PCA(flow(standardise(x))): the PCA (a rotation keeping the first `dims` principal directions of
    the flow's outputs) only when `dims` is below the corpus's rank."""

    kind = TransformKind.FLOW
    WEIGHTS, CONFIG = "flow.safetensors", "flow.json"

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
    def fit(cls, spec: TransformSpec, stats: RunningStats, vectors: VectorBatches | None = None):
        if vectors is None:
            raise SettingsError(
                "flow trains on the documents' raw vectors, and none were given "
                "(an index refits flow only from the raw vectors it keeps)"
            )
        if stats.count < 2:
            raise SettingsError(f"flow needs at least 2 documents to train on, got {stats.count}")
        # Whitening on the spanned directions (LinearTransform drops those below RANK_TOLERANCE).
        standardise = LinearTransform.fit(TransformSpec(TransformKind.WHITEN, power=1.0), stats)
        flow = Flow(standardise.out_dim, seed=spec.seed)
        report = _train(flow, standardise, vectors, spec, stats.count)
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
        from safetensors.numpy import save_file

        from .storage import atomic_path, atomic_write_text

        directory = Path(directory)
        arrays = {f"flow.{name}": t.detach().numpy() for name, t in self.flow.state_dict().items()}
        arrays["standardise.mean"] = self.standardise.mean
        arrays["standardise.matrix"] = self.standardise.matrix
        arrays["standardise.eigenvalues"] = self.standardise.eigenvalues
        if self.pca is not None:
            arrays["pca.mean"], arrays["pca.basis"] = self.pca
        with atomic_path(directory / self.WEIGHTS) as tmp:
            # safetensors writes the raw buffer: a Fortran-ordered array (eigh returns those) would transpose.
            save_file({name: np.ascontiguousarray(a) for name, a in arrays.items()}, str(tmp))
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
        from safetensors.numpy import load_file

        directory = Path(directory)
        config = json.loads((directory / cls.CONFIG).read_text())
        if config.get("format_version") != FORMAT_VERSION:
            raise IndexStateError(
                f"{directory / cls.CONFIG} is flow format {config.get('format_version')}; this semsearch "
                f"reads format {FORMAT_VERSION} (refit the index with --transform flow)"
            )
        arrays = load_file(str(directory / cls.WEIGHTS))
        standardise = LinearTransform(
            TransformSpec(TransformKind.WHITEN, power=1.0),
            in_dim,
            arrays["standardise.mean"],
            arrays["standardise.matrix"],
            arrays["standardise.eigenvalues"],
        )
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
    groups = [{"params": factors, "lr": LEARNING_RATE / flow.dim}, {"params": others}]
    try:
        return torch.optim.Adam(groups, lr=LEARNING_RATE, fused=True)
    except RuntimeError:
        return torch.optim.Adam(groups, lr=LEARNING_RATE)


def _train(
    flow: Flow, standardise: LinearTransform, vectors: VectorBatches, spec: TransformSpec, count: int
) -> dict:
    """Maximum likelihood with Adam over `spec.epochs` streamed passes; returns the training report."""
    from tqdm import tqdm

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
    steps, epoch_losses = 0, []
    total = spec.epochs * math.ceil((count - (count // stride if stride > 1 else 0)) / BATCH_SIZE)
    with (
        one_torch_thread(),
        tqdm(
            total=total, desc="training flow", unit="batch", disable=None, leave=False, file=sys.stderr
        ) as bar,
    ):
        for epoch in range(spec.epochs):
            epoch_losses = []
            for batch in _minibatches(vectors(), rng, stride):
                x = torch.from_numpy(standardise.apply(batch))
                if before is None:
                    with torch.no_grad():
                        flow(x)  # actnorm's data-dependent initialisation, on the first training batch
                        before = float(flow.nll(held_out))
                loss = flow.nll(x)
                if not torch.isfinite(loss):
                    raise SettingsError(
                        f"flow training diverged (NLL not finite at step {steps}); try another --seed"
                    )
                optimiser.zero_grad()
                loss.backward()
                optimiser.step()
                steps += 1
                epoch_losses.append(loss.item())
                bar.update()
                bar.set_postfix(epoch=epoch + 1, nll=f"{epoch_losses[-1]:.3f}", refresh=False)
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
