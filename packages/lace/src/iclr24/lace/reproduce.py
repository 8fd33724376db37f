"""The paper's claims, checked at CPU scale on synthetic aligned layouts: LACE (constraint losses on) against the same
continuous diffusion without them (lambda_a = lambda_o = 0), same network, data, steps and training seeds.

The models are not trained during the run: the effects need more training than a run of minutes gives (calibration
below), so ``reproduce`` evaluates checkpoints shipped inside the package (``checkpoints/``: baseline and LACE on
training seeds 3-15; seeds 10-15 are evaluated, 3-9 only calibrate the power rule), each trained once by the package's
own ``lace train`` (``TRAIN_COMMANDS``; provenance.json records the command, CPU seconds, machine, commit and the
loss at fixed steps) and re-trained by ``reproduce --from-scratch``. A run samples, scores and beautifies; every
claim's details name what it was evaluated on.

Rules fixed before running (from the paper's claims, Sec. 5; ``CLAIMS``): Alignment <= 0.75 x baseline; Overlap no
higher; MaxIoU (C -> S+P) within 0.02; feature Frechet distance within +10 %; beautify lowers Alignment further at <=
+10 % FD. Alignment and Overlap are the official metric (``util/metric.py`` as ``test.py`` calls it). Metrics are on
the test layouts (seeds disjoint from training); nothing is tuned on them: the training budget was chosen on
calibration seeds no evaluated run uses (``TRAIN_STEPS``). Every rule is decided over paired training seeds (95 %
t-interval; the headline rules' count from the power rule on the calibration pairs), and no verdict is kept from
models that did not learn the layouts (``learned_min``): such a run records the claims as undecidable, with why. A
second set of real test layouts, scored like a model, is the reference row. The gradient guidance at each DDIM step
(an extension: the official code has none) is measured and reported in --full, never gated.
"""

from __future__ import annotations

import functools

import numpy as np

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import ClaimSpec
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import calibration_table

from .beautify import beautify
from .constraints import alignment_score
from .data import synthetic_aligned_layouts
from .diffusion import TASKS
from .diffusion import generate
from .diffusion import load_checkpoint
from .metrics import MAXIOU_TASKS
from .metrics import alignment_overlap
from .metrics import layout_metrics
from .paper_scale import PAPER_SCALE  # noqa: F401 - PAPER_SCALE: the paper's run, beside settings()
from .paper_scale import paper_scale  # noqa: F401 - PAPER_SCALE: the paper's run, beside settings()
from .render import layout_grid

MODULE = "iclr24.lace"
CLAIM_KEYS = ("align", "overlap", "max_iou", "fd", "beautify_align", "beautify_fd")
ARMS = ("baseline", "LACE")
SHIPPED_SEEDS = tuple(range(3, 16))  # the training seeds of the shipped checkpoints (both arms, paired)
# Two rounds (docs/calibration.md). Round 1: seeds 0-2 calibrated a plan (alignment 4 pairs, overlap 7) that seeds 3-9
# were then trained for and evaluated on (recorded at d461041 / 66a9912: both headline rules inconclusive at the
# plan's n). Round 2, this one: seeds 3-9 are the calibration of the headline rules and are never evaluated again;
# seeds 10-15 were trained after the plan below was fixed, with the same commands, and are the evaluated pairs. The
# round-1 calibration checkpoints (seeds 0-2) are no longer shipped (the package's 25 MB cap; the same `lace train`
# command with --seed 0-2 retrains them, and git history holds them).
CALIBRATION_SEEDS = tuple(range(3, 10))
EVAL_SEEDS = tuple(range(10, 16))
# Adam steps per checkpoint. Calibration (baseline arm, d = 64, 2 layers, lr 2e-3, batch 32, 2,000 layouts; C -> S+P
# MaxIoU on 128 test layouts, 25-50 DDIM steps; real vs real 0.459 on calibration seed 500 and 0.432 on 501, so
# "learned" means >= 0.23 / 0.22), all before the checkpoints were trained:
# - clamped L_rec, seed 500: 0.02, 0.06, 0.17, 0.19, 0.20, 0.34 after 200, 400, ..., 1,200 steps; seed 501: 0.07,
#   0.11, 0.16, 0.24 after 600, ..., 1,200: still rising at 1,200 and only just over the line on 501, which
#   extrapolates to about 3-5k steps for every seed to learn.
# - the official unclamped L_rec (``LaceConfig``'s and ``lace train``'s default), seed 500, 50 DDIM steps: 0.08,
#   0.17, 0.18, 0.23, 0.24, 0.31 after 1,000, 2,000, ..., 6,000 steps (UNCLAMPED_CALIBRATION): it learns by 4,000-5,000
#   (below the line at 1,200, where the earlier calibration stopped). The rule fixed before that run: if it has
#   learned by 6,000 the checkpoints use the official unclamped term; it had, so they do.
# - 7,000 steps per checkpoint: above both ranges, and what three seeds of both arms afford within 30 CPU minutes of
#   training (with this calibration) at the measured 0.025-0.034 CPU s per step (1 thread, a loaded machine).
TRAIN_STEPS = 7000
TRAIN_ARGS = (
    f"--steps {TRAIN_STEPS} --layouts 2000 --dim 64 --heads 4 --layers 2 --ff 128 --batch-size 32 --lr 2e-3"
)
TRAIN_COMMANDS = {
    f"{arm}-s{seed}": f"lace train {TRAIN_ARGS} --seed {seed}"
    + (" --no-constraints" if arm == "baseline" else "")
    for seed in SHIPPED_SEEDS
    for arm in ("baseline", "lace")
}  # what checkpoints/commands.json holds (a test checks it), run by tools/train_checkpoints.py lace
# The measured numbers are package data, calibration.json (its "note"s say what each is)
_table = calibration_table(__package__)
# the official unclamped L_rec: the baseline arm's MaxIoU C -> S+P along training on calibration seed 500 (real vs
# real 0.4589, so "learned" >= 0.229); 148 CPU s for the 6,000 steps
UNCLAMPED_CALIBRATION = {
    "seed": _table["unclamped"]["seed"],
    "real_vs_real": _table["unclamped"]["real_vs_real"],
    "max_iou": {int(steps): v for steps, v in _table["unclamped"]["max_iou"].items()},
}


def model_name(arm: str, seed: int) -> str:
    """The shipped checkpoint of ``arm`` (``baseline`` / ``LACE``) and training seed ``seed``."""
    return f"{'baseline' if arm == 'baseline' else 'lace'}-s{seed}"


def settings(mode: str) -> dict:
    """Evaluation sizes per mode, fixed before the evaluated runs; no mode trains (the models are the shipped
    checkpoints, ``TRAIN_COMMANDS``; which training seeds each claim evaluates is its row's ``seeds`` and power
    plan in ``CLAIMS``). ``learned_min``: a verdict is only kept when both arms' C -> S+P MaxIoU (mean over seeds)
    reaches this fraction of the run's real-vs-real MaxIoU (else every claim is undecidable, with why)."""
    return {"smoke": _smoke_settings, "quick": _quick_settings, "full": _full_settings}[mode]()


def _smoke_settings() -> dict:
    """The first two evaluated checkpoint pairs, a few layouts and DDIM steps: the code path of --full, no
    learned-precondition."""
    return dict(test_n=12, ddim=3, beautify_iters=5, beautify_lr=1e-4, guidance=0.05, learned_min=None)


def _quick_settings() -> dict:
    """The headline tasks (unconditional and C -> S+P) on the evaluated checkpoint pairs with the evaluation of --full
    (128 test layouts, 50 DDIM steps, the official beautify budget): every rule decided, about a minute with
    imports; no guidance extension, no other tasks."""
    return dict(
        test_n=128,
        ddim=50,
        beautify_iters=1000,
        beautify_lr=1e-4,
        guidance=0.0,
        tasks=("uncond", "c"),
        extra_tasks=("uncond",),
        learned_min=0.5,
    )


def _full_settings() -> dict:
    """Quick's evaluation on all five tasks, beautify on uncond and C -> S+P, and the guidance extension."""
    return dict(test_n=128, ddim=50, beautify_iters=1000, beautify_lr=1e-4, guidance=0.05, learned_min=0.5)


def _metrics(out, real, num_classes: int, task: str) -> dict:
    """The official evaluation's metrics (``layout_metrics(variant="official")``: the numbers compared with the
    paper), plus this package's variant of Alignment and Overlap as ``*_package``."""
    res = layout_metrics(out, real, num_classes, task, variant="official")
    pkg = alignment_overlap(out, real, task, variant="package")
    res["align_x100_package"] = pkg["align_x100"]
    res["overlap_x100_package"] = pkg["overlap_x100"]
    return res


# beautify (the official post_process) and the guidance extension run on LACE's samples of these tasks
EXTRA_TASKS = ("uncond", "c")


def load_arm(config: RunConfig, arm: str, seed: int):
    """(model, LaceConfig, model folder) of the shipped checkpoint (or, under ``--from-scratch``, its retrained copy)."""
    from iclr24.paperkit.shipped import model_folder

    folder = model_folder(config, MODULE, model_name(arm, seed))
    model, cfg = load_checkpoint(folder)
    return model, cfg, folder


def evaluate(config: RunConfig, s: dict, seed: int) -> tuple[dict, dict, dict]:
    """Score the baseline and LACE checkpoints of training seed ``seed`` on the test layouts of that seed; return
    metrics[arm][task] (the tasks ``s["tasks"]``, default all five), the samples to draw and the checkpoints' folders;
    ``metrics["real"]["reference"]``: a second set of real layouts (seed 30,000 + seed) against the test layouts."""
    metrics: dict = {}
    samples: dict = {}
    folders: dict = {}
    for arm in ARMS:
        model, acfg, folders[arm] = load_arm(config, arm, seed)
        if not metrics:
            L, C = acfg.max_elements, acfg.num_classes
            test = synthetic_aligned_layouts(s["test_n"], seed=20_000 + seed, max_elements=L)
            # a second, independent set of real layouts scored against the test layouts: how far a model is from the data
            second = synthetic_aligned_layouts(s["test_n"], seed=30_000 + seed, max_elements=L)
            metrics["real"] = {"reference": _metrics(second, test, C, "c")}
            samples["real"] = test
        metrics[arm] = {}
        for task in s.get("tasks", TASKS):
            cond = None if task == "uncond" else test
            out = generate(model, acfg, task, n=s["test_n"], layouts=cond, steps=s["ddim"], seed=seed)
            metrics[arm][task] = _metrics(out, test, acfg.num_classes, task)
            if task == "uncond":
                samples[arm] = out
            if arm == "LACE" and task in s.get("extra_tasks", EXTRA_TASKS):
                _lace_extras(model, acfg, s, seed, task, out, test, metrics, samples)
    return metrics, samples, folders


def _lace_extras(model, acfg, s: dict, seed: int, task: str, out, test, metrics, samples) -> None:
    """LACE's post-processing (the official ``post_process``) and, where ``s["guidance"]`` is set, the gradient
    guidance extension, on the ``task`` samples ``out``."""
    C = acfg.num_classes
    if s.get("guidance"):
        # EXTENSION (not in the official code): constraint-gradient guidance of x0_hat at each DDIM step
        cond = None if task == "uncond" else test
        gout = generate(
            model, acfg, task, n=s["test_n"], layouts=cond, steps=s["ddim"], seed=seed, guidance=s["guidance"]
        )
        metrics.setdefault("LACE+guidance", {})[task] = _metrics(gout, test, C, task)
    b2, m2 = beautify(out[0], out[2], iterations=s["beautify_iters"], lr=s["beautify_lr"])
    metrics.setdefault("LACE+beautify", {})[task] = _metrics((b2, out[1], m2), test, C, task)
    if task == "uncond":
        samples["LACE+beautify"] = (b2, out[1], m2)


def _mean(per_seed: list[dict], arm: str, task: str, key: str) -> float:
    return float(np.mean([m[arm][task][key] for m in per_seed]))


def _bars(per_seed: list[dict], key: str, tasks, title: str):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3))
    arms = [a for a in ("baseline", "LACE", "LACE+beautify", "LACE+guidance") if a in per_seed[0]]
    w = 0.8 / len(arms)
    for k, arm in enumerate(arms):
        vals = [_mean(per_seed, arm, t, key) if t in per_seed[0].get(arm, {}) else np.nan for t in tasks]
        ax.bar(np.arange(len(tasks)) + (k - (len(arms) - 1) / 2) * w, vals, w, label=arm)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


# The metric each rule reads (its ``key`` in a task's metrics): the reports' words, and which way is better
_METRICS = {
    "align_x100": ("Alignment x100 (official metric)", "lower"),
    "overlap_x100": ("Overlap x100 (official metric)", "lower"),
    "max_iou": ("MaxIoU", "higher"),
    "fd": ("feature Frechet distance", "lower"),
}


def _rule(
    claim: str,
    task: str,
    key: str,
    *,
    factor: float | None = None,
    margin: float | None = None,
    arm: str = "LACE",
    base: str = "baseline",
) -> dict:
    """One rule: per-seed (``arm``, ``task``, ``key``) against (``base``, ``task``, ``key``), in the ratio form
    (``factor``) or the difference form (``margin``); ``rule``: the rule in the reports' words."""
    metric, better = _METRICS[key]
    lower = better == "lower"
    if factor is not None:
        form, bound = {"factor": factor}, f"{factor:g} * baseline"
    else:
        form, bound = (
            {"margin": margin},
            "baseline" + (f" {'+' if lower else '-'} {margin:g}" if margin else ""),
        )
    rule = f"ours {'<=' if lower else '>='} {bound}"
    return dict(
        claim=claim, metric=metric, arm=arm, base=base, task=task, key=key, better=better, **form, rule=rule
    )


_BEAUTIFY = dict(arm="LACE+beautify", base="LACE")
# The six rules, fixed before any evaluated run (Sec. 5 of the paper: better alignment and less overlap at the same
# MaxIoU and fidelity; beautify aligns further without hurting fidelity). Each compares per-seed values of
# (arm, task, metric) against (baseline arm, task, metric); ``factor``: the ratio form, ``margin``: the difference form.
RULES = {
    "align": _rule(
        "the constraint losses improve alignment (unconditional)", "uncond", "align_x100", factor=0.75
    ),
    "overlap": _rule(
        "the constraint losses lower overlap (unconditional)", "uncond", "overlap_x100", margin=0.0
    ),
    "max_iou": _rule("MaxIoU is kept (C -> S+P)", "c", "max_iou", margin=0.02),
    "fd": _rule("fidelity is kept (unconditional feature FD)", "uncond", "fd", factor=1.1),
    "beautify_align": _rule(
        "beautify lowers alignment further (unconditional)", "uncond", "align_x100", margin=0.0, **_BEAUTIFY
    ),
    "beautify_fd": _rule(
        "beautify keeps fidelity (unconditional feature FD)", "uncond", "fd", factor=1.1, **_BEAUTIFY
    ),
}
BASELINE_NAMES = {"baseline": "same diffusion, no constraint losses", "LACE": "LACE without beautify"}


_KIND = {
    "align": "headline",
    "overlap": "headline",
    "max_iou": "supporting",
    "fd": "supporting",
    "beautify_align": "supporting",
    "beautify_fd": "supporting",
}
_DATA = (
    "synthetic aligned layouts (1-2 columns, 4 classes, up to 12 elements): 128 test layouts per training seed "
    "(layout seed 20,000 + seed); models: the shipped checkpoints, trained once by `lace train` on 2,000 layouts of "
    "seed 10,000 + seed"
)
_SEEDS_WHY = (
    "the shipped checkpoint pairs of training seeds 10-15 (baseline and LACE share seed, data and steps), trained "
    "after the plan was fixed; the headline rules take the power rule's n from the pairs of seeds 3-9 (calibration "
    "only, never evaluated again): alignment 6, overlap 144 (over the budget: undecidable); the supporting rules use "
    "all six"
)
# The headline rules' power calibration: the shipped pairs of training seeds 3-9, as recorded at d461041 (quick,
# 2026-12-05 06:19 UTC) and 66a9912 (full, 06:23 UTC) on the AMD EPYC, load 0.26 / 0.16 (docs/calibration.md),
# unconditional task, 128 test layouts, 50 DDIM steps; the same values in quick and full (calibration.json). CPU s
# per evaluated pair: the 7 pairs' CPU s (its cpu_seconds, from the records) / 7, to 0.1 s.
_CAL_VALUES = {key: dict(row) for key, row in _table["rules"].items()}
_SECONDS_PER_PAIR = {mode: round(s / len(_table["seeds"]), 1) for mode, s in _table["cpu_seconds"].items()}
# CPU s a headline rule may use (quick's cap; full's: a third of its 30 minutes)
BUDGET = {"quick": 60.0, "full": 600.0}


def _calibration(key: str) -> dict | None:
    if key not in _CAL_VALUES:
        return None
    return {
        mode: Calibration(
            seeds=_table["seeds"],  # CALIBRATION_SEEDS (a test checks it)
            seconds_per_seed=_SECONDS_PER_PAIR[mode],
            measured=_table["measured"],
            **_CAL_VALUES[key],
        )
        for mode in ("quick", "full")
    }


def _spec(key: str) -> ClaimSpec:
    r = RULES[key]
    form = {"factor": r["factor"]} if "factor" in r else {"margin": r["margin"]}
    return ClaimSpec(
        id=key,
        kind=_KIND[key],
        claim=r["claim"],
        metric=r["metric"],
        baseline=BASELINE_NAMES[r["base"]],
        data=_DATA,
        better=r["better"],
        seeds={"quick": EVAL_SEEDS, "full": EVAL_SEEDS},
        calibration=_calibration(key),
        budget=BUDGET if key in _CAL_VALUES else None,
        seeds_why=_SEEDS_WHY,
        **form,
    )


CLAIMS = tuple(_spec(k) for k in CLAIM_KEYS)
_ROW = {c.id: c for c in CLAIMS}


def _table(per_seed: list[dict]) -> dict:
    """Means over seeds of every number (None where a seed has none)."""
    out: dict = {}
    for arm in per_seed[0]:
        out[arm] = {}
        for t in per_seed[0][arm]:
            if t == "final_loss":
                continue
            row = {}
            for k in per_seed[0][arm][t]:
                vals = [p[arm][t][k] for p in per_seed if p[arm][t].get(k) is not None]
                row[k] = float(np.mean(vals)) if vals else None
            out[arm][t] = row
    return out


def _figures(claims: ClaimSet, per_seed: list[dict], samples: dict, cfg, mode: str) -> dict:
    """The claims' plots; returns the artifacts of each rule."""
    f_align = claims.figure(
        _bars(per_seed, "align_x100", TASKS, "Alignment x100, official metric (lower is better)"),
        "alignment.png",
    )
    f_over = claims.figure(
        _bars(per_seed, "overlap_x100", TASKS, "Overlap x100, official metric (lower is better)"),
        "overlap.png",
    )
    f_fd = claims.figure(_bars(per_seed, "fd", TASKS, "feature Frechet distance (lower is better)"), "fd.png")
    f_iou = claims.figure(
        _bars(per_seed, "max_iou", MAXIOU_TASKS, "MaxIoU (higher is better)"), "max_iou.png"
    )
    grid = {k: samples[k] for k in ("real", "baseline", "LACE", "LACE+beautify") if k in samples}
    f_grid = claims.figure(layout_grid(grid, n=6, categories=cfg.categories), f"samples-{mode}.png")
    return {
        "align": [f_align, f_grid],
        "overlap": [f_over],
        "max_iou": [f_iou],
        "fd": [f_fd],
        "beautify_align": [f_align, f_grid],
        "beautify_fd": [f_fd],
    }


def _learned(s: dict, table: dict) -> dict | None:
    """The precondition, fixed before the run: both arms' C -> S+P MaxIoU (mean over seeds) at least
    ``learned_min`` x the run's real-vs-real MaxIoU; None where the mode sets no threshold."""
    if not s.get("learned_min"):
        return None
    ref_iou = table["real"]["reference"]["max_iou"]
    arm_iou = {arm: table[arm]["c"]["max_iou"] for arm in ARMS}
    learned = all(v >= s["learned_min"] * ref_iou for v in arm_iou.values())
    why = (
        ""
        if learned
        else (
            "the models did not learn the layouts in this run: MaxIoU C -> S+P "
            + ", ".join(f"{a} {v:.3f}" for a, v in arm_iou.items())
            + f", below {s['learned_min']} x the real-vs-real {ref_iou:.3f}"
        )
    )
    rule = f"MaxIoU C -> S+P of both arms >= {s['learned_min']} x real vs real"
    return {"rule": rule, "max_iou_c": arm_iou, "real_vs_real": ref_iou, "holds": learned, "why": why}


def _undecided(claims: ClaimSet, spec: ClaimSpec, why: str, details: dict, artifacts: list) -> None:
    """A rule the run cannot decide on these checkpoints (the models did not learn the layouts): no verdict."""
    kw = spec.claim_kwargs(claims.mode, {"details": details}, paired=True)
    keep = {
        k: kw[k] for k in ("claim", "kind", "metric", "baseline_name", "paper_value", "details") if k in kw
    }
    claims.add(
        status="undecidable", message=f"not decided on these checkpoints: {why}", artifacts=artifacts, **keep
    )


def _facts(claims: ClaimSet, table: dict, seed: int) -> None:
    real = synthetic_aligned_layouts(256, seed=20_000 + seed)
    claims.fact(
        "real synthetic layouts: Alignment x100",
        value=100 * float(alignment_score(real[0].double(), real[2]).mean()),
        description="the generator aligns every element by construction (Overlap is 0 too)",
    )
    ref = table["real"]["reference"]
    claims.fact(
        "real vs real: MaxIoU of a second set of real test layouts",
        value=ref["max_iou"],
        description="the reference for the models' C -> S+P MaxIoU (feature FD "
        f"{ref['fd']:.3g}); the sets differ in their label multisets, so fewer layouts are matched",
    )
    claims.fact(
        "w(0) / w(100)", value=float(0.96**-100), description="time weight of the constraints, closed form"
    )


def _check_seeds(config: RunConfig, seeds: list[int]) -> None:
    missing = [k for k in seeds if k not in EVAL_SEEDS]
    if missing:
        raise InputError(
            f"lace evaluates the checkpoints of training seeds {EVAL_SEEDS[0]}-{EVAL_SEEDS[-1]} only (seeds "
            f"{CALIBRATION_SEEDS[0]}-{CALIBRATION_SEEDS[-1]} calibrate the power rule); --seed {config.seed} asks "
            f"for {seeds}: run reproduce with --seed 0"
        )


def _measure_all(claims: ClaimSet, s: dict, seeds: list[int]) -> dict:
    """Evaluate every seed's checkpoint pair once (shared by all six claims): per-seed metrics, their means, the
    details every claim carries, the learned precondition and the plots."""
    from iclr24.paperkit.shipped import training_label

    config = claims.config
    per_seed, samples, labels = [], None, {}
    for seed in seeds:
        m, smp, folders = evaluate(config, s, seed)
        per_seed.append(m)
        samples = samples or smp
        labels.update({model_name(a, seed): training_label(f) for a, f in folders.items()})
    table = _table(per_seed)
    details = {
        "evaluated_on": "checkpoints retrained now by their recorded commands (--from-scratch)"
        if config.from_scratch
        else "the checkpoints shipped in the package (checkpoints/), trained once by `lace train`",
        "checkpoints": labels,
        "metrics": table,
        "metrics_per_seed": per_seed,
        "seeds": seeds,
        "metric_variant": "official (util/metric.py + test.py); *_package: this package's variant",
        "settings": dict(s),
    }
    learned = _learned(s, table)
    if learned is not None:
        details["learned"] = {k: v for k, v in learned.items() if k != "why"}
    cfg = load_arm(config, "LACE", seeds[0])[1]
    arts = _figures(claims, per_seed, samples, cfg, config.mode)
    return {"per_seed": per_seed, "table": table, "details": details, "learned": learned, "arts": arts}


def _add_rule(claims: ClaimSet, spec: ClaimSpec, res: dict, seeds: list[int]) -> None:
    """One rule of ``CLAIMS`` over its paired seeds (``seeds``: the row's evaluated seeds, its power plan's first n
    where calibrated), or undecidable where the models did not learn the layouts."""
    r = RULES[spec.id]
    per_seed = [res["per_seed"][res["details"]["seeds"].index(k)] for k in seeds]
    # the per-task metrics ride on the first claim; every claim names the checkpoints it was evaluated on
    keys = ("evaluated_on", "checkpoints", "seeds") + (("learned",) if res["learned"] else ())
    details = res["details"] if spec.id == CLAIM_KEYS[0] else {k: res["details"][k] for k in keys}
    learned = res["learned"]
    if learned is not None and not learned["holds"]:
        _undecided(claims, spec, learned["why"], details, res["arts"][spec.id])
        return
    claims.paired(
        spec=spec,
        ours=[p[r["arm"]][r["task"]][r["key"]] for p in per_seed],
        baseline=[p[r["base"]][r["task"]][r["key"]] for p in per_seed],
        seeds=seeds,
        details=details,
        artifacts=res["arts"][spec.id],
    )


def _runs(spec: ClaimSpec, mode: str) -> bool:
    """Whether ``run_claims`` measures this row in ``mode`` (in the mode, and its power plan decidable there)."""
    plan = spec.plan(mode) if mode != "smoke" else None
    return spec.in_mode(mode) and (plan is None or plan.decidable)


def run(config: RunConfig) -> ClaimSet:
    from iclr24.paperkit import run_claims

    claims = ClaimSet("lace", config)
    s = settings(config.mode)
    # every checkpoint pair any row evaluates, measured once (the rows share the samples)
    seeds = sorted(
        {k for c in CLAIMS if _runs(c, config.mode) for k in c.evaluated_seeds(config.mode, config.seed)}
    )
    _check_seeds(config, seeds)
    measured = functools.cache(lambda: _measure_all(claims, s, seeds))
    run_claims(
        claims,
        CLAIMS,
        {k: lambda spec, row_seeds: _add_rule(claims, spec, measured(), row_seeds) for k in CLAIM_KEYS},
    )
    if any(c.status != "error" for c in claims.claims):
        _facts(claims, measured()["table"], config.seed)
    return claims


PAPER = Paper(
    name="lace",
    title="Towards Aligned Layout Generation via Diffusion Model with Aesthetic Constraints",
    summary="layout diffusion with alignment/overlap losses gives better-aligned layouts at the same fidelity",
    run=run,
    budgets={"full": 1800},  # 30 CPU minutes allowed; evaluating the shipped checkpoints needs far less
    paper_scale=paper_scale,
    threads=1,  # small models run fastest on one thread, and the pin keeps the numbers the same everywhere
    claims=CLAIMS,
)
