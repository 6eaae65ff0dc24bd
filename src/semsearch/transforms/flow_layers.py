"""The layers of BERT-flow's normalizing flow (Li et al., EMNLP 2020), on vectors, and the flow they make.

Layers: actnorm (per-dimension scale and shift, initialised from the first batch), an invertible linear map
(LU-parametrised, so its log-determinant is the sum of log|diag U|), and additive coupling (half the
dimensions shifted by a small network of the other half: volume preserving). A fixed reversal follows each
step so both halves get shifted. `levels x depth` steps, as in the authors' code (3 x 3, width 32), with the
learned LU linear in place of their fixed permutation.

No flow library is used: zuko, normflows and nflows target densities over small dimensions and bring their
own dependencies; the three layers are small and tested here."""

from __future__ import annotations

import math
from typing import cast

import torch
from torch import nn

from ..errors import SettingsError

LEVELS, DEPTH, HIDDEN = 3, 3, 32


class FlowStep(nn.Module):
    """A step of the flow: `forward` gives y and log|det dy/dx| per row, `inverse` undoes it."""

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        raise NotImplementedError

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError


class ActNorm(FlowStep):
    """y = (x + loc) * exp(log_scale), initialised on the first batch to zero mean and unit variance."""

    initialised: torch.Tensor

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


class InvertibleLinear(FlowStep):
    """y = x W^T with W = P L (U + diag(sign * exp(log_s))): log|det W| = sum(log_s), at any width.

    P is fixed, L unit lower triangular, U strictly upper triangular; all start from the LU factors of a
    random rotation. The factors are applied to x one at a time rather than multiplied into W: for a batch
    of 64 that is ~10x fewer operations at 384 dims, forward and backward."""

    permutation: torch.Tensor
    sign: torch.Tensor

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


class AdditiveCoupling(FlowStep):
    """The second half shifted by a network of the first: y_b = x_b + net(x_a). Volume preserving."""

    def __init__(self, dim: int, hidden: int):
        super().__init__()
        self.split = dim // 2  # odd dims: the shifted half is the larger one
        # made in this order: each draws its initial weights from the generator the flow seeded
        first, middle, last = (
            nn.Linear(self.split, hidden),
            nn.Linear(hidden, hidden),
            nn.Linear(hidden, dim - self.split),
        )
        self.net = nn.Sequential(first, nn.ReLU(), middle, nn.ReLU(), last)
        # The last layer starts at zero: the flow starts as actnorm and rotations, training adds the rest.
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a, b = x[:, : self.split], x[:, self.split :]
        return torch.cat([a, b + self.net(a)], dim=1), x.new_zeros(len(x))

    def inverse(self, y: torch.Tensor) -> torch.Tensor:
        a, b = y[:, : self.split], y[:, self.split :]
        return torch.cat([a, b - self.net(a)], dim=1)


class Reverse(FlowStep):
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
        for step in reversed(cast("list[FlowStep]", list(self.steps))):  # nn.ModuleList holds FlowSteps
            z = step.inverse(z)
        return z

    def nll(self, x: torch.Tensor) -> torch.Tensor:
        """Mean negative log-likelihood of the rows under a standard normal base, in nats per dimension
        (per dimension, so figures compare across models of different widths)."""
        z, logdet = self(x)
        log_p = -0.5 * (z**2).sum(1) - 0.5 * self.dim * math.log(2 * math.pi) + logdet
        return -log_p.mean() / self.dim
