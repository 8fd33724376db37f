"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Fig. 1 of the paper (CliffWalk 6x6, gamma 0.9, LocallySmoothed model error lambda in {0.1, 0.5, 1}):
  * top: MoCoVI (d = 1, 2, 3) against VI, pure model-based planning (MBRL) and OS-VI, exact queries;
  * bottom: MoCoDyna against Q-learning, Dyna and OS-Dyna, sample-based.
The paper reports plots only; the numeric thresholds of ``CLAIMS`` below were fixed before measuring. Policy
evaluation (of the optimal policy) and Garnet are the paper's appendix experiments. The exact-query rows are
deterministic (no seeds); the sample-based rows are decided over paired seeds, as many as the power rule asks on
calibration seeds disjoint from the evaluated pool (docs/calibration.md).
"""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass

import numpy as np

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import ClaimSpec
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import ensure_out_dir
from iclr24.paperkit import progress
from iclr24.paperkit.plots import pyplot
from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import calibration_table

from .algorithms import OSVI
from .algorithms import MoCoVI
from .algorithms import ModelBasedPlanning
from .algorithms import ValueIteration
from .envs import cliffwalk
from .envs import garnet
from .envs import locally_smoothed
from .envs import maze33
from .paper_scale import PAPER_SCALE  # noqa: F401  (the paper's largest setting, issue 48)
from .paper_scale import paper_scale  # noqa: F401  (the paper's largest setting, issue 48)
from .sample import Dyna
from .sample import MoCoDyna
from .sample import OSDyna
from .sample import QLearning
from .sample import _run_os_dyna

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
    """Fig. 1 (bottom): the sample-based runs with the paper's defaults (control on CliffWalk). ``steps_by_lam``:
    ``((lam, n_steps), ...)`` runs those lambdas on their own sample count (else ``n_steps``)."""

    lams: tuple[float, ...] = (0.1, 0.5, 1.0)
    ds: tuple[int, ...] = (1, 2, 3)
    n_steps: int = 150_000
    planning_interval: int = 2000
    val_queue_interval: int = 6000
    q_lr: float = 0.02
    os_lr: float = 0.02
    eval_every: int = 2500
    ablations: bool = False  # also run MoCoDyna(wait_for_values=True) and OS-Dyna(variant="interval")
    steps_by_lam: tuple[tuple[float, int], ...] = ()

    def steps(self, lam: float) -> int:
        return dict(self.steps_by_lam).get(lam, self.n_steps)


SMOKE = (
    ExactQueryConfig(lams=(1.0,), ds=(2, 3)),
    SampleConfig(
        lams=(1.0,), ds=(2,), n_steps=4000, planning_interval=500, val_queue_interval=1000, eval_every=500
    ),
)
# quick: 30k samples per run (--full: the paper's 150k) at the paper's intervals; lambda = 0.1 on LOW_LAM_STEPS
# samples, the smallest count that decided it on the calibration seeds (50k and 75k did not; docs/calibration.md)
LOW_LAM_STEPS = 100_000
QUICK = (ExactQueryConfig(), SampleConfig(ds=(2,), n_steps=30_000, steps_by_lam=((0.1, LOW_LAM_STEPS),)))
FULL = (ExactQueryConfig(), SampleConfig(ablations=True))
MODES = {"smoke": SMOKE, "quick": QUICK, "full": FULL}

POOL = tuple(range(40))  # evaluated seeds of the sample-based rows (offsets added to --seed)
CALIBRATION_SEEDS = tuple(range(200, 208))  # never evaluated
# the calibration runs' numbers, package data calibration.json (written by scripts/calibrate.py --write;
# docs/calibration.md): per mode and lambda, MoCoDyna(d=2) and the best baseline per calibration seed, and the CPU s
# per evaluated seed at that lambda
_CAL = calibration_table(__package__)
MEASURED = _CAL["measured"]


def _cal(lam: float) -> dict[str, Calibration]:
    return {
        mode: Calibration(
            seeds=v["seeds"],
            ours=v["ours"],
            baseline=v["baseline"],
            seconds_per_seed=v["cpu_seconds_per_seed"],
            measured=MEASURED,
        )
        for mode, by_lam in _CAL["rows"].items()
        for lm, v in by_lam.items()
        if float(lm) == lam
    }


_ENV = "CliffWalk 6x6, gamma 0.9, LocallySmoothed model P_hat = (1 - lambda) P + lambda Uniform(supp P)"
_DET = "deterministic (exact queries, no randomness): one run"


def _exact_row(
    id: str, kind: str, claim: str, metric: str, baseline: str, rule: str, data: str = _ENV
) -> ClaimSpec:
    return ClaimSpec(
        id=id, kind=kind, claim=claim, metric=metric, baseline=baseline, data=data, rule=rule, seeds_why=_DET
    )


def _sample_row(lam: float, kind: str, budget: dict[str, float]) -> ClaimSpec:
    return ClaimSpec(
        id=f"samples_lam{lam}",
        kind=kind,
        claim=f"Samples, CliffWalk control, lambda={lam}: MoCoDyna(d=2) has a lower mean policy error over the run "
        "than Q-learning, Dyna and OS-Dyna",
        metric="normalised policy error averaged over the run's evaluation points, per seed, paired",
        baseline="min(Q-learning, Dyna, OS-Dyna) on each seed",
        data=f"CliffWalk control, one sample stream per seed: {QUICK[1].steps(lam) // 1000}k samples in quick, "
        f"{FULL[1].steps(lam) // 1000}k (the paper's) in full",
        better="lower",
        margin=0.0,
        seeds={"quick": POOL, "full": POOL},
        calibration=_cal(lam),
        budget=budget,
        seeds_why="the power rule (80 %) on calibration seeds 200-207 (docs/calibration.md)",
    )


CLAIMS = (
    _exact_row(
        "pe_lam1", "headline",
        "Policy evaluation, lambda=1: MoCoVI (d=2,3) reaches the true V^pi (<= 1e-6 by k=10) while pure "
        "model-based planning stays at its model-error floor (>= 0.9)",
        "normalised value error at k=10 (worst of d=2,3)", "MBRL", "ours <= 1e-6 and baseline >= 0.9",
    ),
    _exact_row(
        "control_lam1", "headline",
        "Control, lambda=1: MoCoVI(d=2)'s policy is optimal from iteration 4 on; VI's is still not optimal at "
        "iteration 6",
        "normalised policy error: max over k >= 4 (ours), at k = 6 (VI)", "VI", "ours <= 1e-9 and baseline > 0.01",
    ),
    _exact_row(
        "osvi_diverges", "supporting",
        "Policy evaluation, lambda=1: OS-VI diverges (> 1 at k=14) while MoCoVI(d=2) converges",
        "normalised value error at k=14", "OS-VI", "baseline > 1 and ours <= 1e-6",
    ),
    *(
        _exact_row(
            f"pe_lam{lam}", "supporting",
            f"Policy evaluation, lambda={lam}: MoCoVI(d=2) is >= 1e3x below both VI and MBRL at k=10",
            "normalised value error at k=10", "min(VI, MBRL)", "ours * 1000 <= baseline",
        )
        for lam in (0.1, 0.5, 1.0)
    ),
    _exact_row(
        "maze", "supporting",
        "Maze 3x3, policy evaluation, lambda=1: MoCoVI(d=2) is >= 1e3x below both VI and MBRL at k=10",
        "normalised value error at k=10", "min(VI, MBRL)", "ours * 1000 <= baseline",
        data="the official code's Maze33 (9 states, gamma 0.9), LocallySmoothed model",
    ),
    _exact_row(
        "garnet", "supporting",
        "Garnet (seed 0), lambda=1, policy evaluation: MoCoVI(d=2) reaches <= 1e-6 by k=14, VI and MBRL do not",
        "normalised value error at k=14", "min(VI, MBRL)", "ours <= 1e-6 and baseline > 1e-3",
        data="Garnet (36 states, 6 actions, branching 12; seed 0), LocallySmoothed model",
    ),
    _sample_row(1.0, "headline", {"quick": 5, "full": 60}),
    _sample_row(0.5, "supporting", {"quick": 5, "full": 60}),
    _sample_row(0.1, "supporting", {"quick": 15, "full": 60}),
)  # fmt: skip
ROWS = {r.id: r for r in CLAIMS}


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


def _sample_group(cfg: SampleConfig, seeds: dict[float, list[int]], n_steps: int, show: bool) -> dict:
    """One group of lambdas on ``n_steps`` samples, lambda ``lam`` on the seeds ``seeds[lam]``: {lam: {algo: errors
    (n_seeds, m)}} and the evaluation steps; a seed gives its run's sample stream, the same for every method.

    OS-Dyna (re-solved after every sample, as the official code) runs all (seed, lambda) pairs in one vectorised
    lock-step batch; the others run one after the other."""
    lams = tuple(seeds)
    mdp = cliffwalk()
    res: dict = {lam: {} for lam in lams}
    abl: dict = {lam: {} for lam in lams}
    steps = None
    common = dict(planning_interval=cfg.planning_interval, eval_every=cfg.eval_every)
    pairs = [(sd, lam) for lam in lams for sd in seeds[lam]]
    os_dyna = OSDyna(cfg.os_lr, eval_every=cfg.eval_every)
    os_traces = _run_os_dyna(os_dyna, mdp, n_steps, [p[0] for p in pairs], [p[1] for p in pairs], show)
    for (_, lam), tr in zip(pairs, os_traces):
        res[lam].setdefault(tr.name, []).append(tr.errors)
    if cfg.ablations:
        variant = OSDyna(cfg.os_lr, variant="interval", **common)
        for (_, lam), tr in zip(
            pairs, _run_os_dyna(variant, mdp, n_steps, [p[0] for p in pairs], [p[1] for p in pairs], show)
        ):
            abl[lam].setdefault(tr.name, []).append(tr.errors)
    jobs = [(s, lam) for lam in lams for s in seeds[lam]]
    q_cache: dict = {}
    for s, lam in progress(jobs, desc="sample-based", disable=not show):
        if s not in q_cache:  # Q-learning does not use the model: one run per seed serves every lambda
            q_cache[s] = QLearning(cfg.q_lr, eval_every=cfg.eval_every).run(mdp, n_steps, s)
        traces = [q_cache[s], Dyna(alpha=lam, **common).run(mdp, n_steps, s)]
        traces += [
            MoCoDyna(d, alpha=lam, val_queue_interval=cfg.val_queue_interval, **common).run(mdp, n_steps, s)
            for d in cfg.ds
        ]
        for tr in traces:
            res[lam].setdefault(tr.name, []).append(tr.errors)
        if cfg.ablations and 2 in cfg.ds:  # the variant that waits for d + 2 pushed values before correcting
            wait = MoCoDyna(
                2, alpha=lam, val_queue_interval=cfg.val_queue_interval, wait_for_values=True, **common
            ).run(mdp, n_steps, s)
            abl[lam].setdefault(wait.name, []).append(wait.errors)
        steps = traces[0].steps
    return {
        "steps": {lam: steps for lam in lams},
        "errors": {lam: {k: np.array(v) for k, v in d.items()} for lam, d in res.items()},
        "ablations": {lam: {k: np.array(v) for k, v in d.items()} for lam, d in abl.items()},
    }


def _sample_runs(cfg: SampleConfig, plans: dict[float, list[int] | None], show: bool) -> dict:
    """The lambdas with seeds in ``plans`` (lambda -> its evaluated seeds), grouped by sample count (``cfg.steps``):
    {"steps": {lam: (m,)}, "errors": {lam: {algo: (n, m)}}, "ablations": ..., "seeds": {lam: [...]}}."""
    out: dict = {"steps": {}, "errors": {}, "ablations": {}, "seeds": {}}
    lams = [lam for lam in cfg.lams if plans.get(lam)]
    for n in sorted({cfg.steps(lam) for lam in lams}):
        group = {lam: list(plans[lam]) for lam in lams if cfg.steps(lam) == n}
        res = _sample_group(cfg, group, n, show)
        for k in ("steps", "errors", "ablations"):
            out[k].update(res[k])
        out["seeds"].update(group)
    return out


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
    lams = [lam for lam in cfg.lams if lam in sruns["errors"]]
    fig, axes = plt.subplots(1, len(lams), figsize=(4.2 * len(lams), 4.2), squeeze=False)
    for col, lam in enumerate(lams):
        ax = axes[0, col]
        steps = sruns["steps"][lam]
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
        ax.set_ylabel(f"normalised policy error (mean +- SE, {len(sruns['seeds'][lam])} runs)")
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
        spec=ROWS["pe_lam1"],
        ours=max(m2, m3),
        baseline=_row(runs, "pe", 1.0, "MBRL", k10),
        details={"d2": m2, "d3": m3, "curves": _tolist(pe[1.0]), **cfg_d},
        artifacts=arts,
    )
    kk = 14
    claims.add(
        spec=ROWS["osvi_diverges"],
        ours=_row(runs, "pe", 1.0, "MoCoVI(d=2)", kk),
        baseline=_row(runs, "pe", 1.0, "OS-VI", kk),
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
            spec=ROWS[f"pe_lam{lam}"],
            ours=m2,
            baseline=min(vi, mb),
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
        spec=ROWS["control_lam1"],
        ours=float(m_ctl[4:].max()),
        baseline=float(vi_ctl[6]),
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
        spec=ROWS["maze"],
        ours=float(mz["MoCoVI(d=2)"][k10]),
        baseline=float(min(mz["VI"][k10], mz["MBRL"][k10])),
        details={"curves": _tolist(mz), "OS-VI": float(mz["OS-VI"][k10])},
        artifacts=arts,
    )


def _garnet_claim(claims: ClaimSet, runs: dict, cfg: ExactQueryConfig, arts: list[str]) -> None:
    """Garnet at lambda = 1, policy evaluation: MoCoVI(d=2) converges, VI and MBRL do not yet."""
    gk = 14
    gar = runs["garnet"]
    claims.add(
        spec=ROWS["garnet"],
        ours=float(gar["MoCoVI(d=2)"][gk]),
        baseline=float(min(gar["VI"][gk], gar["MBRL"][gk])),
        details={
            "OS-VI": float(gar["OS-VI"][gk]),
            "curves": _tolist(gar),
            "garnet_seed": cfg.garnet_seed,
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


def _sample_details(sruns: dict, cfg: SampleConfig, lam: float, per_seed: dict, n: int) -> dict:
    e = {k: v[:n] for k, v in sruns["errors"][lam].items()}
    steps = sruns["steps"][lam]
    return {
        "mean_error": {k: float(v.mean()) for k, v in e.items()},
        "final_error": {k: float(v[:, -1].mean()) for k, v in e.items()},
        "samples_until_mean_error_stays_below_1e-2": {
            k: _settling_step(steps, v.mean(axis=0), 1e-2) for k, v in e.items()
        },
        "per_seed_mean_error": {k: v[:n].tolist() for k, v in per_seed.items()},
        "best_baseline_per_seed": [BASELINES[i] for i in np.argmin([per_seed[k][:n] for k in BASELINES], 0)],
        "n_samples": int(cfg.steps(lam)),
        "config": asdict(cfg),
        "variants_not_claimed": _variants({k: v[:n] for k, v in sruns["ablations"].get(lam, {}).items()}),
    }


def _sample_plans(cfg: SampleConfig, mode: str, base: int) -> dict[float, list[int] | None]:
    """Each lambda's evaluated seeds from its row's power plan (``None``: undecidable in this mode)."""
    out: dict[float, list[int] | None] = {}
    for lam in cfg.lams:
        row = ROWS[f"samples_lam{lam}"]
        plan = row.plan(mode)
        out[lam] = (
            None
            if plan is not None and not plan.decidable and mode != "smoke"
            else row.evaluated_seeds(mode, base)
        )
    return out


def _sample_claims(claims: ClaimSet, sruns: dict, cfg: SampleConfig, plans: dict, arts: list[str]) -> None:
    """Fig. 1 (bottom): MoCoDyna's mean policy error over the run against Q-learning, Dyna and OS-Dyna, per lambda,
    decided over paired seeds (run r of every method uses the sample stream of seed r): per seed, MoCoDyna
    against the best of the three baselines on that seed. Each lambda reads the first seeds of the runs, as many
    as its power plan asks."""
    for lam in cfg.lams:
        row, seeds = ROWS[f"samples_lam{lam}"], plans[lam]
        if seeds is None:
            claims.undecidable(row)
            continue
        n = len(seeds)
        per_seed = {k: v.mean(axis=1) for k, v in sruns["errors"][lam].items()}  # mean error over the run
        ours = per_seed["MoCoDyna(d=2)"][:n].tolist()
        best = np.min([per_seed[k][:n] for k in BASELINES], axis=0).tolist()
        claims.paired(
            spec=row, ours=ours, baseline=best, seeds=seeds,
            details=_sample_details(sruns, cfg, lam, per_seed, n), artifacts=arts,
        )  # fmt: skip


def run(config: RunConfig) -> ClaimSet:
    """The exact-query rows (one deterministic run), then the sample-based rows (every method on the union of the
    seeds the rows' power plans ask for, each row reading its first seeds)."""
    exact_cfg, sample_cfg = MODES[config.mode]
    out = ensure_out_dir(config.out)
    show = config.progress
    claims = ClaimSet(NAME, config)
    exact_curves: dict = {}
    with claims.timed(ROWS["pe_lam1"].claim, ROWS["pe_lam1"]):
        runs = _exact_runs(exact_cfg, show)
        exact_curves = _tolist(runs)
        arts = [claims.figure(_plot_exact(runs, exact_cfg), "fig1_exact_queries.png")]
        _exact_claims(claims, runs, exact_cfg, arts)
    head = ROWS["samples_lam1.0"]
    with claims.timed(head.claim, head):
        plans = _sample_plans(sample_cfg, config.mode, config.seed)
        sruns = _sample_runs(sample_cfg, plans, show)
        arts = []
        if sruns["errors"]:
            arts.append(claims.figure(_plot_sample(sruns, sample_cfg), "fig1_samples.png"))
        atomic_write_json(
            out / "curves.json",
            {
                "exact": exact_curves,
                "samples": _tolist(sruns),
                "config": {"exact": asdict(exact_cfg), "samples": asdict(sample_cfg)},
            },
        )
        arts.append(claims.artifact(out / "curves.json"))
        _sample_claims(claims, sruns, sample_cfg, plans, arts)
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
    claims=CLAIMS,
)
