"""Benchmarks behind ``ncde-bounds bench``: Euler vs RK4 vs dopri5 (time of one training step, error vs a float64
oracle) and the cost growth with K. One thread, interleaved medians of repeats; RK4 (the training default) is the
baseline every ratio is taken against."""

from __future__ import annotations

import numpy as np
import torch

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import benchmark_many
from iclr24.paperkit import pinned_threads
from iclr24.paperkit.errors import InputError

from .model import NCDE
from .model import solve_cde
from .paths import add_time_channel
from .paths import build_control
from .synthetic import irregular_grid_indices
from .synthetic import smooth_paths
from .synthetic import subsample

SIZES = {"smoke": (16, 8, 2), "quick": (256, 32, 5), "full": (1000, 32, 7)}


def _step(model: NCDE, t: torch.Tensor, v: torch.Tensor, y: torch.Tensor):
    def go() -> None:
        model.zero_grad(set_to_none=True)
        ((model(t, v).squeeze(-1) - y) ** 2).mean().backward()

    return go


def run_benchmarks(mode: str = "quick") -> BenchReport:
    if mode not in SIZES:
        raise InputError(f"mode must be one of {sorted(SIZES)}, got {mode!r}")
    n, k, repeats = SIZES[mode]
    notes = [f"{n} smooth series, irregular grids with K = {k}, p = 8, width 32, 1 torch thread"]
    results: list[BenchResult] = []
    with pinned_threads(1):
        t, v = smooth_paths(n, n_fine=256, seed=0)
        tc, vc = subsample(t, v, irregular_grid_indices(256, k, n, seed=1))
        y = torch.randn(n)
        torch.manual_seed(0)
        base = NCDE(1, 8, 32, 1)
        solvers = {
            "euler x1": ("euler", 1),
            "euler x4": ("euler", 4),
            "rk4 x2": ("rk4", 2),
            "dopri5": ("dopri5", 1),
        }
        models = {}
        for name, (solver, sub) in solvers.items():
            m = NCDE(1, 8, 32, 1, solver=solver, substeps=sub)
            m.load_state_dict(base.state_dict())
            models[name] = m
        tf, vf = tc.float(), vc.float()
        cases = {name: _step(m, tf, vf, y) for name, m in models.items()}
        results += benchmark_many(cases, baseline="rk4 x2", repeats=repeats, warmup=1)
        # accuracy of each solver against a tight float64 dopri5 solve of the same model
        ref_model = NCDE(1, 8, 32, 1, solver="dopri5", rtol=1e-10, atol=1e-12).double()
        ref_model.load_state_dict(base.state_dict())
        with torch.no_grad():
            x = add_time_channel(tc, vc)
            ctrl = build_control(tc, x)
            z0 = ref_model.embed(ctrl.x0)
            ref = solve_cde(ref_model.vector_field, z0, ctrl, solver="dopri5", rtol=1e-10, atol=1e-12)
            for name, (solver, sub) in solvers.items():
                z = solve_cde(ref_model.vector_field, z0, ctrl, solver=solver, substeps=sub)
                notes.append(
                    f"{name}: max |z_1 - z_1(float64 dopri5, rtol 1e-10)| = {float((z - ref).abs().max()):.2e}"
                )
        # cost growth with K (RK4 x2, forward + backward)
        grow = {}
        ks = [8, 16, 32, 64] if mode != "smoke" else [4, 8]
        for kk in ks:
            tk, vk = subsample(t, v, irregular_grid_indices(256, kk, n, seed=2))
            grow[f"rk4 x2, K = {kk}"] = _step(models["rk4 x2"], tk.float(), vk.float(), y)
        res_k = benchmark_many(grow, baseline=f"rk4 x2, K = {ks[0]}", repeats=repeats, warmup=1)
        results += res_k
        med = [r.median_s for r in res_k]
        slope = float(np.polyfit(np.log(ks), np.log(med), 1)[0])
        notes.append(f"cost vs K: log-log slope {slope:.2f} (linear = 1.0) over K = {ks}")
    notes.append("speedup column = baseline time / case time; baseline = rk4 x2 (the training default)")
    return BenchReport(results=results, notes=notes)
