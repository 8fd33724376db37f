"""The quantities the paper's generalization bounds (Sec. 4, Thm 3.1 for MCAR, Thm 3.2 for MNAR) are made of,
measured on a trained model.

Thm 3.1 bounds the error on the unobserved entries by the training error plus a complexity term of the form
``O(sqrt(L^3 * zeta * d_bar / n))`` (``L`` layers, ``d_bar`` the mean width, ``n`` samples, ``zeta`` collecting
the theorem's norm and log factors). **This module evaluates that form only**: ``zeta`` is an argument (default 1),
not the theorem's constant, so ``complexity_form`` compares models and sizes, it is not a certified bound. The
ingredients it reports (spectral norms, their product = a Lipschitz constant of ``h`` for 1-Lipschitz activations,
``n - m``) are exact."""

from __future__ import annotations

import math

import numpy as np
import torch

from iclr24.paperkit.errors import InputError

from .completion import AEMC

__all__ = ["bound_terms"]


def _spectral_norm(w: torch.Tensor) -> float:
    return float(torch.linalg.matrix_norm(w.detach().double().reshape(w.shape[0], -1), ord=2))


def bound_terms(model: AEMC, zeta: float = 1.0) -> dict:
    """The terms of the Thm 3.1 form for a fitted :class:`AEMC`/:class:`AEMCNE` (see the module docstring):
    ``n`` (samples), ``m`` (features), ``n_minus_m``, ``n_observed``, ``train_mse`` (standardised units), the depth
    ``L`` (weight layers of ``h``, plus those of ``g``), ``d_bar`` (mean layer width), the spectral norms of ``h``'s
    weight matrices and their product, and ``complexity_form = sqrt(L^3 * zeta * d_bar / n)`` (form, not constant)."""
    if not isinstance(model, AEMC) or not getattr(model, "fitted_", False):
        raise InputError(f"bound_terms needs a fitted AEMC or AEMCNE, got {type(model).__name__}")
    if not isinstance(zeta, int | float) or not math.isfinite(zeta) or zeta <= 0:
        raise InputError(f"zeta must be a positive finite number, got {zeta!r}")
    net = model.net_
    weights = net.main.weight_matrices()
    widths = [w.shape[1] for w in weights] + [weights[-1].shape[0]]
    depth = len(weights)
    if net.element is not None:
        g = net.element
        g_weights = [layer.weight for layer in g.layers] if g.shared else list(g.weights)
        depth += len(g_weights)
        widths += [w.shape[-1] for w in g_weights[:-1]]
    n_samples, n_features = model._x.shape
    tr = model._train
    pred = model._predict_std(tr.users, tr.items)
    target = (tr.values - model.shift_) / model.scale_
    norms = [_spectral_norm(w) for w in weights]
    d_bar = float(np.mean(widths))
    return {
        "n": int(n_samples),
        "m": int(n_features),
        "n_minus_m": int(n_samples - n_features),
        "n_observed": len(tr),
        "train_mse": float(np.mean((pred - target) ** 2)),
        "L": depth,
        "d_bar": d_bar,
        "spectral_norms": norms,
        "lipschitz_product": float(np.prod(norms)),
        # form of Thm 3.1's complexity term: O(sqrt(L^3 zeta d_bar / n)); zeta is NOT the paper's constant
        "complexity_form": math.sqrt(depth**3 * zeta * d_bar / n_samples),
        "zeta": float(zeta),
    }
