"""The inner-loop schedule: how many inner samples each outer step of Alg. 1 gets.

The paper's analysis of rdMC asks every outer step k for a score estimate within the same tolerance ε. The Monte
Carlo error of ŝ(x, t) = -(x - e^{-t} m̂)/(1-e^{-2t}) from n inner samples of q_t is, per coordinate,

    E‖ŝ - ∇ln p_t‖² ≈ e^{-2t} Var_{q_t}(x0) / ((1-e^{-2t})² n)  ≤  e^{-2t} d / ((1-e^{-2t})² μ_t n),

with μ_t the log-Sobolev constant of q_t (Var ≤ d/μ_t). Holding the error at ε² gives n_k ∝ e^{-2t}/((1-e^{-2t})²
μ_t): the time-dependent sample size of the paper's theorem. μ_t is bounded below by the precision of the Gaussian
factor of q_t, 1/(e^{2t}-1), which is exact for log-concave p* (Bakry-Émery); for other targets the paper's LSI
constants depend on quantities a user cannot compute, so this bound is used for every target. Then

    n_k ∝ 1 / (1 - e^{-2 t_k}),

i.e. few inner samples at large t and many as t → 0, where the estimator's 1/(1-e^{-2t}) amplifies the noise.
``schedule="constant"`` gives every step the same n (the calibrated setting of the claims).
"""

from __future__ import annotations

import math

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float

__all__ = ["SCHEDULES", "schedule_weights", "inner_sample_sizes"]

SCHEDULES = ("paper", "constant")


def schedule_weights(times: list[float], schedule: str = "paper") -> list[float]:
    """Unnormalised weights of the outer steps at ``times`` (t_0 = T, ..., t_{K-1}), see the module docstring."""
    if schedule not in SCHEDULES:
        raise InputError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
    if isinstance(times, str | bytes) or not isinstance(times, list | tuple) or not times:
        raise InputError(f"times must be a non-empty list of diffusion times, got {times!r}")
    for t in times:
        check_float(t, "each time", minimum=0, maximum=350, open_min=True)
    if schedule == "constant":
        return [1.0] * len(times)
    # Eq. (sample size): n_k ∝ e^{-2t_k} d / ((1 - e^{-2t_k})² μ_{t_k} ε²) with μ_t >= 1/(e^{2t} - 1)
    return [1.0 / -math.expm1(-2.0 * float(t)) for t in times]


def inner_sample_sizes(times: list[float], total: int, schedule: str = "paper") -> list[int]:
    """Split ``total`` inner samples over the outer steps at ``times`` in proportion to :func:`schedule_weights`,
    at least one each, summing exactly to ``total`` (largest remainders). ``constant`` with total = K·m gives m
    at every step."""
    k = len(times)
    if isinstance(total, bool) or not isinstance(total, int) or not k <= total <= 10**9:
        raise InputError(
            f"total inner samples must be an int >= the number of outer steps {k}, got {total!r}"
        )
    w = schedule_weights(times, schedule)
    shares = [(total - k) * wi / sum(w) for wi in w]
    sizes = [1 + math.floor(s) for s in shares]
    order = sorted(range(k), key=lambda i: (-(shares[i] - math.floor(shares[i])), i))
    for i in order[: total - sum(sizes)]:
        sizes[i] += 1
    return sizes
