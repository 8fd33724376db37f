"""The paper's claims, checked at CPU scale (the paper's experiments, reconstructed: the paper's generators are not
public). ``run(config) -> ClaimSet`` in smoke / quick / full modes; ``CLAIMS`` below is the claims table.

- (B, headline) a trained NCDE is worse on coarse grids, over paired seeds (each seed: its own paths, noise, grids
  and initialisation), seeds from the power rule on calibration seeds;
- (C, supporting, ``--full``) the generalisation gap at a fine (rough) vs a coarse grid of Brownian paths, the
  prediction one would read off the bound's total-variation dependence; the bound itself is vacuous here (its
  complexity term is 10^4.5-10^19 against gaps of 10^-4 to 10^-3), so the row reports what the realised gap does,
  not a test of the bound;
- (real, supporting, ``--full``) BasicMotions (paperkit's data folder: ``iclr24 data get basicmotions``): the finest
  sampling against the coarsest, paired seeds (a tie on the calibration seeds: recorded undecidable, not run);
- (A, checks) the sampling-bias oracle, no training: the interpolation error's rates on known paths (numerical
  analysis: a check of the pipeline, not a learning result).

How the configs and seeds were chosen: ``docs/calibration.md``.
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import torch

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import ClaimSpec
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit import progress
from iclr24.paperkit import run_claims
from iclr24.paperkit.power import Calibration

from .bounds import generalization_bound
from .bounds import lipschitz_upper
from .bounds import readout_norm
from .bounds import vector_field_sup
from .paper_scale import PAPER_SCALE
from .paper_scale import paper_scale
from .paths import add_time_channel
from .paths import total_variation
from .synthetic import brownian_paths
from .synthetic import irregular_grid_indices
from .synthetic import sampling_bias_oracle
from .synthetic import smooth_paths
from .synthetic import subsample
from .synthetic import true_cde
from .synthetic import uniform_grid_indices
from .train import GRUBaseline
from .train import TrainConfig
from .train import evaluate
from .train import fit
from .train import make_ncde

NAME = "ncde-bounds"
DATA_SEED = 100  # (A)'s data seeds start here: disjoint from the seeds used while writing the package (0-3)
B_SEED, C_SEED = 10_000, 20_000  # (B) and (C): seed s draws its data from B_SEED + 100 s + ... (and C_SEED)


@dataclass(frozen=True)
class ReproConfig:
    """Defaults: the paper's experimental setting as reconstructed (p = 3 teacher, 2048-step reference path, n = 300
    oracle paths, n = 1000 train / test, K in {4, 8, 16, 32}; gap study n = 64, K in {8, 128}). The seeds of (B),
    (C) and the real set come from the claims table (``CLAIMS``), not from here."""

    # (A) oracle
    oracle_n: int = 300
    n_fine: int = 2048
    oracle_ks: tuple[int, ...] = (4, 8, 16, 32, 64, 128)
    irregular_k: int = 16
    oracle_substeps: int = 4
    # (B) trained NCDE vs K (smooth paths, irregular grids): the claim compares min(b_ks) with max(b_ks)
    b_n: int = 1000
    b_ks: tuple[int, ...] = (4, 8, 16, 32)
    noise_std: float = 0.01
    b_train: TrainConfig = field(default_factory=TrainConfig)
    b_gru: bool = True  # a GRU on the raw samples at every K, first seed (the figure's sanity reference)
    b_figure_seeds: int = (
        3  # the grids between min and max(b_ks) are trained for the figure on this many seeds
    )
    gru_hidden: int = 32
    # (C) generalization gap vs total variation (Brownian paths)
    c_n_train: int = 64
    c_n_test: int = 1000
    c_ks: tuple[int, ...] = (8, 128)
    c_train: TrainConfig = field(default_factory=lambda: TrainConfig(solver="euler", substeps=1))
    # real data (full only): the claim compares real_rates[0] (finest) with real_rates[-1] (coarsest)
    real_dataset: str | None = None
    real_rates: tuple[int, ...] = (1, 2, 5, 10)
    real_figure_seeds: int = 3  # the intermediate rates are trained for the figure on this many seeds only
    real_train: TrainConfig = field(default_factory=lambda: TrainConfig(loss="cross_entropy", epochs=100))


SMOKE = ReproConfig(
    oracle_n=8,
    n_fine=256,
    oracle_ks=(4, 8, 16),
    irregular_k=8,
    b_n=12,
    b_ks=(4, 8),
    b_train=TrainConfig(epochs=2, substeps=1),
    gru_hidden=8,
    c_n_train=8,
    c_n_test=8,
    c_ks=(4, 16),
    c_train=TrainConfig(solver="euler", substeps=1, epochs=2),
)
# quick: (B) on the two grids the claim compares, n = 150 / 150, RK4 x 1, 150 epochs, no GRU (docs/calibration.md)
QUICK = ReproConfig(
    oracle_n=100,
    b_n=150,
    b_ks=(4, 32),
    b_train=TrainConfig(epochs=150, substeps=1),
    b_gru=False,
    c_n_test=500,
    c_train=TrainConfig(solver="euler", substeps=1, epochs=60),
)
# full: (B) at the paper's n = 1000 / 1000 with RK4 x 1 and 300 epochs (K = 8 and 16 on the first seeds, for the
# figure; n = 200 let the K = 32 models overfit on some seeds: docs/calibration.md), (C) at 150 epochs, and the real
# UEA set
FULL = ReproConfig(
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


def _oracle_claim(
    claims: ClaimSet, spec: ClaimSpec, fam: str, what: str, row: dict, c: ReproConfig, art: str
):
    if what == "slope":
        mono = all(a > b for a, b in zip(row["mse"], row["mse"][1:], strict=False))
        claims.add(
            spec=spec, ours=row["slope"], baseline=-2.0, variables={"monotone": float(mono)}, details=row,
            artifacts=[art],
        )  # fmt: skip
        return
    claims.add(
        spec=spec,
        ours=row["irregular_mse"],
        baseline=row["uniform_mse_at_irregular_k"],
        details={
            "K": c.irregular_k,
            "irregular_mean_gap": row["irregular_gap"],
            "uniform_gap": 1.0 / c.irregular_k,
        },
        artifacts=[art],
    )


def oracle_table(claims: ClaimSet, c: ReproConfig, seed: int, cache: dict) -> tuple[dict, str]:
    """(A), computed once per run: the same true CDE on the fine path vs on x~^D; no learning."""
    if "oracle" not in cache:
        table = _oracle_table(c, seed)
        art = _plot_oracle(claims, table, c)
        tv_ok = all(
            all(a <= b + 1e-9 for a, b in zip(table[f]["tv"], table[f]["tv"][1:], strict=False))
            for f in table
        )
        claims.fact(
            "total variation of x~^D never decreases under refinement (nested uniform grids)",
            value=bool(tv_ok),
            description="triangle inequality; checked on the oracle paths",
            details={f: table[f]["tv"] for f in table},
        )
        cache["oracle"] = (table, art)
    return cache["oracle"]


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


def trained_seed(
    c: ReproConfig, s: int, *, ks=None, gru: bool = False, device: str = "cpu"
) -> dict[int, dict]:
    """(B) for one seed ``s``: its own smooth paths, noise and irregular grids (from ``B_SEED + 100 s``) and its own
    initialisation (``s``); one NCDE per grid size K (the same K in training and test), ``n`` train / ``n`` test."""
    teacher = true_cde(seed=0)
    n, base = c.b_n, B_SEED + 100 * s
    t, v = smooth_paths(2 * n, n_fine=c.n_fine, seed=base)
    y = teacher(t, v, substeps=1) + _noise(2 * n, c.noise_std, base + 1)
    out = {}
    for k in ks or c.b_ks:
        tc, vc = subsample(t, v, irregular_grid_indices(c.n_fine, k, 2 * n, seed=base + 2 + k))
        oracle = float(((teacher(tc, vc, substeps=4) - y)[n:] ** 2).mean())
        tf, vf, yf = tc.float(), vc.float(), y.float()
        _, tr, te = _train_one(tf, vf, yf, n, c.b_train, s, device=device)
        row = {"test_mse": te, "train_mse": tr, "teacher_on_coarse_grid_mse": oracle}
        if gru:
            row["gru_test_mse"] = _train_one(
                tf, vf, yf, n, c.b_train, s, gru_hidden=c.gru_hidden, device=device
            )[2]
        out[k] = row
    return out


def _plot_trained(claims: ClaimSet, runs: dict[int, dict], c: ReproConfig) -> str:
    import matplotlib.pyplot as plt

    ks = list(c.b_ks)
    seeds = list(runs)
    fig, ax = plt.subplots(figsize=(5, 3.6))
    mean = [np.mean([runs[s][k]["test_mse"] for s in seeds if k in runs[s]]) for k in ks]
    ax.loglog(ks, mean, "o-", label="NCDE (mean of the seeds trained at K)")
    for s in seeds:
        have = [k for k in ks if k in runs[s]]
        ax.loglog(have, [runs[s][k]["test_mse"] for k in have], ".", color="C0", alpha=0.5)
    first = runs[seeds[0]]
    if "gru_test_mse" in first[ks[0]]:
        ax.loglog(ks, [first[k]["gru_test_mse"] for k in ks], "^--", label="GRU on raw samples (first seed)")
    ax.loglog(
        ks, [first[k]["teacher_on_coarse_grid_mse"] for k in ks], "s:", label="true CDE on x~^D (first seed)"
    )
    ax.axhline(c.noise_std**2, color="k", lw=0.8, label="noise floor")
    ax.set(xlabel="K (irregular grid)", ylabel="test MSE", title="trained NCDE vs grid fineness")
    ax.legend(fontsize=7)
    _label_x([ax], ks)
    return claims.figure(fig, "trained_vs_k.png")


def claim_trained(
    claims: ClaimSet, spec: ClaimSpec, c: ReproConfig, seeds: list[int], bar, device: str = "cpu", runs=None
):
    """(B): per seed, the NCDE's test MSE on the coarsest grid against the finest (paired: the same paths, noise
    and initialisation), the row's factor in log-ratio form over the seeds. ``runs``: seed -> trained_seed, shared
    by the rows that compare the same models (each seed is trained once)."""
    kmin, kmax = min(c.b_ks), max(c.b_ks)
    runs = {} if runs is None else runs
    for s in seeds:
        if s not in runs:
            ks = c.b_ks if len(runs) < c.b_figure_seeds else (kmin, kmax)
            runs[s] = trained_seed(c, s, ks=ks, gru=c.b_gru and not runs, device=device)
            bar.update(1)
    runs_here = {s: runs[s] for s in seeds}
    art = _plot_trained(claims, runs, c)
    runs = runs_here
    claims.paired(
        spec=spec,
        ours=[runs[s][kmin]["test_mse"] for s in seeds],
        baseline=[runs[s][kmax]["test_mse"] for s in seeds],
        seeds=seeds,
        details={
            "per_seed": {str(s): {str(k): r for k, r in runs[s].items()} for s in seeds},
            "K": [kmin, kmax],
            "noise_floor": c.noise_std**2,
            "above_noise_floor_every_seed": all(runs[s][kmin]["test_mse"] >= c.noise_std**2 for s in seeds),
            "train": c.b_train.to_dict(),
            "n_train": c.b_n,
            "n_test": c.b_n,
        },
        artifacts=[art],
    )


# ---------------------------------------------------------------- (C) generalization gap vs total variation


def gap_seed(c: ReproConfig, s: int, device: str = "cpu") -> dict[int, dict]:
    """(C) for one seed ``s``: its own Brownian paths and noise (from ``C_SEED + 100 s``), one NCDE (initialisation
    ``s``) per grid size K trained on the first ``c_n_train`` paths seen on the uniform grid with K + 1 points."""
    teacher = true_cde(seed=0)
    n, n_tr, base = c.c_n_train + c.c_n_test, c.c_n_train, C_SEED + 100 * s
    t, v = brownian_paths(n, n_fine=c.n_fine, seed=base)
    y = teacher(t, v, substeps=1) + _noise(n, c.noise_std, base + 1)
    out = {}
    for k in c.c_ks:
        tc, vc = subsample(t, v, uniform_grid_indices(c.n_fine, k))
        model, tr, te = _train_one(tc.float(), vc.float(), y.float(), n_tr, c.c_train, s, device=device)
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
        out[k] = {
            "seed": s,
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
    return out


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


def claim_gap(claims: ClaimSet, spec: ClaimSpec, c: ReproConfig, seeds: list[int], bar, device: str = "cpu"):
    """(C): the test - train gap at the fine grid (rough interpolations, large total variation) against the coarse
    one, paired per seed; the bound's complexity term beside it, to show that it predicts nothing at this scale."""
    runs = {}
    for s in seeds:
        runs[s] = gap_seed(c, s, device=device)
        bar.update(1)
    kmin, kmax = min(c.c_ks), max(c.c_ks)
    rows = [r for s in seeds for r in runs[s].values()]
    rho = _spearman([r["proxy"] for r in rows], [r["gap"] for r in rows])
    art = _plot_gap(claims, rows, c, rho)
    log10 = [r["bound_terms"]["log10_complexity"] for r in rows]
    gaps = [abs(r["gap"]) for r in rows]
    claims.paired(
        spec=spec,
        ours=[runs[s][kmax]["gap"] for s in seeds],
        baseline=[runs[s][kmin]["gap"] for s in seeds],
        seeds=seeds,
        details={
            "runs": rows,
            "spearman_proxy_vs_gap": rho,
            "mean_tv": {str(k): float(np.mean([runs[s][k]["mean_tv"] for s in seeds])) for k in (kmin, kmax)},
            "log10_complexity_term": {"min": min(log10), "max": max(log10)},
            "largest_gap": max(gaps),
            "train": c.c_train.to_dict(),
            "note": "bound terms are form-only (C_q = 1); the complexity term exceeds every realised gap by a "
            "factor of 10^8 or more, so the bound is vacuous here and its total-variation dependence is no "
            "prediction of the realised gap",
        },
        artifacts=[art],
    )
    claims.fact(
        "the generalisation bound is vacuous at this scale: its complexity term (log10, C_q = 1) against the largest "
        "realised gap (log10)",
        value=f"{min(log10):.1f} to {max(log10):.1f} vs {np.log10(max(gaps)):.1f}",
        description="the bound's form evaluated on the trained models (a formula, not a measurement of the gap)",
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


def real_row(c: ReproConfig, train, test, s: int, r: int, device: str = "cpu") -> dict:
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


def _plot_real(claims: ClaimSet, c: ReproConfig, rows: list[dict]) -> str:
    import matplotlib.pyplot as plt

    rates = list(c.real_rates)
    fig, ax = plt.subplots(1, 2, figsize=(9, 3.4))
    by = {r: [x for x in rows if x["rate"] == r] for r in rates}
    mean = [float(np.mean([x["test_accuracy"] for x in by[r]])) for r in rates]
    ax[0].semilogx(rates, mean, "o-", label="mean over seeds")
    for r in rates:
        ax[0].semilogx([r] * len(by[r]), [x["test_accuracy"] for x in by[r]], ".", color="C0", alpha=0.4)
    ax[0].set(xlabel="keep every r-th observation", ylabel="test accuracy", title=c.real_dataset)
    ax[0].legend(fontsize=8)
    ax[1].semilogx(
        rates, [float(np.mean([x["log10_complexity_term"] for x in by[r]])) for r in rates], "s-", color="C1"
    )
    ax[1].set(
        xlabel="keep every r-th observation", ylabel="log10 complexity term", title="bound term (form only)"
    )
    _label_x(ax, rates)
    return claims.figure(fig, "real_vs_rate.png")


def claim_real(
    claims: ClaimSet, spec: ClaimSpec, c: ReproConfig, seeds: list[int], bar, device="cpu", data_dir=None
):
    """Real data: an NCDE classifier on a UEA set at the finest and the coarsest sampling, from the same
    initialisation for each seed (paired seeds); the intermediate rates on the first ``real_figure_seeds`` seeds,
    for the figure."""
    train, test = _load_real(c, data_dir)
    fine, coarse = c.real_rates[0], c.real_rates[-1]
    rows = []
    for i, s in enumerate(seeds):
        for r in c.real_rates if i < c.real_figure_seeds else (fine, coarse):
            rows.append(real_row(c, train, test, s, r, device))
        bar.update(1)
    acc = {(x["seed"], x["rate"]): x["test_accuracy"] for x in rows}
    art = _plot_real(claims, c, rows)
    claims.paired(
        spec=spec,
        ours=[acc[s, fine] for s in seeds],
        baseline=[acc[s, coarse] for s in seeds],
        seeds=seeds,
        details={
            "per_seed_and_rate": rows,
            "mean_accuracy_per_rate": {
                str(r): float(np.mean([x["test_accuracy"] for x in rows if x["rate"] == r]))
                for r in c.real_rates
            },
        },
        artifacts=[art],
    )


# ---------------------------------------------------------------- the claims table
# Calibrations (docs/calibration.md): per calibration seed (1001-1008, disjoint from the evaluated pool 0-99), the
# claim's own per-seed function (trained_seed, gap_seed, real_row) in the mode's config, 1 thread; seconds: CPU of one
# evaluated seed under load (inflated).
_MEASURED = "2026-12-03, branch ev-drum-ncde, 1 thread, load 9-11 on 2 shared cores (CPU seconds inflated)"
CALIBRATION_SEEDS = tuple(range(1001, 1009))
POOL = tuple(range(100))  # evaluated seeds: offsets added to --seed
# (B): test MSE at K = 4 and K = 32 per calibration seed 1001-1008
# fmt: off
_B = {
    "quick": {
        "kmin": (2.8766e-04, 2.4366e-04, 2.7712e-04, 5.0680e-04, 2.8966e-04, 3.2189e-04, 2.7043e-04, 2.8010e-04),
        "kmax": (2.2848e-04, 2.0695e-04, 2.2334e-04, 2.9738e-04, 2.1940e-04, 2.8182e-04, 2.0385e-04, 1.7813e-04),
        "seconds": 6.0,
    },
    "full": {  # n = 1000
        "kmin": (2.1034e-04, 2.4790e-04, 2.4014e-04, 2.3532e-04, 2.4922e-04, 2.3060e-04, 2.4009e-04, 2.2216e-04),
        "kmax": (1.3337e-04, 1.3353e-04, 1.5623e-04, 1.6237e-04, 1.5869e-04, 1.2888e-04, 1.4445e-04, 1.3997e-04),
        "seconds": 32.7,
    },
}
# fmt: on
# (C): test - train gap at K = 128 and K = 8 per calibration seed 1001-1006 (full config)
_C = {
    "kmax": (2.4314e-04, 7.1034e-05, 3.1684e-04, 1.3092e-04, 1.0352e-04, 1.2566e-04),
    "kmin": (9.5341e-05, 6.6508e-05, 1.1626e-03, 5.7569e-04, 6.1871e-04, 2.3936e-03),
    "seconds": 4.8,
}
# real data: BasicMotions test accuracy at the finest and the coarsest rate per calibration seed 1001-1008 (full)
_REAL = {
    "fine": (0.775, 0.825, 0.850, 0.800, 0.625, 0.575, 0.625, 0.825),
    "coarse": (0.825, 0.650, 0.700, 0.700, 0.775, 0.725, 0.725, 0.675),
    "seconds": 20.6,
}


def _cal(seeds, ours, baseline, seconds, note) -> Calibration:
    return Calibration(
        seeds=seeds, ours=ours, baseline=baseline, seconds_per_seed=seconds, measured=_MEASURED, note=note
    )


def _b_cal(mode: str) -> Calibration:
    m = _B[mode]
    seeds = CALIBRATION_SEEDS[: len(m["kmin"])]
    return _cal(seeds, m["kmin"], m["kmax"], m["seconds"], "test MSE at K = 4 (ours) and K = 32")


def _c_cal() -> Calibration:
    m = _C
    seeds = CALIBRATION_SEEDS[: len(m["kmax"])]
    return _cal(seeds, m["kmax"], m["kmin"], m["seconds"], "test - train gap at K = 128 (ours) and K = 8")


_ORACLE = dict(
    data="smooth / Brownian controls of the reconstructed teacher CDE, 2048-step reference path (no training)",
    seeds={"quick": (0,), "full": (0,)},
    seeds_why="one deterministic run: the interpolation error of known paths (numerical analysis, no learning); "
    "100 paths per family in quick, 300 in full",
    budget={"quick": 3, "full": 6},
)
ORACLE_SLOPES = {"smooth": (-5.0, -3.0), "brownian": (-2.6, -1.4)}  # spec, section 4 A (pass criteria)


def _oracle_rows(fam: str) -> tuple[ClaimSpec, ClaimSpec]:
    lo, hi = ORACLE_SLOPES[fam]
    return (
        ClaimSpec(
            id=f"oracle_{fam}_slope",
            kind="check",
            claim=f"{fam} paths: the sampling bias shrinks monotonically as the grid refines, log-log slope in "
            f"[{lo}, {hi}]",
            metric="log-log slope of MSE(y(x~^D), y(x)) in K, uniform grids",
            baseline="O(|D|) sampling-bias bound (MSE slope -2)",
            rule=f"monotone == 1 and {lo} <= ours <= {hi}",
            **_ORACLE,
        ),
        ClaimSpec(
            id=f"oracle_{fam}_irregular",
            kind="check",
            claim=f"{fam} paths: irregular grids are worse than uniform ones at equal K",
            metric="oracle MSE at K = 16 (8 in smoke), irregular grids",
            baseline="uniform grid, same K",
            rule="ours > baseline",
            **_ORACLE,
        ),
    )


CLAIMS = (
    ClaimSpec(
        id="trained_vs_k",
        kind="headline",
        claim="a trained NCDE is worse on coarse grids: its test MSE at K = 4 is above its test MSE at K = 32",
        metric="test MSE at K = 4 (smooth paths, irregular grids; each seed: its own paths, noise, grids, init)",
        baseline="the same NCDE recipe at K = 32",
        data="smooth paths of the reconstructed teacher CDE, targets + N(0, 0.01^2) noise",
        better="higher",
        factor=1.0,
        seeds={"quick": POOL, "full": POOL},
        calibration={"quick": _b_cal("quick"), "full": _b_cal("full")},
        budget={"quick": 32, "full": 150},
        power=0.9,
        seeds_why="power rule (paired t on the log-ratio, 90 % power) on calibration seeds 1001-1008",
    ),
    ClaimSpec(
        id="gap_vs_tv",
        kind="supporting",
        claim="(reading the bound's total-variation dependence as a prediction) rougher sampled paths generalise "
        "worse: a larger test - train gap at K = 128 than at K = 8",
        metric="test - train MSE at K = 128 (Brownian paths, uniform grids, 64 training series)",
        baseline="the same NCDE recipe at K = 8",
        data="Brownian paths of the reconstructed teacher CDE, targets + N(0, 0.01^2) noise",
        better="higher",
        margin=0.0,
        modes=("full",),  # quick's 60-epoch models spread too much for its minute (docs/calibration.md)
        seeds={"full": POOL},
        calibration={"full": _c_cal()},
        budget={"full": 110},
        power=0.9,
        seeds_why="power rule (paired t, 90 % power) on calibration seeds 1001-1006",
    ),
    ClaimSpec(
        id="basicmotions",
        kind="supporting",
        claim="BasicMotions: the finest sampling classifies at least as well as the coarsest",
        metric="test accuracy at every observation (paired: the same initialisation at both rates)",
        baseline="every 10-th observation",
        data="basicmotions",
        better="higher",
        margin=0.0,
        modes=("full",),
        seeds={"full": POOL},
        calibration={
            "full": _cal(
                CALIBRATION_SEEDS[: len(_REAL["fine"])],
                _REAL["fine"],
                _REAL["coarse"],
                _REAL["seconds"],
                "test accuracy at the finest (ours) and the coarsest rate",
            )
        },
        budget={"full": 300},
        power=0.9,
        seeds_why="power rule (paired t, 90 % power) on calibration seeds 1001-1008",
    ),
    *_oracle_rows("smooth"),
    *_oracle_rows("brownian"),
)
ROWS = {c.id: c for c in CLAIMS}


def run(cfg: RunConfig) -> ClaimSet:
    c: ReproConfig = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)
    cache: dict = {}
    b_runs: dict = {}

    def oracle(spec, seeds, fam, what):
        table, art = oracle_table(claims, c, cfg.seed, cache)
        _oracle_claim(claims, spec, fam, what, table[fam], c, art)

    # one thread: Paper(threads=1) pins torch and BLAS around every claim run
    with progress(desc="ncde-bounds: seeds trained", disable=not cfg.progress or None) as bar:
        measures = {
            "trained_vs_k": lambda spec, seeds: claim_trained(
                claims, spec, c, seeds, bar, cfg.device, b_runs
            ),
            "gap_vs_tv": lambda spec, seeds: claim_gap(claims, spec, c, seeds, bar, cfg.device),
            "basicmotions": lambda spec, seeds: claim_real(
                claims, spec, c, seeds, bar, cfg.device, cfg.data_dir
            ),
            **{
                f"oracle_{fam}_{what}": (
                    lambda spec, seeds, fam=fam, what=what: oracle(spec, seeds, fam, what)
                )
                for fam in ("smooth", "brownian")
                for what in ("slope", "irregular")
            },
        }
        run_claims(claims, CLAIMS, measures)
    claims.fact("config", value=cfg.mode, description="the ReproConfig of this mode", details=_cfg_dict(c))
    return claims


def _cfg_dict(c: ReproConfig) -> dict:
    d = asdict(c)
    return {k: (list(v) if isinstance(v, tuple) else v) for k, v in d.items()}


PAPER = Paper(
    name=NAME,
    title="On the Generalization and Approximation Capacities of Neural Controlled Differential Equations",
    summary="NCDE error grows with sampling coarseness: trained models (paired seeds), the realised gap against a "
    "vacuous bound, oracle bias rates",
    run=run,
    data=("basicmotions",),
    paper_scale=paper_scale,
    claims=CLAIMS,
)

__all__ = [
    "CALIBRATION_SEEDS",
    "CLAIMS",
    "FULL",
    "PAPER",
    "PAPER_SCALE",
    "QUICK",
    "SMOKE",
    "ReproConfig",
    "paper_scale",
    "run",
]
