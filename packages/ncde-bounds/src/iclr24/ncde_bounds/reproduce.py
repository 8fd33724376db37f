"""The paper's claims, checked at CPU scale (the paper's experiments, reconstructed: the paper's generators are not
public). ``run(config) -> ClaimSet`` in smoke / quick / full modes.

(A) sampling-bias oracle, no training; (B) a trained NCDE vs grid fineness; (C) generalization gap vs the
``Lip(G_psi) x total variation`` proxy (soft); full mode adds a real UEA set (BasicMotions, from paperkit's data
folder: ``iclr24 data get basicmotions``; skipped, naming that command, when absent).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

import numpy as np
import torch

from iclr24.paperkit import ClaimSet, Paper, RunConfig, progress

from .bounds import generalization_bound, lipschitz_upper, readout_norm, vector_field_sup
from .paper_scale import PAPER_SCALE, paper_scale
from .paths import add_time_channel, total_variation
from .synthetic import (
    brownian_paths,
    irregular_grid_indices,
    sampling_bias_oracle,
    smooth_paths,
    subsample,
    true_cde,
    uniform_grid_indices,
)
from .train import GRUBaseline, TrainConfig, evaluate, fit, make_ncde

NAME = "ncde-bounds"
DATA_SEED = 100  # data seeds start here: disjoint from the seeds used while writing the package (0-3)


@dataclass(frozen=True)
class ReproConfig:
    """Defaults: the paper's experimental setting as reconstructed (p = 3 teacher, 2048-step reference path, n = 300
    oracle paths, n = 1000 train / test, K in {4, 8, 16, 32}, 3 seeds; gap study n = 64, K in {8, 128}, 5 seeds)."""

    # (A) oracle
    oracle_n: int = 300
    n_fine: int = 2048
    oracle_ks: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    irregular_k: int = 16
    oracle_substeps: int = 4
    # (B) trained NCDE vs K (smooth paths, irregular grids)
    b_n: int = 1000
    b_ks: tuple[int, ...] = (4, 8, 16, 32)
    b_seeds: int = 3
    noise_std: float = 0.01
    b_train: TrainConfig = field(default_factory=TrainConfig)
    run_b: bool = True  # False: (B) is not trained in this mode (skipped, with B_QUICK_CALIBRATION)
    gate_b: bool = True  # False: (B) is trained and reported with its numbers, but not gated
    gru_hidden: int = 32
    # (C) generalization gap vs total variation (Brownian paths)
    c_n_train: int = 64
    c_n_test: int = 1000
    c_ks: tuple[int, ...] = (8, 128)
    c_seeds: int = 5
    c_train: TrainConfig = field(default_factory=lambda: TrainConfig(solver="euler", substeps=1))
    # real data (full only)
    real_dataset: str | None = None
    real_rates: tuple[int, ...] = (1, 2, 5, 10)
    real_seeds: int = (
        3  # model seeds seed, seed + 1, ...: the claim pairs the finest and coarsest rate per seed
    )
    real_train: TrainConfig = field(default_factory=lambda: TrainConfig(loss="cross_entropy", epochs=100))


SMOKE = ReproConfig(
    oracle_n=8,
    n_fine=256,
    oracle_ks=(4, 8, 16),
    irregular_k=8,
    b_n=12,
    b_ks=(4, 8),
    b_seeds=1,
    b_train=TrainConfig(epochs=2, substeps=1),
    gru_hidden=8,
    c_n_train=8,
    c_n_test=8,
    c_ks=(4, 16),
    c_seeds=2,
    c_train=TrainConfig(solver="euler", substeps=1, epochs=2),
)
# quick: about a minute of CPU (target <= 70 CPU s for the whole `reproduce --quick`, 1 thread). (A) and (C) keep
# the config of the recorded quick runs; (B) is gated in --full only and NOT trained in quick (run_b=False): at any
# budget that fits quick it does not show its effect on calibration seeds (disjoint from the evaluated seed 0), see
# B_QUICK_CALIBRATION; training it took 82 s of the recorded quick run's 156 s wall (2026-12-02 03:26 UTC)
B_QUICK_CALIBRATION = (
    "ratio MSE(K = 4) / MSE(K = 32) on calibration seeds, measured 2026-12-02 (1 thread): 1.18 (seed 1000) and "
    "1.47 (seed 2000) at n = 150, 150 epochs, 2 seeds; 1.41 (seed 1000) at 300 epochs "
    "(116 CPU s); 0.87 (seed 1000) at n = 100, 75 epochs, 1 seed (20 CPU s, the size that fits quick's minute); "
    "rule ratio >= 1.5"
)
QUICK = ReproConfig(
    oracle_n=100,
    b_n=150,
    b_ks=(4, 32),
    b_seeds=2,
    b_train=TrainConfig(epochs=150, substeps=1),
    run_b=False,
    gate_b=False,
    c_n_test=500,
    c_seeds=3,
    c_train=TrainConfig(solver="euler", substeps=1, epochs=60),
)
# full: <= 10 minutes of CPU. The paper-scale defaults above (n = 1000, RK4 x 2, 300 epochs) take hours on a CPU;
# full keeps the four grids, 3 seeds and 300 epochs of (B) at n = 200 with RK4 x 1, (C) at 5 seeds x 150 epochs,
# and adds the real UEA set
FULL = ReproConfig(
    b_n=200,
    b_train=TrainConfig(substeps=1),
    c_train=TrainConfig(solver="euler", substeps=1, epochs=150),
    c_n_test=500,
    real_dataset="BasicMotions",
)


def _slope(ks: list[int], mse: list[float]) -> float:
    return float(np.polyfit(np.log(ks), np.log(mse), 1)[0])


def _spearman(a: list[float], b: list[float]) -> float:
    ra = np.argsort(np.argsort(a)).astype(float)
    rb = np.argsort(np.argsort(b)).astype(float)
    if ra.std() == 0 or rb.std() == 0:
        return 0.0
    return float(np.corrcoef(ra, rb)[0, 1])


def _noise(n: int, std: float, seed: int) -> torch.Tensor:
    return std * torch.randn(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)


# ---------------------------------------------------------------- (A) oracle sampling bias, no training


def _oracle_table(c: ReproConfig, seed: int) -> dict[str, dict]:
    """One batched solve of the true CDE on every grid for both path families (smooth rows first, then Brownian);
    the uniform grid at ``irregular_k`` is one of the grids, so nothing is solved twice."""
    teacher = true_cde(seed=0)
    t, vs = smooth_paths(c.oracle_n, n_fine=c.n_fine, seed=DATA_SEED + seed)
    _, vb = brownian_paths(c.oracle_n, n_fine=c.n_fine, seed=DATA_SEED + seed + 1)
    grids = {str(k): uniform_grid_indices(c.n_fine, k) for k in c.oracle_ks}
    grids.setdefault(str(c.irregular_k), uniform_grid_indices(c.n_fine, c.irregular_k))
    grids["irregular"] = irregular_grid_indices(
        c.n_fine, c.irregular_k, 2 * c.oracle_n, seed=DATA_SEED + seed + 2
    )
    res = sampling_bias_oracle(teacher, t, torch.cat([vs, vb]), grids, substeps=c.oracle_substeps)
    n = c.oracle_n
    return {
        fam: _oracle_row(res, sl, c) for fam, sl in (("smooth", slice(0, n)), ("brownian", slice(n, 2 * n)))
    }


def _oracle_row(res: dict, sl: slice, c: ReproConfig) -> dict:
    ks = list(c.oracle_ks)
    mse = [float(res[str(k)]["sq_err"][sl].mean()) for k in ks]
    return {
        "K": ks,
        "mse": mse,
        "tv": [float(res[str(k)]["tv"][sl].mean()) for k in ks],
        "slope": _slope(ks, mse),
        "irregular_mse": float(res["irregular"]["sq_err"][sl].mean()),
        "irregular_gap": float(res["irregular"]["gap"][sl].mean()),
        "uniform_mse_at_irregular_k": float(res[str(c.irregular_k)]["sq_err"][sl].mean()),
        "var_y": float(res[str(ks[0])]["y_ref"][sl].var()),
    }


def _label_x(axes, values) -> None:
    """Log x axes ticked at the measured values, written as plain numbers (not 4 x 10^0)."""
    from matplotlib.ticker import NullLocator

    for a in axes:
        a.set_xticks(values, [f"{v:g}" for v in values])
        a.xaxis.set_minor_locator(NullLocator())


def _plot_oracle(claims: ClaimSet, table: dict[str, dict], c: ReproConfig) -> str:
    import matplotlib.pyplot as plt

    ks = list(c.oracle_ks)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.6))
    for fam, mk in (("smooth", "o-"), ("brownian", "s-")):
        row = table[fam]
        ax[0].loglog(ks, row["mse"], mk, label=f"{fam} (slope {row['slope']:.2f})")
        ax[0].loglog(
            [c.irregular_k],
            [row["irregular_mse"]],
            "k" + mk[0],
            mfc="none",
            ms=9,
            label=f"{fam}, irregular grids",
        )
        ax[1].semilogx(ks, row["tv"], mk, label=fam)
    ax[0].set(xlabel="K (observations - 1)", ylabel="MSE of y(x~^D) vs y(x)", title="sampling bias (oracle)")
    ax[0].legend(fontsize=7, loc="lower left")
    ax[1].set(xlabel="K", ylabel="mean ||x~^D||_1-var", title="total variation of the interpolation")
    ax[1].legend(fontsize=8)
    _label_x(ax, ks)
    return claims.figure(fig, "oracle_bias.png")


ORACLE_SLOPES = {"smooth": (-5.0, -3.0), "brownian": (-2.6, -1.4)}  # spec, section 4 A (pass criteria)


def _add_oracle_claims(claims: ClaimSet, fam: str, row: dict, c: ReproConfig, art: str) -> None:
    mono = all(a > b for a, b in zip(row["mse"], row["mse"][1:], strict=False))
    lo, hi = ORACLE_SLOPES[fam]
    claims.add(
        claim=f"{fam} paths: the sampling bias shrinks monotonically as the grid refines, log-log slope in "
        f"[{lo}, {hi}]",
        metric="log-log slope of MSE(y(x~^D), y(x)) in K, uniform grids",
        ours=row["slope"],
        baseline_name="O(|D|) sampling-bias bound (MSE slope -2)",
        baseline=-2.0,
        rule=f"monotone == 1 and {lo} <= ours <= {hi}",
        variables={"monotone": float(mono)},
        details=row,
        artifacts=[art],
    )
    claims.add(
        claim=f"{fam} paths: irregular grids are worse than uniform ones at equal K = {c.irregular_k}",
        metric=f"oracle MSE at K = {c.irregular_k}",
        ours=row["irregular_mse"],
        baseline_name="uniform grid, same K",
        baseline=row["uniform_mse_at_irregular_k"],
        rule="ours > baseline",
        details={"irregular_mean_gap": row["irregular_gap"], "uniform_gap": 1.0 / c.irregular_k},
        artifacts=[art],
    )


def claim_oracle(claims: ClaimSet, c: ReproConfig, seed: int) -> None:
    """(A): the same true CDE on the fine path vs on x~^D; no learning."""
    table = _oracle_table(c, seed)
    art = _plot_oracle(claims, table, c)
    for fam in ("smooth", "brownian"):
        _add_oracle_claims(claims, fam, table[fam], c, art)
    tv_ok = all(
        all(a <= b + 1e-9 for a, b in zip(table[f]["tv"], table[f]["tv"][1:], strict=False)) for f in table
    )
    claims.fact(
        "total variation of x~^D never decreases under refinement (nested uniform grids)",
        value=bool(tv_ok),
        description="triangle inequality; checked on the oracle paths",
        details={f: table[f]["tv"] for f in table},
    )


# ---------------------------------------------------------------- (B) trained NCDE vs grid fineness


def _train_one(
    times,
    values,
    y,
    n_train,
    cfg: TrainConfig,
    seed: int,
    *,
    gru_hidden: int | None = None,
    device: str = "cpu",
):
    torch.manual_seed(seed)
    model = GRUBaseline(values.shape[-1], gru_hidden) if gru_hidden else make_ncde(values.shape[-1], cfg)
    model = model.to(device)
    fit(model, times[:n_train], values[:n_train], y[:n_train], cfg, seed=seed)
    train = evaluate(model, times[:n_train], values[:n_train], y[:n_train])["loss"]
    test = evaluate(model, times[n_train:], values[n_train:], y[n_train:])["loss"]
    return model, train, test


def _trained_at_k(teacher, t, v, y, k: int, c: ReproConfig, seed: int, bar, device: str) -> dict:
    """The ``b_seeds`` NCDEs (seeds ``seed, seed + 1, ...``) and the GRU (first seed) at one grid size K."""
    n = c.b_n
    idx = irregular_grid_indices(c.n_fine, k, 2 * n, seed=DATA_SEED + 12 + seed + k)
    tc, vc = subsample(t, v, idx)
    oracle = float(((teacher(tc, vc, substeps=4) - y)[n:] ** 2).mean())
    tf, vf, yf = tc.float(), vc.float(), y.float()
    tests, trains = [], []
    for s in range(c.b_seeds):
        _, tr, te = _train_one(tf, vf, yf, n, c.b_train, seed + s, device=device)
        trains.append(tr)
        tests.append(te)
        bar.update(1)
    _, _, gru = _train_one(tf, vf, yf, n, c.b_train, seed, gru_hidden=c.gru_hidden, device=device)
    bar.update(1)
    return {
        "test_mse": tests,
        "train_mse": trains,
        "mean_test_mse": float(np.mean(tests)),
        "teacher_on_coarse_grid_mse": oracle,
        "gru_test_mse": gru,
    }


def _plot_trained(claims: ClaimSet, per_k: dict[int, dict], c: ReproConfig) -> str:
    import matplotlib.pyplot as plt

    ks = list(c.b_ks)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    ax.loglog(ks, [per_k[k]["mean_test_mse"] for k in ks], "o-", label="NCDE (mean of seeds)")
    for s in range(c.b_seeds):
        ax.loglog(ks, [per_k[k]["test_mse"][s] for k in ks], ".", color="C0", alpha=0.5)
    ax.loglog(ks, [per_k[k]["gru_test_mse"] for k in ks], "^--", label="GRU on raw samples")
    ax.loglog(ks, [per_k[k]["teacher_on_coarse_grid_mse"] for k in ks], "s:", label="true CDE on x~^D")
    ax.axhline(c.noise_std**2, color="k", lw=0.8, label="noise floor")
    ax.set(xlabel="K (irregular grid)", ylabel="test MSE", title="trained NCDE vs grid fineness")
    ax.legend(fontsize=7)
    _label_x([ax], ks)
    return claims.figure(fig, "trained_vs_k.png")


def _trained_gate(c: ReproConfig, ours: float, base: float) -> dict:
    """The rule when (B) is gated in this mode, else a skip that reports the numbers (``gate_b`` in the config)."""
    if c.gate_b:
        return {"rule": "ours >= 1.5 * baseline and ours >= floor", "variables": {"floor": c.noise_std**2}}
    return {
        "status": "skipped",
        "message": f"not gated at this budget (fixed in the config before the run, from calibration seeds): "
        f"ours {ours:.3g}, baseline {base:.3g}, ratio {ours / base:.2f} against 1.5; the --full run decides it",
    }


def claim_trained(claims: ClaimSet, c: ReproConfig, seed: int, bar, device: str = "cpu") -> None:
    """(B): NCDEs trained on smooth paths observed on irregular grids with K + 1 points (same K train / test)."""
    kmin, kmax = min(c.b_ks), max(c.b_ks)
    claim = (
        f"a trained NCDE is worse on coarse grids: MSE(K = {kmin}) >= 1.5 x MSE(K = {kmax}), and never below the "
        "noise floor"
    )
    if not c.run_b:
        claims.skip(
            claim,
            f"gated in --full only and not trained in this mode (run_b=False in reproduce.py, decided "
            f"on calibration seeds): {B_QUICK_CALIBRATION}",
        )
        return
    teacher = true_cde(seed=0)
    n = c.b_n
    t, v = smooth_paths(2 * n, n_fine=c.n_fine, seed=DATA_SEED + 10 + seed)
    y = teacher(t, v, substeps=1) + _noise(2 * n, c.noise_std, DATA_SEED + 11 + seed)
    per_k = {k: _trained_at_k(teacher, t, v, y, k, c, seed, bar, device) for k in c.b_ks}
    art = _plot_trained(claims, per_k, c)
    ours, base = per_k[kmin]["mean_test_mse"], per_k[kmax]["mean_test_mse"]
    claims.add(
        claim=claim,
        metric=f"test MSE at K = {kmin}, mean of {c.b_seeds} seeds",
        ours=ours,
        baseline_name=f"same NCDE at K = {kmax}",
        baseline=base,
        **_trained_gate(c, ours, base),
        details={
            "per_K": {str(k): per_k[k] for k in c.b_ks},
            "var_y": float(y.var()),
            "train": c.b_train.to_dict(),
            "n_train": n,
            "n_test": n,
        },
        artifacts=[art],
    )


# ---------------------------------------------------------------- (C) generalization gap vs total variation


def _gap_row(teacher, c: ReproConfig, seed: int, s: int, k: int, t, v, y, device: str) -> dict:
    """One NCDE trained on the first ``c_n_train`` Brownian paths seen on the uniform grid with K + 1 points."""
    n_tr = c.c_n_train
    tc, vc = subsample(t, v, uniform_grid_indices(c.n_fine, k))
    model, tr, te = _train_one(tc.float(), vc.float(), y.float(), n_tr, c.c_train, seed + s, device=device)
    tv = total_variation(add_time_channel(tc[:n_tr], vc[:n_tr]))
    lip = lipschitz_upper(model.vector_field)
    bound = generalization_bound(
        lipschitz=lip,
        max_total_variation=float(tv.max()),
        n=n_tr,
        readout_norm=readout_norm(model),
        embed_norm=float(torch.linalg.matrix_norm(model.embed.weight.detach().double(), ord=2)),
        max_initial_value=1.0,
        vector_field_sup=vector_field_sup(model.vector_field),
    )
    return {
        "seed": seed + s,
        "K": k,
        "train_mse": tr,
        "test_mse": te,
        "gap": te - tr,
        "mean_tv": float(tv.mean()),
        "max_tv": float(tv.max()),
        "lipschitz_upper": lip,
        "proxy": lip * float(tv.max()),
        "bound_terms": bound.to_dict(),
    }


def _gap_rows(c: ReproConfig, seed: int, bar, device: str) -> list[dict]:
    """Every seed draws its own paths and noise; each trains one NCDE per grid size."""
    teacher = true_cde(seed=0)
    n = c.c_n_train + c.c_n_test
    rows = []
    for s in range(c.c_seeds):
        t, v = brownian_paths(n, n_fine=c.n_fine, seed=DATA_SEED + 20 + seed + s)
        y = teacher(t, v, substeps=1) + _noise(n, c.noise_std, DATA_SEED + 40 + seed + s)
        for k in c.c_ks:
            rows.append(_gap_row(teacher, c, seed, s, k, t, v, y, device))
            bar.update(1)
    return rows


def _plot_gap(claims: ClaimSet, rows: list[dict], c: ReproConfig, rho: float) -> str:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5, 3.6))
    for k, mk in zip(c.c_ks, "os", strict=False):
        pts = [r for r in rows if r["K"] == k]
        ax.scatter([r["proxy"] for r in pts], [r["gap"] for r in pts], marker=mk, label=f"K = {k}")
    ax.set(
        xlabel="Lip(G_psi) upper x max ||x~^D||_1-var", ylabel="test - train MSE", title=f"Spearman {rho:.2f}"
    )
    ax.legend(fontsize=8)
    return claims.figure(fig, "gap_vs_proxy.png")


def claim_gap(claims: ClaimSet, c: ReproConfig, seed: int, bar, device: str = "cpu") -> None:
    """(C): test - train gap of small-sample NCDEs on Brownian paths at two grid sizes, vs Lip(G) x TV."""
    rows = _gap_rows(c, seed, bar, device)
    kmin, kmax = min(c.c_ks), max(c.c_ks)
    gaps = {(r["seed"], r["K"]): r["gap"] for r in rows}
    wins = sum(gaps[seed + s, kmax] > gaps[seed + s, kmin] for s in range(c.c_seeds))
    rho = _spearman([r["proxy"] for r in rows], [r["gap"] for r in rows])
    art = _plot_gap(claims, rows, c, rho)
    claims.add(
        claim=f"(soft) rougher sampled paths generalise worse: larger test - train gap at K = {kmax} than at "
        f"K = {kmin} in >= 80% of seeds",
        metric=f"fraction of {c.c_seeds} seeds with gap(K = {kmax}) > gap(K = {kmin})",
        ours=wins / c.c_seeds,
        baseline_name="chance",
        baseline=0.5,
        rule="ours >= 0.8",
        details={
            "spearman_proxy_vs_gap": rho,
            "runs": rows,
            "train": c.c_train.to_dict(),
            "note": "bound terms are form-only (C_q = 1)",
        },
        artifacts=[art],
    )
    claims.fact(
        "Spearman correlation of Lip(G_psi) x TV with the generalization gap (reported, not gated)",
        value=rho,
        description=f"{len(rows)} trained models (seeds x K); the scatter is gap_vs_proxy.png",
    )


# ---------------------------------------------------------------- real data (full only)


def _load_real(c: ReproConfig, data_dir):
    """Train and test split, both standardised with the training split's per-channel mean and std."""
    from .data import load_aeon

    # DataMissing (-> skipped, naming `iclr24 data get basicmotions`) when the data folder lacks the set
    train = load_aeon(c.real_dataset, "train", data_dir)
    test = load_aeon(c.real_dataset, "test", data_dir)
    mu = train.values.mean(dim=(0, 1), keepdim=True)
    sd = train.values.std(dim=(0, 1), keepdim=True).clamp_min(1e-6)
    train.values, test.values = (train.values - mu) / sd, (test.values - mu) / sd
    return train, test


def _real_row(c: ReproConfig, train, test, s: int, r: int, device: str) -> dict:
    """One NCDE classifier (seed ``s``) trained and tested on every ``r``-th observation."""
    from .data import downsample

    tr, te = downsample(train, r), downsample(test, r)
    torch.manual_seed(s)
    model = make_ncde(tr.values.shape[-1], c.real_train, output_dim=len(train.class_names)).to(device)
    fit(model, tr.times, tr.values, tr.labels, c.real_train, seed=s)
    acc = evaluate(model, te.times, te.values, te.labels, loss="cross_entropy")["accuracy"]
    tv = total_variation(add_time_channel(tr.times, tr.values))
    lip = lipschitz_upper(model.vector_field)
    b = generalization_bound(
        lipschitz=lip,
        max_total_variation=float(tv.max()),
        n=len(tr),
        readout_norm=readout_norm(model),
    )
    return {
        "seed": s,
        "rate": r,
        "length": int(tr.values.shape[1]),
        "test_accuracy": acc,
        "mean_tv": float(tv.mean()),
        "lipschitz_upper": lip,
        "k2": b.k2,
        "log10_complexity_term": b.log10_complexity,  # exp(K_2) overflows on real paths
    }


def _plot_real(claims: ClaimSet, c: ReproConfig, acc: dict, term: dict, n_seeds: int) -> str:
    import matplotlib.pyplot as plt

    rates = list(c.real_rates)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    ax[0].semilogx(rates, [float(np.mean(acc[r])) for r in rates], "o-", label=f"mean of {n_seeds} seeds")
    for k in range(n_seeds):
        ax[0].semilogx(rates, [acc[r][k] for r in rates], ".", color="C0", alpha=0.5)
    ax[0].set(xlabel="keep every r-th observation", ylabel="test accuracy", title=c.real_dataset)
    ax[0].legend(fontsize=8)
    ax[1].semilogx(rates, [float(np.mean(term[r])) for r in rates], "s-", color="C1")
    ax[1].set(
        xlabel="keep every r-th observation", ylabel="log10 complexity term", title="bound term (form only)"
    )
    _label_x(ax, rates)
    return claims.figure(fig, "real_vs_rate.png")


def claim_real(claims: ClaimSet, c: ReproConfig, seed: int, bar, device: str = "cpu", data_dir=None) -> None:
    """Real data: an NCDE classifier on a UEA set at coarser and coarser sampling, with the bound's terms; every
    rate is trained from the same initialisation for each of ``real_seeds`` seeds (paired seeds)."""
    train, test = _load_real(c, data_dir)
    seeds = [seed + k for k in range(c.real_seeds)]
    rows = []
    for s in seeds:
        for r in c.real_rates:
            rows.append(_real_row(c, train, test, s, r, device))
            bar.update(1)
    rates = list(c.real_rates)
    acc = {r: [x["test_accuracy"] for x in rows if x["rate"] == r] for r in rates}
    term = {r: [x["log10_complexity_term"] for x in rows if x["rate"] == r] for r in rates}
    art = _plot_real(claims, c, acc, term, len(seeds))
    claims.paired(
        claim=f"{c.real_dataset}: the finest sampling classifies at least as well as the coarsest",
        metric=f"test accuracy, seeds {seeds} (paired: the same initialisation at every rate)",
        ours=acc[rates[0]],
        baseline_name=f"every {rates[-1]}-th observation",
        baseline=acc[rates[-1]],
        seeds=seeds,
        better="higher",
        margin=0.0,
        details={
            "per_seed_and_rate": rows,
            "mean_accuracy_per_rate": {str(r): float(np.mean(acc[r])) for r in rates},
        },
        artifacts=[art],
    )


# ---------------------------------------------------------------- the list of claims


def run(cfg: RunConfig) -> ClaimSet:
    c: ReproConfig = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)
    total = (
        len(c.b_ks) * (c.b_seeds + 1) * c.run_b
        + c.c_seeds * len(c.c_ks)
        + (len(c.real_rates) * c.real_seeds if c.real_dataset else 0)
    )
    # one thread: Paper(threads=1) pins torch and BLAS around every claim run
    with progress(total=total, desc="ncde-bounds: models trained", disable=not cfg.progress or None) as bar:
        with claims.timed("(A) oracle sampling bias"):
            claim_oracle(claims, c, cfg.seed)
        with claims.timed("(B) trained NCDE vs grid fineness"):
            claim_trained(claims, c, cfg.seed, bar, cfg.device)
        with claims.timed("(C) generalization gap vs total variation"):
            claim_gap(claims, c, cfg.seed, bar, cfg.device)
        if c.real_dataset:
            with claims.timed(f"real data: {c.real_dataset}"):
                claim_real(claims, c, cfg.seed, bar, cfg.device, cfg.data_dir)
    claims.fact("config", value=cfg.mode, description="the ReproConfig of this mode", details=_cfg_dict(c))
    return claims


def _cfg_dict(c: ReproConfig) -> dict:
    d = asdict(c)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


PAPER = Paper(
    name=NAME,
    title="On the Generalization and Approximation Capacities of Neural Controlled Differential Equations",
    summary="NCDE error grows with sampling coarseness and path variation: oracle bias slopes, trained models, gap",
    run=run,
    data=("basicmotions",),
    paper_scale=paper_scale,
)

__all__ = [
    "B_QUICK_CALIBRATION",
    "FULL",
    "PAPER",
    "PAPER_SCALE",
    "QUICK",
    "SMOKE",
    "ReproConfig",
    "paper_scale",
    "run",
]
