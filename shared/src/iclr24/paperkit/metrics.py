"""Metrics on features that two or more packages need (numpy + scipy; no torch)."""

from __future__ import annotations

import warnings

import numpy as np

__all__ = ["frechet_distance"]


def _features(a, name: str) -> np.ndarray:
    try:
        x = np.asarray(a, dtype=np.float64)
    except (TypeError, ValueError) as e:
        raise ValueError(f"{name} must be a numeric (N, D) array: {e}") from None
    if x.ndim != 2:
        raise ValueError(f"{name} must be a 2-D (N, D) array of N feature vectors, got shape {x.shape}")
    if x.shape[0] < 2 or x.shape[1] < 1:
        raise ValueError(f"{name} needs at least 2 rows and 1 column to estimate a covariance, got {x.shape}")
    if not np.isfinite(x).all():
        raise ValueError(f"{name} has {int((~np.isfinite(x)).sum())} non-finite value(s) (NaN or inf)")
    return x


def _sqrtm(m: np.ndarray) -> tuple[np.ndarray, bool]:
    """``scipy.linalg.sqrtm(m)`` and whether it is finite and accurate (``||X X - m||_F <= 1e-6 ||m||_F``)."""
    from scipy.linalg import LinAlgWarning
    from scipy.linalg import sqrtm

    with warnings.catch_warnings():  # a singular product is detected below and handled by the caller
        warnings.simplefilter("ignore", LinAlgWarning)
        root = sqrtm(m)
    if not np.isfinite(root).all():
        return root, False
    err = np.linalg.norm(root @ root - m) / max(np.linalg.norm(m), np.finfo(float).tiny)
    return root, bool(err <= 1e-6)


def frechet_distance(feats_a, feats_b, eps: float = 1e-6) -> float:
    """Frechet distance between Gaussians fitted to two feature sets (the FID formula on ``(N, D)`` arrays):

        d^2 = ||mu_a - mu_b||^2 + Tr(S_a + S_b - 2 (S_a S_b)^{1/2})

    with ``mu``/``S`` the sample mean and (unbiased) covariance of each set. ``(S_a S_b)^{1/2}`` is
    ``scipy.linalg.sqrtm``; when it is not finite or not accurate (singular covariances, e.g. fewer samples
    than dimensions) both covariances get ``eps * I`` added and it is recomputed. A numerically complex square root keeps its real
    part if the imaginary diagonal is negligible, else ValueError. Returns d^2 >= 0 (round-off below 0 is 0).
    """
    a, b = _features(feats_a, "feats_a"), _features(feats_b, "feats_b")
    if a.shape[1] != b.shape[1]:
        raise ValueError(f"feature dimensions differ: feats_a has {a.shape[1]}, feats_b has {b.shape[1]}")
    if not (np.isfinite(eps) and eps > 0):
        raise ValueError(f"eps must be a positive finite number, got {eps!r}")
    mu_a, mu_b = a.mean(axis=0), b.mean(axis=0)
    s_a = np.atleast_2d(np.cov(a, rowvar=False))
    s_b = np.atleast_2d(np.cov(b, rowvar=False))

    root, ok = _sqrtm(s_a @ s_b)
    if not ok:  # singular (e.g. N <= D): regularise both covariances, as pytorch-fid does
        jitter = eps * np.eye(len(s_a))
        root, ok = _sqrtm((s_a + jitter) @ (s_b + jitter))
        if not ok:
            warnings.warn(
                f"frechet_distance: sqrtm(S_a S_b) is inaccurate even with eps={eps:g}",
                RuntimeWarning,
                stacklevel=2,
            )
    if np.iscomplexobj(root):
        imag = np.abs(np.diagonal(root).imag).max()
        if imag > 1e-3 * max(1.0, np.abs(np.diagonal(root).real).max()):
            raise ValueError(
                f"sqrtm(S_a S_b) has a large imaginary component ({imag:.3g}); features ill-conditioned"
            )
        root = root.real
    diff = mu_a - mu_b
    d2 = float(diff @ diff + np.trace(s_a) + np.trace(s_b) - 2.0 * np.trace(root))
    return max(d2, 0.0)
