"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Fig. 1 of the paper (CliffWalk 6x6, gamma 0.9, LocallySmoothed model error lambda in {0.1, 0.5, 1}):
  * top: MoCoVI (d = 1, 2, 3) against VI, pure model-based planning (MBRL) and OS-VI, exact queries;
  * bottom: MoCoDyna against Q-learning, Dyna and OS-Dyna, sample-based.
The paper reports plots only; the numeric thresholds checked here were fixed in this file before
measuring. Policy evaluation (of the optimal policy) and Garnet are the paper's appendix experiments.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import numpy as np

from iclr24.paperkit import (
    ClaimSet,
    Paper,
    RunConfig,
    atomic_write_json,
    ensure_out_dir,
    paired_verdict,
    progress,
)
from iclr24.paperkit.plots import pyplot

from .algorithms import OSVI, MoCoVI, ModelBasedPlanning, ValueIteration
from .envs import cliffwalk, garnet, locally_smoothed, maze33
from .paper_scale import PAPER_SCALE, paper_scale  # noqa: F401  (the paper's largest setting, issue 48)
from .sample import Dyna, MoCoDyna, OSDyna, QLearning, _run_os_dyna

NAME = "maxent-moco"


@dataclass(frozen=True)
class ExactQueryConfig:
    """Fig. 1 (top) and the appendix policy-evaluation runs: exact queries, K iterations."""

    lams: tuple[float, ...] = (0.1, 0.5, 1.0)
    ds: tuple[int, ...] = (1, 2, 3)
    K: int = 15
    gamma: float = 0.9
    garnet_seed: int = 0


@dataclass(frozen=True)
class SampleConfig:
    """Fig. 1 (bottom): the sample-based runs with the paper's defaults (control on CliffWalk)."""

    lams: tuple[float, ...] = (0.1, 0.5, 1.0)
    ds: tuple[int, ...] = (1, 2, 3)
    n_steps: int = 150_000
    planning_interval: int = 2000
    val_queue_interval: int = 6000
    q_lr: float = 0.02
    os_lr: float = 0.02
    n_runs: int = 20
    eval_every: int = 2500
    ablations: bool = False  # also run MoCoDyna(wait_for_values=True) and OS-Dyna(variant="interval")


SMOKE = (
    ExactQueryConfig(lams=(1.0,), ds=(2, 3)),
    SampleConfig(
        lams=(1.0,),
        ds=(2,),
        n_steps=4000,
        planning_interval=500,
        val_queue_interval=1000,
        n_runs=1,
        eval_every=500,
    ),
)
# The sample-based claims are decided over paired seeds (95 % t-interval of the per-seed difference), so quick runs
# 5 seeds (t = 2.78; 3 seeds would give t = 4.30); full runs 10.
# Quick's sample budget: 30k samples per run instead of the paper's 150k (--full keeps 150k), with the paper's
# intervals, so that the whole quick run takes about a minute (150k samples x 5 seeds took 174 CPU s, 2026-12-02).
# Calibrated on seeds 100-104 (disjoint from the evaluated seeds 0-4), 1 thread, 2026-12-02: per-seed mean error over
# the run, 95 % t-interval of (best baseline - MoCoDyna(d=2)):
#   30k samples (38 CPU s for the sample runs): lambda 0.1 [-0.0039, 0.0048] (inconclusive; MoCoDyna 0.0705 vs
#     OS-Dyna 0.0710), lambda 0.5 [0.0157, 0.0517], lambda 1.0 [0.0845, 0.1690];
#   50k samples (55 CPU s): lambda 0.1 [-0.0039, 0.0030] (inconclusive; 0.0440 vs 0.0436), lambda 0.5
#     [0.0077, 0.0425], lambda 1.0 [0.0567, 0.0894].
# At lambda = 0.1 (the smallest model error) MoCoDyna's lead over OS-Dyna only shows over the paper's 150k samples
# (the 5-seed 150k run: interval [0.0006, 0.0018]), so that claim is gated in --full only: quick records it as
# skipped with its measured numbers (SAMPLE_FULL_ONLY_LAMS).
QUICK = (ExactQueryConfig(), SampleConfig(ds=(2,), n_steps=30_000, n_runs=5))
SAMPLE_FULL_ONLY_LAMS = (0.1,)
FULL = (ExactQueryConfig(), SampleConfig(n_runs=10, ablations=True))


def _exact_runs(cfg: ExactQueryConfig, show: bool) -> dict:
    """All exact-query traces: {mode: {lam: {algo: errors (K+1,)}}} on CliffWalk, the same on the 3x3 maze under
    "maze", plus Garnet (policy evaluation) at lambda = 1."""
    out: dict = {"pe": {}, "control": {}, "maze": {"pe": {}, "control": {}}}
    jobs = [
        (env, mode, lam) for env in ("cliffwalk", "maze") for mode in ("pe", "control") for lam in cfg.lams
    ]
    envs = {"cliffwalk": cliffwalk(gamma=cfg.gamma), "maze": maze33(gamma=cfg.gamma)}
    for env, mode, lam in progress(jobs, desc="exact queries", disable=not show):
        mdp = envs[env]
        P_hat = locally_smoothed(mdp.P, lam)
        algos = [ValueIteration(mode=mode), ModelBasedPlanning(P_hat, mode=mode), OSVI(P_hat, mode=mode)]
        algos += [MoCoVI(P_hat, d, mode=mode) for d in cfg.ds]
        dest = out[mode] if env == "cliffwalk" else out["maze"][mode]
        dest[lam] = {a.name: a.run(mdp, cfg.K).errors for a in algos}
    g = garnet(seed=cfg.garnet_seed, gamma=cfg.gamma)
    Pg = locally_smoothed(g.P, 1.0)
    out["garnet"] = {
        a.name: a.run(g, cfg.K).errors
        for a in [ValueIteration(), ModelBasedPlanning(Pg), OSVI(Pg)] + [MoCoVI(Pg, d) for d in cfg.ds]
    }
    return out


def _sample_runs(cfg: SampleConfig, seed: int, show: bool) -> dict:
    """{lam: {algo: errors (n_runs, m)}} and the evaluation steps; run r uses the sample stream of seed + r.

    OS-Dyna (re-solved after every sample, as the official code) runs all (seed, lambda) pairs in one vectorised
    lock-step batch; the others run one after the other."""
    mdp = cliffwalk()
    res: dict = {lam: {} for lam in cfg.lams}
    abl: dict = {lam: {} for lam in cfg.lams}
    steps = None
    common = dict(planning_interval=cfg.planning_interval, eval_every=cfg.eval_every)
    seeds = [seed + r for r in range(cfg.n_runs)]
    pairs = [(sd, lam) for lam in cfg.lams for sd in seeds]
    os_dyna = OSDyna(cfg.os_lr, eval_every=cfg.eval_every)
    os_traces = _run_os_dyna(os_dyna, mdp, cfg.n_steps, [p[0] for p in pairs], [p[1] for p in pairs], show)
    for (_, lam), tr in zip(pairs, os_traces):
        res[lam].setdefault(tr.name, []).append(tr.errors)
    if cfg.ablations:
        variant = OSDyna(cfg.os_lr, variant="interval", **common)
        for (_, lam), tr in zip(
            pairs, _run_os_dyna(variant, mdp, cfg.n_steps, [p[0] for p in pairs], [p[1] for p in pairs], show)
        ):
            abl[lam].setdefault(tr.name, []).append(tr.errors)
    jobs = [(r, lam) for r in range(cfg.n_runs) for lam in cfg.lams]
    q_cache: dict = {}
    for r, lam in progress(jobs, desc="sample-based", disable=not show):
        s = seeds[r]
        if r not in q_cache:  # Q-learning does not use the model: one run per seed serves every lambda
            q_cache[r] = QLearning(cfg.q_lr, eval_every=cfg.eval_every).run(mdp, cfg.n_steps, s)
        traces = [q_cache[r], Dyna(alpha=lam, **common).run(mdp, cfg.n_steps, s)]
        traces += [
            MoCoDyna(d, alpha=lam, val_queue_interval=cfg.val_queue_interval, **common).run(
                mdp, cfg.n_steps, s
            )
            for d in cfg.ds
        ]
        for tr in traces:
            res[lam].setdefault(tr.name, []).append(tr.errors)
        if cfg.ablations and 2 in cfg.ds:  # the variant that waits for d + 2 pushed values before correcting
            wait = MoCoDyna(
                2, alpha=lam, val_queue_interval=cfg.val_queue_interval, wait_for_values=True, **common
            ).run(mdp, cfg.n_steps, s)
            abl[lam].setdefault(wait.name, []).append(wait.errors)
        steps = traces[0].steps
    return {
        "steps": steps,
        "errors": {lam: {k: np.array(v) for k, v in d.items()} for lam, d in res.items()},
        "ablations": {lam: {k: np.array(v) for k, v in d.items()} for lam, d in abl.items()},
    }


def _plot_exact(runs: dict, cfg: ExactQueryConfig):
    plt = pyplot()
    floor = 1e-14
    fig, axes = plt.subplots(2, len(cfg.lams), figsize=(4.2 * len(cfg.lams), 7), squeeze=False)
    for row, (mode, ylabel) in enumerate(
        (("control", "normalised policy error"), ("pe", "normalised value error"))
    ):
        for col, lam in enumerate(cfg.lams):
            ax = axes[row, col]
            for name, errs in runs[mode][lam].items():
                ax.semilogy(
                    np.arange(len(errs)),
                    np.maximum(errs, floor),
                    marker="o",
                    ms=3,
                    label=name,
                    ls="-" if name.startswith("MoCo") else "--",
                )
            ax.set_title(f"CliffWalk {'control' if mode == 'control' else 'policy evaluation'}, lambda={lam}")
            ax.set_xlabel("iteration k")
            ax.set_ylabel(ylabel + f" (floored at {floor:g})")
            ax.grid(alpha=0.3)
    axes[0, 0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def _plot_sample(sruns: dict, cfg: SampleConfig):
    plt = pyplot()
    steps = sruns["steps"]
    fig, axes = plt.subplots(1, len(cfg.lams), figsize=(4.2 * len(cfg.lams), 4.2), squeeze=False)
    for col, lam in enumerate(cfg.lams):
        ax = axes[0, col]
        for name, errs in sruns["errors"][lam].items():
            m = errs.mean(axis=0)
            se = errs.std(axis=0) / np.sqrt(errs.shape[0])
            ax.plot(steps, m, label=name, ls="-" if name.startswith("MoCo") else "--")
            ax.fill_between(steps, np.maximum(m - se, 0), m + se, alpha=0.2)
        for name, errs in sruns.get("ablations", {}).get(lam, {}).items():
            ax.plot(steps, errs.mean(axis=0), ls=":", label=f"{name} (variant)")
        ax.set_yscale("symlog", linthresh=1e-3)
        ax.set_title(f"CliffWalk control (samples), lambda={lam}")
        ax.set_xlabel("samples")
        ax.set_ylabel(f"normalised policy error (mean +- SE, {cfg.n_runs} runs)")
        ax.grid(alpha=0.3)
    handles, labels = axes[0, 0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8, frameon=False)
    fig.tight_layout(rect=(0, 0.12, 1, 1))
    return fig


def _tolist(x):
    if isinstance(x, dict):
        return {str(k): _tolist(v) for k, v in x.items()}
    if isinstance(x, np.ndarray):
        return x.tolist()
    return x


def _settling_step(steps, errs, level: float) -> int | None:
    """The first evaluation step from which the error stays <= level (None if it never settles)."""
    above = np.flatnonzero(np.asarray(errs) > level)
    if above.size == 0:
        return int(steps[0])
    return int(steps[above[-1] + 1]) if above[-1] + 1 < len(steps) else None


def _row(runs: dict, mode: str, lam: float, name: str, k: int) -> float:
    return float(runs[mode][lam][name][k])


def _pe_lambda1_claims(claims: ClaimSet, runs: dict, cfg: ExactQueryConfig, arts: list[str]) -> None:
    """Policy evaluation at lambda = 1: MoCoVI (d = 2, 3) against MBRL's floor and OS-VI's divergence."""
    pe = runs["pe"]
    cfg_d = {"exact": asdict(cfg), "env": "cliffwalk 6x6, gamma 0.9, LocallySmoothed model"}
    k10 = 10
    m2, m3 = _row(runs, "pe", 1.0, "MoCoVI(d=2)", k10), _row(runs, "pe", 1.0, "MoCoVI(d=3)", k10)
    claims.add(
        claim="Policy evaluation, lambda=1: MoCoVI (d=2,3) reaches the true V^pi (<= 1e-6 by k=10) "
        "while pure model-based planning stays at its model-error floor (>= 0.9)",
        metric="normalised value error at k=10 (worst of d=2,3)",
        ours=max(m2, m3),
        baseline_name="MBRL",
        baseline=_row(runs, "pe", 1.0, "MBRL", k10),
        paper_value=None,
        rule="ours <= 1e-6 and baseline >= 0.9",
        details={"d2": m2, "d3": m3, "curves": _tolist(pe[1.0]), **cfg_d},
        artifacts=arts,
    )
    kk = min(14, cfg.K)
    claims.add(
        claim=f"Policy evaluation, lambda=1: OS-VI diverges (> 1 at k={kk}) while MoCoVI(d=2) converges",
        metric=f"normalised value error at k={kk}",
        ours=_row(runs, "pe", 1.0, "MoCoVI(d=2)", kk),
        baseline_name="OS-VI",
        baseline=_row(runs, "pe", 1.0, "OS-VI", kk),
        rule="baseline > 1 and ours <= 1e-6",
        details={"osvi_curve": pe[1.0]["OS-VI"].tolist()},
        artifacts=arts,
    )


def _pe_by_lambda_claims(claims: ClaimSet, runs: dict, cfg: ExactQueryConfig, arts: list[str]) -> None:
    """Policy evaluation at every lambda: MoCoVI(d=2) >= 1e3x below VI and MBRL at k = 10."""
    pe = runs["pe"]
    k10 = 10
    for lam in cfg.lams:
        m2 = _row(runs, "pe", lam, "MoCoVI(d=2)", k10)
        vi, mb = _row(runs, "pe", lam, "VI", k10), _row(runs, "pe", lam, "MBRL", k10)
        claims.add(
            claim=f"Policy evaluation, lambda={lam}: MoCoVI(d=2) is >= 1e3x below both VI and MBRL at k=10",
            metric="normalised value error at k=10",
            ours=m2,
            baseline_name="min(VI, MBRL)",
            baseline=min(vi, mb),
            rule="ours * 1000 <= baseline",
            details={
                "VI": vi,
                "MBRL": mb,
                "OS-VI": _row(runs, "pe", lam, "OS-VI", k10),
                **{n: _row(runs, "pe", lam, n, k10) for n in pe[lam] if n.startswith("MoCoVI")},
            },
            artifacts=arts,
        )


def _control_claim(claims: ClaimSet, runs: dict, arts: list[str]) -> None:
    """Control at lambda = 1 (the gate fixed before the run): MoCoVI(d=2)'s policy is optimal from
    iteration 4 on, while VI's is still not at iteration 6; the whole curves are in the details."""
    ctl = runs["control"]
    m_ctl, vi_ctl = ctl[1.0]["MoCoVI(d=2)"], ctl[1.0]["VI"]
    claims.add(
        claim="Control, lambda=1: MoCoVI(d=2)'s policy is optimal from iteration 4 on; VI's is still "
        "not optimal at iteration 6",
        metric="normalised policy error: max over k >= 4 (ours), at k = 6 (VI)",
        ours=float(m_ctl[4:].max()),
        baseline_name="VI",
        baseline=float(vi_ctl[6]),
        rule="ours <= 1e-9 and baseline > 0.01",
        details={
            "curves": _tolist(ctl[1.0]),
            "VI_error_by_iteration": vi_ctl.tolist(),
            "MoCoVI_d2_error_by_iteration": m_ctl.tolist(),
            "MBRL_policy_error": float(ctl[1.0]["MBRL"][-1]),
        },
        artifacts=arts,
    )


def _maze_claim(claims: ClaimSet, runs: dict, arts: list[str]) -> None:
    """The 3x3 maze of the official code, policy evaluation at lambda = 1 (rule fixed before the maze was run)."""
    mz = runs["maze"]["pe"][1.0]
    k10 = 10
    claims.add(
        claim="Maze 3x3, policy evaluation, lambda=1: MoCoVI(d=2) is >= 1e3x below both VI and MBRL at k=10",
        metric="normalised value error at k=10",
        ours=float(mz["MoCoVI(d=2)"][k10]),
        baseline_name="min(VI, MBRL)",
        baseline=float(min(mz["VI"][k10], mz["MBRL"][k10])),
        rule="ours * 1000 <= baseline",
        details={"curves": _tolist(mz), "OS-VI": float(mz["OS-VI"][k10])},
        artifacts=arts,
    )


def _garnet_claim(claims: ClaimSet, runs: dict, cfg: ExactQueryConfig, arts: list[str]) -> None:
    """Garnet at lambda = 1, policy evaluation: MoCoVI(d=2) converges, VI and MBRL do not yet."""
    gk = min(14, cfg.K)
    gar = runs["garnet"]
    claims.add(
        claim=f"Garnet (seed {cfg.garnet_seed}), lambda=1, policy evaluation: MoCoVI(d=2) "
        f"reaches <= 1e-6 by k={gk}, VI and MBRL do not",
        metric=f"normalised value error at k={gk}",
        ours=float(gar["MoCoVI(d=2)"][gk]),
        baseline_name="min(VI, MBRL)",
        baseline=float(min(gar["VI"][gk], gar["MBRL"][gk])),
        rule="ours <= 1e-6 and baseline > 1e-3",
        details={
            "OS-VI": float(gar["OS-VI"][gk]),
            "curves": _tolist(gar),
            "note": "OS-VI also converges on Garnet; superiority over OS-VI is claimed on CliffWalk only",
        },
        artifacts=arts,
    )


def _exact_claims(claims: ClaimSet, runs: dict, cfg: ExactQueryConfig, arts: list[str]) -> None:
    """Fig. 1 (top) and the appendix: the exact-query claims the configured lambdas and d's allow."""
    if 1.0 in cfg.lams and {2, 3} <= set(cfg.ds):
        _pe_lambda1_claims(claims, runs, cfg, arts)
    if 2 in cfg.ds:
        _pe_by_lambda_claims(claims, runs, cfg, arts)
        if 1.0 in cfg.lams:
            _control_claim(claims, runs, arts)
            _maze_claim(claims, runs, arts)
        _garnet_claim(claims, runs, cfg, arts)


def _variants(abl: dict) -> dict:
    return {k: {"mean_error": float(v.mean()), "final_error": float(v[:, -1].mean())} for k, v in abl.items()}


BASELINES = ("Q-learning", "Dyna", "OS-Dyna")


def _sample_details(sruns: dict, cfg: SampleConfig, lam: float, per_seed: dict) -> dict:
    e = sruns["errors"][lam]
    return {
        "mean_error": {k: float(v.mean()) for k, v in e.items()},
        "final_error": {k: float(v[:, -1].mean()) for k, v in e.items()},
        "samples_until_mean_error_stays_below_1e-2": {
            k: _settling_step(sruns["steps"], v.mean(axis=0), 1e-2) for k, v in e.items()
        },
        "per_seed_mean_error": {k: v.tolist() for k, v in per_seed.items()},
        "best_baseline_per_seed": [BASELINES[i] for i in np.argmin([per_seed[k] for k in BASELINES], 0)],
        "config": asdict(cfg),
        "variants_not_claimed": _variants(sruns["ablations"].get(lam, {})),
    }


def _sample_claims(
    claims: ClaimSet,
    sruns: dict,
    cfg: SampleConfig,
    seed: int,
    arts: list[str],
    full_only: tuple[float, ...] = (),
) -> None:
    """Fig. 1 (bottom): MoCoDyna's mean policy error over the run against Q-learning, Dyna and OS-Dyna, per lambda,
    decided over paired seeds (run r of every method uses the sample stream of seed + r): per seed, MoCoDyna
    against the best of the three baselines on that seed. The lambdas in ``full_only`` are recorded as skipped,
    with their measured numbers and interval (quick: :data:`SAMPLE_FULL_ONLY_LAMS`)."""
    d_best = 2 if 2 in cfg.ds else cfg.ds[0]
    seeds = [seed + r for r in range(cfg.n_runs)]
    for lam in cfg.lams:
        per_seed = {k: v.mean(axis=1) for k, v in sruns["errors"][lam].items()}  # mean error over the run
        kw = dict(
            claim=f"Samples, CliffWalk control, lambda={lam}: MoCoDyna(d={d_best}) has a lower mean "
            f"policy error over the run than Q-learning, Dyna and OS-Dyna ({cfg.n_runs} seeds, "
            f"{cfg.n_steps} samples)",
            metric="normalised policy error averaged over evaluation points, per seed",
            baseline_name="min(Q-learning, Dyna, OS-Dyna) on each seed",
            details=_sample_details(sruns, cfg, lam, per_seed),
            artifacts=arts,
        )
        ours = per_seed[f"MoCoDyna(d={d_best})"].tolist()
        best = np.min([per_seed[k] for k in BASELINES], axis=0).tolist()
        if lam not in full_only:
            claims.paired(ours=ours, baseline=best, seeds=seeds, better="lower", margin=0.0, **kw)
            continue
        res = paired_verdict(ours, best, better="lower", margin=0.0, seeds=seeds)
        claims.add(
            status="skipped",
            message=f"gated in --full only (SAMPLE_FULL_ONLY_LAMS in reproduce.py, decided on calibration seeds "
            f"100-104: the effect at this lambda needs the paper's 150k samples); measured here: ours "
            f"{np.mean(ours):.4g}, baseline {np.mean(best):.4g}, 95 % interval of the per-seed slack "
            f"[{res.low:.3g}, {res.high:.3g}] ({res.verdict} by the rule {res.rule})",
            ours=float(np.mean(ours)),
            baseline=float(np.mean(best)),
            rule=res.rule,
            **kw,
        )


def run(config: RunConfig) -> ClaimSet:
    exact_cfg, sample_cfg = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    out = ensure_out_dir(config.out)
    show = config.progress
    claims = ClaimSet(NAME, config)
    exact_curves: dict = {}
    with claims.timed("exact queries: CliffWalk and the maze (PE + control), Garnet"):
        runs = _exact_runs(exact_cfg, show)
        exact_curves = _tolist(runs)
        arts = [claims.figure(_plot_exact(runs, exact_cfg), "fig1_exact_queries.png")]
        _exact_claims(claims, runs, exact_cfg, arts)
    with claims.timed("sample-based: CliffWalk control"):
        sruns = _sample_runs(sample_cfg, config.seed, show)
        fig = claims.figure(_plot_sample(sruns, sample_cfg), "fig1_samples.png")
        atomic_write_json(
            out / "curves.json",
            {
                "exact": exact_curves,
                "samples": _tolist(sruns),
                "config": {"exact": asdict(exact_cfg), "samples": asdict(sample_cfg)},
            },
        )
        full_only = SAMPLE_FULL_ONLY_LAMS if config.mode == "quick" else ()
        arts = [fig, claims.artifact(out / "curves.json")]
        _sample_claims(claims, sruns, sample_cfg, config.seed, arts, full_only)
    claims.fact(
        "first MoCoDyna plan that uses the correction (samples seen)",
        value=1,
        description="by construction, as the official MECDyna_Control.py: the basis queue starts full of random "
        "orthogonal vectors, so the gate is open from the first plan (after the first sample)",
    )
    return claims


PAPER = Paper(
    name=NAME,
    title="Maximum Entropy Model Correction in Reinforcement Learning",
    summary="MoCoVI/MoCoDyna converge to the true values with an approximate model, faster than VI and "
    "model-based planning.",
    run=run,
    paper_scale=paper_scale,
)
