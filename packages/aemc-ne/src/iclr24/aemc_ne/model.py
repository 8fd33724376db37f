"""AEMC (autoencoder matrix completion) and AEMC-NE (neuron-enhanced AEMC), as ``nn.Module``s and pure functions.

Notation (paper Sec. 2-3). An incomplete matrix ``X in R^{m x n}`` with observed set ``Omega`` and mask ``M``;
**each column is a sample** (``n`` samples, ``m`` features). In code a batch holds samples as rows, so a batch is
a ``(B, m)`` slice of ``X^T``.

    x_tilde_j   = M_j * x_j                                    zero-filled input          (Eq. zero-fill)
    h(x)        = W_L s(W_{L-1} ... s(W_1 x + b_1) ... ) + b_L  main "layer-wise" net     (Eq. main-AE)
    g(y)        = E(y) + c * y,  E: R -> R a scalar MLP         element-wise net, skip c   (Eq. element-net)
    X_hat_ij    = g_i(h(x_tilde_j)_i)                           AEMC-NE prediction         (Eq. AEMC-NE)
    L(W, theta) = 1/|Omega| sum_{(i,j) in Omega} w_ij (X_ij - X_hat_ij)^2 + regularisation   (Eq. loss)

``g`` is one shared scalar MLP (the released code) or one MLP per output row ``i`` (``shared=False``).
AEMC is the same main net with the identity output (``g(y) = y``). ``w_ij = 1 / p_ij`` under MNAR (Sec. 3.2,
inverse propensity), ``w_ij = 1`` under MCAR.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError

__all__ = [
    "ACTIVATIONS",
    "MainAutoencoder",
    "ElementwiseNetwork",
    "AutoencoderMC",
    "zero_fill",
    "masked_loss",
    "l2_penalty",
]

ACTIVATIONS = {"tanh": nn.Tanh, "sigmoid": nn.Sigmoid, "relu": nn.ReLU, "elu": nn.ELU}


MAX_WIDTH = (
    2**17
)  # wider than any layer of the paper (500) by far; a larger one would not fit in memory anyway


def _check_widths(name: str, widths: Sequence[int], allow_empty: bool) -> tuple[int, ...]:
    if isinstance(widths, str | bytes) or not isinstance(widths, Sequence):
        raise InputError(f"{name} must be a sequence of layer widths such as (500,), got {widths!r}")
    out = []
    for w in widths:
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_WIDTH:
            raise InputError(f"{name} must hold ints in [1, {MAX_WIDTH}], got {tuple(widths)!r}")
        out.append(int(w))
    if not out and not allow_empty:
        raise InputError(f"{name} needs at least one hidden layer, got {tuple(widths)!r}")
    return tuple(out)


def _activation(name: str) -> nn.Module:
    if name not in ACTIVATIONS:
        raise InputError(f"activation must be one of {sorted(ACTIVATIONS)}, got {name!r}")
    return ACTIVATIONS[name]()


def zero_fill(x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """``M * X`` with the missing entries set to exactly 0 (NaN or not). Shapes equal."""
    # Eq. (zero-fill): x_tilde = M ⊙ x
    return torch.where(mask.bool(), x, torch.zeros((), dtype=x.dtype, device=x.device))


def masked_loss(
    x: torch.Tensor, x_hat: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
) -> torch.Tensor:
    """Mean squared error over the observed entries only: ``sum_Omega w (X - X_hat)^2 / |Omega|``.

    Unobserved targets never enter (not even as NaN). ``weights`` are inverse propensities ``1/p_ij`` (MNAR);
    ``None`` means all ones. Works on dense tensors of equal shape or on 1-D vectors of observed entries."""
    m = mask.bool()
    n_obs = int(m.sum())
    if n_obs == 0:
        raise InputError("masked_loss needs at least one observed entry (mask is all zero)")
    diff = torch.where(m, x - x_hat, torch.zeros((), dtype=x_hat.dtype, device=x_hat.device))
    sq = diff.square()
    if weights is not None:
        sq = sq * torch.where(m, weights, torch.zeros((), dtype=sq.dtype, device=sq.device))
    # Eq. (loss): (1/|Omega|) sum_{(i,j) in Omega} w_ij (X_ij - X_hat_ij)^2,  w_ij = 1/p_ij under MNAR
    return sq.sum() / n_obs


def l2_penalty(module: nn.Module) -> torch.Tensor:
    """``sum ||W||_F^2`` over the weight matrices of ``module`` (biases excluded, as in AutoRec)."""
    terms = [p.square().sum() for name, p in module.named_parameters() if name.endswith("weight")]
    if not terms:
        return torch.zeros(())
    return torch.stack(terms).sum()


class MainAutoencoder(nn.Module):
    """The layer-wise network ``h_W: R^m -> R^m`` with a linear output layer (the released code's ``Linear ->
    act -> ... -> Linear``)."""

    def __init__(self, n_features: int, hidden: Sequence[int] = (500,), activation: str = "tanh"):
        super().__init__()
        if isinstance(n_features, bool) or not isinstance(n_features, int) or n_features < 1:
            raise InputError(f"n_features must be a positive int, got {n_features!r}")
        hidden = _check_widths("main_hidden", hidden, allow_empty=False)
        widths = (n_features, *hidden, n_features)
        layers: list[nn.Module] = []
        for k in range(len(widths) - 1):
            layers.append(nn.Linear(widths[k], widths[k + 1]))
            if k < len(widths) - 2:
                layers.append(_activation(activation))
        self.net = nn.Sequential(*layers)
        self.n_features = n_features

    def forward(self, x_tilde: torch.Tensor) -> torch.Tensor:
        # Eq. (main-AE): h(x) = W_L s(W_{L-1} ... s(W_1 x + b_1) ...) + b_L
        return self.net(x_tilde)

    def weight_matrices(self) -> list[torch.Tensor]:
        return [m.weight for m in self.net if isinstance(m, nn.Linear)]


class ElementwiseNetwork(nn.Module):
    """The element-wise network ``g_theta: R -> R`` applied to every output of ``h``: ``g(y) = E(y) + skip * y``
    with ``E = Linear(1, e_1) -> act -> ... -> Linear(e_last, 1)``.

    ``shared=True`` (the released code): one ``E`` for all ``m`` outputs. ``shared=False``: ``m`` independent
    MLPs, stored as stacked weights ``(m, e_k, e_{k+1})`` and evaluated with one batched einsum."""

    def __init__(
        self,
        hidden: Sequence[int] = (20, 20),
        activation: str = "tanh",
        skip: float = 0.8,
        shared: bool = True,
        n_outputs: int | None = None,
    ):
        super().__init__()
        hidden = _check_widths("elem_hidden", hidden, allow_empty=False)
        if isinstance(skip, bool) or not isinstance(skip, int | float) or not math.isfinite(skip):
            raise InputError(f"skip must be a finite number (the released code uses 0.8), got {skip!r}")
        self.skip = float(skip)
        self.shared = bool(shared)
        self.act = _activation(activation)
        widths = (1, *hidden, 1)
        if self.shared:
            self.layers = nn.ModuleList(nn.Linear(widths[k], widths[k + 1]) for k in range(len(widths) - 1))
        else:
            if isinstance(n_outputs, bool) or not isinstance(n_outputs, int) or n_outputs < 1:
                raise InputError(f"per-output g (shared=False) needs n_outputs = m >= 1, got {n_outputs!r}")
            self.weights = nn.ParameterList()
            self.biases = nn.ParameterList()
            for k in range(len(widths) - 1):
                # each row's MLP gets nn.Linear's default init U(-1/sqrt(fan_in), 1/sqrt(fan_in))
                bound = 1.0 / math.sqrt(widths[k])
                w = torch.empty(n_outputs, widths[k], widths[k + 1]).uniform_(-bound, bound)
                b = torch.empty(n_outputs, widths[k + 1]).uniform_(-bound, bound)
                self.weights.append(nn.Parameter(w))
                self.biases.append(nn.Parameter(b))
        self.n_outputs = n_outputs

    def forward(self, y: torch.Tensor) -> torch.Tensor:
        """Shared: any shape, applied entrywise. Per-output: ``y`` of shape ``(B, m)``, column ``i`` through MLP
        ``i``."""
        if self.shared:
            z = y.unsqueeze(-1)
            for k, layer in enumerate(self.layers):
                z = layer(z)
                if k < len(self.layers) - 1:
                    z = self.act(z)
            e = z.squeeze(-1)
        else:
            if y.ndim != 2 or y.shape[1] != self.n_outputs:
                raise InputError(f"per-output g expects (B, {self.n_outputs}) inputs, got {tuple(y.shape)}")
            z = y.unsqueeze(-1)  # (B, m, 1)
            for k, (w, b) in enumerate(zip(self.weights, self.biases)):
                z = torch.einsum("bmi,mij->bmj", z, w) + b
                if k < len(self.weights) - 1:
                    z = self.act(z)
            e = z.squeeze(-1)
        # Eq. (element-net): g(y) = E_theta(y) + c * y   (c = 0.8 in the released code)
        return e + self.skip * y


class AutoencoderMC(nn.Module):
    """``X_hat = g(h(M * X))`` column-wise; ``element=None`` gives AEMC (identity output)."""

    def __init__(self, main: MainAutoencoder, element: ElementwiseNetwork | None = None):
        super().__init__()
        self.main = main
        self.element = element

    @property
    def n_features(self) -> int:
        return self.main.n_features

    def forward(self, x_tilde: torch.Tensor) -> torch.Tensor:
        """Dense prediction for a batch of zero-filled samples ``(B, m) -> (B, m)`` (g on every entry)."""
        h = self.main(x_tilde)
        # Eq. (AEMC-NE): X_hat_ij = g(h(x_tilde_j)_i);  AEMC: X_hat = h(x_tilde)
        return h if self.element is None else self.element(h)

    def predict_entries(self, x_tilde: torch.Tensor, rows: torch.Tensor, cols: torch.Tensor) -> torch.Tensor:
        """Predictions at the entries ``(rows[k], cols[k])`` of the batch (row = sample, col = feature) only.

        With a shared ``g`` it is evaluated at those entries alone (the released code applies g only where the
        training or test mask is 1); a per-output ``g`` runs densely and is then gathered."""
        h = self.main(x_tilde)
        if self.element is None:
            return h[rows, cols]
        if self.element.shared:
            return self.element(h[rows, cols])
        return self.element(h)[rows, cols]
