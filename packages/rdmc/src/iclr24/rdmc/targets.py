"""Targets p* ∝ exp(-f*): the ``Target`` protocol, an exact Gaussian mixture, and an oracle-call counter.

A target is anything with batched ``log_prob(x)`` and ``grad_log_prob(x)`` for ``x`` of shape ``(..., d)``
(returning ``(...)`` and ``(..., d)``). ``log_prob`` may be unnormalised: rdMC and the Langevin baselines only use
differences of it. ``sample(n)`` is optional (used for reference draws in the metrics).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Protocol
from typing import runtime_checkable

import numpy as np
import torch
from torch import Tensor

from iclr24.paperkit.data.user import as_tensors
from iclr24.paperkit.data.user import is_user_data
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float

__all__ = [
    "Target",
    "GaussianMixture",
    "NealFunnel",
    "BayesianLogisticRegression",
    "FunctionTarget",
    "CountedTarget",
    "check_target",
]


@runtime_checkable
class Target(Protocol):
    """What rdMC needs from a target density p* ∝ exp(-f*).

    ``log_prob(x)``: ``(..., d) -> (...)``, ln p*(x) up to a constant; ``grad_log_prob(x)``: ``(..., d) -> (..., d)``,
    ∇ln p*(x) = -∇f*(x). An optional ``dim`` attribute gives d; an optional ``sample(n, generator=None)`` draws
    exact samples.
    """

    def log_prob(self, x: Tensor) -> Tensor: ...

    def grad_log_prob(self, x: Tensor) -> Tensor: ...


def check_target(target: object) -> None:
    """Raise ``ValueError`` unless ``target`` has callable ``log_prob`` and ``grad_log_prob``."""
    missing = [m for m in ("log_prob", "grad_log_prob") if not callable(getattr(target, m, None))]
    if missing:
        raise InputError(
            f"target must provide batched log_prob(x) and grad_log_prob(x) methods (the Target protocol); "
            f"{type(target).__name__} lacks {', '.join(missing)}. Wrap plain functions with "
            "FunctionTarget(log_prob, grad_log_prob=None, dim=d)."
        )


def _as_tensor(a: object, dtype: torch.dtype | None, name: str) -> Tensor:
    if isinstance(a, Tensor):
        t = a.detach()
        return t.to(dtype) if dtype is not None else (t if t.is_floating_point() else t.double())
    try:
        arr = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError):
        raise InputError(f"{name} must be array-like numbers, got {type(a).__name__}") from None
    return torch.as_tensor(arr, dtype=dtype or torch.float64)


class GaussianMixture:
    """p*(x) = Σ_k w_k N(x; μ_k, Σ_k), exact ``log_prob``, ``grad_log_prob``, ``sample`` and OU-diffused score.

    ``means``: ``(K, d)``; ``covs``: ``(K, d, d)`` full, ``(K, d)`` diagonal, or ``(K,)`` isotropic variances;
    ``weights``: ``(K,)``, non-negative, summing to 1. Defaults to float64 unless tensors of another float dtype
    are given.
    """

    def __init__(
        self, means: object, covs: object, weights: object, *, dtype: torch.dtype | None = None
    ) -> None:
        mu = _as_tensor(means, dtype, "means")
        dtype = mu.dtype
        if mu.ndim != 2 or mu.shape[0] < 1 or mu.shape[1] < 1:
            raise InputError(f"means must have shape (K, d) with K, d >= 1, got {tuple(mu.shape)}")
        k, d = mu.shape
        cov = _as_tensor(covs, dtype, "covs")
        if cov.shape == (k,):
            cov = cov[:, None, None] * torch.eye(d, dtype=dtype)
        elif cov.shape == (k, d):
            cov = torch.diag_embed(cov)
        if cov.shape != (k, d, d):
            raise InputError(
                f"covs must have shape ({k}, {d}, {d}) (full), ({k}, {d}) (diagonal) or ({k},) (isotropic) to "
                f"match means of shape ({k}, {d}); got {tuple(cov.shape)}"
            )
        w = _as_tensor(weights, dtype, "weights")
        if w.shape != (k,):
            raise InputError(
                f"weights must have shape ({k},) to match means of shape ({k}, {d}), got {tuple(w.shape)}"
            )
        if not (torch.isfinite(mu).all() and torch.isfinite(cov).all() and torch.isfinite(w).all()):
            raise InputError("means, covs and weights must be finite")
        if (w < 0).any():
            raise InputError(f"weights must be non-negative, got {w.tolist()}")
        if abs(float(w.sum()) - 1.0) > 1e-6:
            raise InputError(
                f"weights must sum to 1, got sum {float(w.sum()):.6g}; normalise them (w / w.sum())"
            )
        if not torch.allclose(cov, cov.transpose(-1, -2), atol=1e-10, rtol=1e-8):
            raise InputError("covs must be symmetric positive definite matrices; got a non-symmetric one")
        chol, info = torch.linalg.cholesky_ex(cov)
        if (info != 0).any():
            bad = torch.nonzero(info).flatten().tolist()
            raise InputError(f"covs must be positive definite; component(s) {bad} are not (Cholesky failed)")
        self.means, self.covs, self.weights = mu, cov, w
        self.dim, self.n_components = d, k
        self._chol = chol
        self._prec = torch.cholesky_inverse(chol)  # (K, d, d)
        off_diag = cov - torch.diag_embed(torch.diagonal(cov, dim1=-2, dim2=-1))
        self._prec_diag = (
            1.0 / torch.diagonal(cov, dim1=-2, dim2=-1) if not off_diag.any() else None
        )  # fast path
        logdet = 2.0 * torch.log(torch.diagonal(chol, dim1=-2, dim2=-1)).sum(-1)
        logw = torch.log(w)  # -inf for a zero weight: that component never contributes
        self._log_norm = logw - 0.5 * logdet - 0.5 * d * math.log(2 * math.pi)  # (K,)

    def __repr__(self) -> str:
        return f"GaussianMixture(K={self.n_components}, d={self.dim}, weights={[round(v, 4) for v in self.weights.tolist()]})"

    def _check_x(self, x: Tensor) -> Tensor:
        if not isinstance(x, Tensor):
            x = torch.as_tensor(np.asarray(x), dtype=self.means.dtype)
        if x.shape[-1:] != (self.dim,):
            raise InputError(f"x must have shape (..., {self.dim}), got {tuple(x.shape)}")
        if not x.is_floating_point():
            raise InputError(f"x must be floating point, got {x.dtype}")
        return x

    def _component_log_probs(self, x: Tensor) -> tuple[Tensor, Tensor]:
        """ln(w_k N(x; μ_k, Σ_k)) as ``(..., K)`` and the precision-weighted residuals Σ_k^{-1}(x-μ_k) ``(..., K, d)``."""
        diff = x.unsqueeze(-2) - self.means.to(x)  # (..., K, d)
        if self._prec_diag is not None:  # diagonal covariances: Σ_k^{-1} is elementwise
            pdiff = diff * self._prec_diag.to(x)
        else:
            pdiff = torch.einsum("kij,...kj->...ki", self._prec.to(x), diff)
        quad = (diff * pdiff).sum(-1)
        return self._log_norm.to(x) - 0.5 * quad, pdiff

    def _component_major(self, x: Tensor) -> tuple[Tensor, list[Tensor]]:
        """The diagonal-covariance case of :meth:`_component_log_probs`, laid out component-major: ln(w_k N(x; μ_k,
        Σ_k)) as ``(K, N)`` for the N = prod(...) points, and Σ_k^{-1}(x-μ_k) as d tensors ``(K, N)`` (one per
        coordinate). The same arithmetic, one coordinate at a time: torch's reductions over a last axis of size K or
        d (4 and 2 here) are an order of magnitude slower per element than elementwise work, so the sums over
        coordinates are plain additions and those over components run along the leading axis."""
        flat = x.reshape(-1, self.dim)
        mu, prec = self.means.to(x), self._prec_diag.to(x)
        quad, pdiff = None, []
        for j in range(self.dim):
            diff = flat[:, j].unsqueeze(0) - mu[:, j].unsqueeze(1)  # (K, N)
            pd = diff * prec[:, j].unsqueeze(1)
            quad = diff * pd if quad is None else quad + diff * pd
            pdiff.append(pd)
        return self._log_norm.to(x).unsqueeze(1) - 0.5 * quad, pdiff

    def log_prob(self, x: Tensor) -> Tensor:
        """ln p*(x) (normalised), ``(..., d) -> (...)``."""
        x = self._check_x(x)
        if self._prec_diag is not None:
            lp, _ = self._component_major(x)
            return torch.logsumexp(lp, dim=0).reshape(x.shape[:-1])
        lp, _ = self._component_log_probs(x)
        return torch.logsumexp(lp, dim=-1)

    def grad_log_prob(self, x: Tensor) -> Tensor:
        """∇ln p*(x) = -Σ_k r_k(x) Σ_k^{-1}(x-μ_k), r = responsibilities; ``(..., d) -> (..., d)``."""
        x = self._check_x(x)
        if self._prec_diag is not None:
            lp, pdiff = self._component_major(x)
            r = torch.softmax(lp, dim=0)
            return torch.stack([-(r * pd).sum(0) for pd in pdiff], dim=-1).reshape(x.shape)
        lp, pdiff = self._component_log_probs(x)
        r = torch.softmax(lp, dim=-1)
        return -(r.unsqueeze(-1) * pdiff).sum(-2)

    def responsibilities(self, x: Tensor) -> Tensor:
        """Posterior component probabilities ``(..., K)``."""
        lp, _ = self._component_log_probs(self._check_x(x))
        return torch.softmax(lp, dim=-1)

    def sample(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        """``n`` exact i.i.d. draws, ``(n, d)``."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"n must be a positive int, got {n!r}")
        comp = torch.multinomial(self.weights, n, replacement=True, generator=generator)
        eps = torch.randn(n, self.dim, generator=generator, dtype=self.means.dtype)
        return self.means[comp] + torch.einsum("nij,nj->ni", self._chol[comp], eps)

    def diffused(self, t: float) -> GaussianMixture:
        """The law p_t of the OU process dx = -x dt + √2 dB started at p*:
        p_t = Σ_k w_k N(e^{-t} μ_k, e^{-2t} Σ_k + (1 - e^{-2t}) I)  (exact, spec §5)."""
        t = float(t)
        if not t >= 0 or not math.isfinite(t):
            raise InputError(f"t must be a finite number >= 0, got {t}")
        a = math.exp(-t)
        eye = torch.eye(self.dim, dtype=self.means.dtype)
        return GaussianMixture(a * self.means, a * a * self.covs + (1 - a * a) * eye, self.weights)

    def diffused_score(self, x: Tensor, t: float) -> Tensor:
        """Exact ∇ln p_t(x) of the OU-diffused mixture, ``(..., d) -> (..., d)``."""
        return self.diffused(t).grad_log_prob(x)


def _check_points(x: object, dim: int, name: str) -> None:
    """``x`` must be a tensor of points ``(..., dim)``; InputError naming ``name`` otherwise."""
    if not isinstance(x, Tensor) or x.shape[-1:] != (dim,):
        got = tuple(x.shape) if isinstance(x, Tensor) else type(x).__name__
        raise InputError(f"{name} must be a tensor of shape (..., {dim}), got {got}")


class NealFunnel:
    """Neal's funnel in ``dim`` dimensions: v ~ N(0, scale²), x_i | v ~ N(0, e^{v}) for i = 1..dim-1; the first
    coordinate is v. Exact ``log_prob``, ``grad_log_prob`` and ``sample``. Its gradient is not Lipschitz: in the neck
    (v ≪ 0) the curvature e^{-v} makes a fixed-step Langevin chain unstable."""

    def __init__(self, dim: int = 2, scale: float = 3.0) -> None:
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 2:
            raise InputError(f"dim must be an int >= 2 (v and at least one x), got {dim!r}")
        if not (float(scale) > 0 and math.isfinite(float(scale))):
            raise InputError(f"scale must be a finite number > 0, got {scale}")
        self.dim, self.scale = dim, float(scale)

    def __repr__(self) -> str:
        return f"NealFunnel(dim={self.dim}, scale={self.scale})"

    def _check_x(self, x: Tensor) -> Tensor:
        _check_points(x, self.dim, "x")
        if not x.is_floating_point():
            raise InputError(f"x must be floating point, got {x.dtype}")
        return x

    def log_prob(self, x: Tensor) -> Tensor:
        """ln p(v) + Σ ln p(x_i | v) (normalised), ``(..., d) -> (...)``."""
        x = self._check_x(x)
        v, rest = x[..., 0], x[..., 1:]
        k = self.dim - 1
        lv = -0.5 * (v / self.scale) ** 2 - math.log(self.scale) - 0.5 * math.log(2 * math.pi)
        lx = -0.5 * (rest**2).sum(-1) * torch.exp(-v) - 0.5 * k * v - 0.5 * k * math.log(2 * math.pi)
        return lv + lx

    def grad_log_prob(self, x: Tensor) -> Tensor:
        x = self._check_x(x)
        v, rest = x[..., :1], x[..., 1:]
        ev = torch.exp(-v)
        gv = -v / self.scale**2 - 0.5 * (self.dim - 1) + 0.5 * (rest**2).sum(-1, keepdim=True) * ev
        return torch.cat([gv, -rest * ev], -1)

    def sample(self, n: int, generator: torch.Generator | None = None) -> Tensor:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise InputError(f"n must be a positive int, got {n!r}")
        v = self.scale * torch.randn(n, 1, generator=generator, dtype=torch.float64)
        rest = torch.exp(v / 2) * torch.randn(n, self.dim - 1, generator=generator, dtype=torch.float64)
        return torch.cat([v, rest], -1)


class BayesianLogisticRegression:
    """The posterior of logistic regression with a N(0, prior_std² I) prior on the weights θ ∈ R^d:
    ln p(θ | X, y) = Σ_i [y_i l_i - softplus(l_i)] - ‖θ‖²/(2 prior_std²) + const, l = Xθ.

    ``X``: ``(N, d)`` features (add a column of ones for an intercept); ``y``: ``(N,)`` labels in {0, 1}. Or your
    own data: ``X`` a torch ``Dataset`` / ``DataLoader`` of ``(features (d,), label)`` items (batches) and ``y``
    omitted; it is read once, in its order, into the same tensors (the posterior does not depend on the order).
    ``lipschitz`` is the smoothness bound λ_max(XᵀX)/4 + 1/prior_std² of -ln p (for the inner step clip)."""

    def __init__(self, X: object, y: object = None, prior_std: float = 1.0) -> None:
        check_float(prior_std, "prior_std", minimum=1e-100, maximum=1e100)
        X, y = _features_labels(X, y)
        Xt, yt = _as_tensor(X, torch.float64, "X"), _as_tensor(y, torch.float64, "y")
        if Xt.ndim != 2 or Xt.shape[0] < 1 or Xt.shape[1] < 1:
            raise InputError(f"X must have shape (N, d) with N, d >= 1, got {tuple(Xt.shape)}")
        if yt.shape != (Xt.shape[0],):
            raise InputError(f"y must have shape ({Xt.shape[0]},) to match X, got {tuple(yt.shape)}")
        if not (torch.isfinite(Xt).all() and torch.isfinite(yt).all()):
            raise InputError("X and y must be finite")
        if not bool(((yt == 0) | (yt == 1)).all()):
            raise InputError("y must hold labels 0 or 1")
        if not (float(prior_std) > 0 and math.isfinite(float(prior_std))):
            raise InputError(f"prior_std must be a finite number > 0, got {prior_std}")
        self.X, self.y, self.prior_std = Xt, yt, float(prior_std)
        self.dim = Xt.shape[1]
        self.lipschitz = float(torch.linalg.eigvalsh(Xt.T @ Xt)[-1]) / 4 + 1 / self.prior_std**2

    def __repr__(self) -> str:
        return f"BayesianLogisticRegression(N={self.X.shape[0]}, d={self.dim}, prior_std={self.prior_std})"

    def _logits(self, theta: Tensor) -> Tensor:
        _check_points(theta, self.dim, "theta")
        return theta @ self.X.to(theta).T  # (..., N)

    def log_prob(self, theta: Tensor) -> Tensor:
        lg = self._logits(theta)
        ll = (self.y.to(lg) * lg - torch.nn.functional.softplus(lg)).sum(-1)
        return ll - 0.5 * (theta**2).sum(-1) / self.prior_std**2

    def grad_log_prob(self, theta: Tensor) -> Tensor:
        lg = self._logits(theta)
        r = self.y.to(lg) - torch.sigmoid(lg)
        return r @ self.X.to(theta) - theta / self.prior_std**2

    def accuracy(self, theta: Tensor, X: object | None = None, y: object | None = None) -> float:
        """Accuracy of the posterior-predictive mean (average of σ(xᵀθ) over the draws ``theta`` ``(n, d)``) on the
        training data, or on ``X, y`` (tensors / arrays, or a ``Dataset`` / ``DataLoader`` of ``(x, y)`` as ``X``)."""
        if is_user_data(X):
            X, y = _features_labels(X, y)
        Xe = self.X if X is None else _as_tensor(X, torch.float64, "X")
        ye = self.y if y is None else _as_tensor(y, torch.float64, "y")
        p = torch.sigmoid(theta.to(Xe) @ Xe.T).mean(0)
        return float(((p > 0.5).to(ye) == ye).to(torch.float64).mean())


def _features_labels(X: object, y: object) -> tuple[object, object]:
    """``(X, y)`` as given, or read from a ``Dataset`` / ``DataLoader`` of ``(x, y)`` items passed as ``X``."""
    if is_user_data(X):
        if y is not None:
            raise InputError("X is a Dataset/DataLoader of (x, y) items: leave y out (got y as well)")
        return as_tensors(X, fields=2, what="logistic-regression data (x, y)")
    if y is None:
        raise InputError("y (labels) is missing: give X and y, or a Dataset/DataLoader of (x, y) items as X")
    return X, y


class FunctionTarget:
    """Wrap plain functions as a ``Target``. Without ``grad_log_prob`` the gradient comes from autograd."""

    def __init__(
        self,
        log_prob: Callable[[Tensor], Tensor],
        grad_log_prob: Callable[[Tensor], Tensor] | None = None,
        *,
        dim: int | None = None,
    ) -> None:
        if not callable(log_prob) or (grad_log_prob is not None and not callable(grad_log_prob)):
            raise InputError("log_prob (and grad_log_prob, when given) must be callables on (..., d) tensors")
        self._lp, self._grad, self.dim = log_prob, grad_log_prob, dim

    def log_prob(self, x: Tensor) -> Tensor:
        return self._lp(x)

    def grad_log_prob(self, x: Tensor) -> Tensor:
        if self._grad is not None:
            return self._grad(x)
        with torch.enable_grad():
            xr = x.detach().requires_grad_(True)
            (g,) = torch.autograd.grad(self._lp(xr).sum(), xr)
        return g.detach()


class CountedTarget:
    """Wrap a target and count oracle calls: one call = one point at which ∇ln p* (or ln p*) is evaluated.

    Also checks every result: NaN or +inf in ``log_prob`` and non-finite gradients raise ``ValueError`` naming how
    many points were bad (-inf log-density means zero density and is allowed).
    """

    def __init__(self, target: Target) -> None:
        check_target(target)
        self.target = target
        self.dim = getattr(target, "dim", None)
        self.grad_calls = 0
        self.logp_calls = 0

    def log_prob(self, x: Tensor) -> Tensor:
        out = self.target.log_prob(x)
        if not isinstance(out, Tensor) or out.shape != x.shape[:-1]:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise InputError(f"target.log_prob must map (..., d) to (...): input {tuple(x.shape)} gave {got}")
        self.logp_calls += x[..., 0].numel()
        bad = torch.isnan(out) | (out == math.inf)
        if bad.any():
            raise InputError(
                f"target.log_prob returned NaN/+inf at {int(bad.sum())} of {out.numel()} points (e.g. x = "
                f"{x[bad][0].tolist()}); fix the density there (return -inf for zero density)"
            )
        return out

    def grad_log_prob(self, x: Tensor) -> Tensor:
        out = self.target.grad_log_prob(x)
        if not isinstance(out, Tensor) or out.shape != x.shape:
            got = tuple(out.shape) if isinstance(out, Tensor) else type(out).__name__
            raise InputError(
                f"target.grad_log_prob must map (..., d) to (..., d): input {tuple(x.shape)} gave {got}"
            )
        self.grad_calls += x[..., 0].numel()
        if bool(torch.isfinite(out).all()):  # one reduction over all values on the (every-step) good path
            return out
        bad = ~torch.isfinite(out).all(-1)
        if bad.any():
            raise InputError(
                f"target.grad_log_prob returned NaN/inf at {int(bad.sum())} of {bad.numel()} points (e.g. x = "
                f"{x[bad][0].tolist()}); the gradient must be finite wherever the chains can go"
            )
        return out

    @property
    def total_calls(self) -> int:
        return self.grad_calls + self.logp_calls
