"""The paper's claims, checked at CPU scale on synthetic aligned layouts: LACE (constraint losses on) against the same
continuous diffusion without them (lambda_a = lambda_o = 0), same network, data, steps and seeds.

Rules fixed before running (from the paper's claims, Sec. 5): Alignment <= 0.75 x baseline; Overlap lower; MaxIoU
(C -> S+P) within 0.02; feature Frechet distance within +10 %; beautify lowers Alignment further at <= +10 % FD.
Metrics are on the test layouts (seeds disjoint from training); nothing is tuned on them: the CPU-scale settings
below were chosen on calibration runs (layout seeds 3000/3001/3002 with train seed 7, and ``evaluate(..., seed=500)``)
that no evaluated run uses. Which rules a mode gates is fixed in ``settings`` (``gated``) before the run; the others
are still measured and shown. A second set of real test layouts, scored like a model, is the reference row. The
gradient guidance at each DDIM step (an extension: the official code has none) is measured and reported, never gated.
"""

from __future__ import annotations

import numpy as np

from iclr24.paperkit import ClaimSet, Paper, RunConfig
from iclr24.paperkit.seeding import torch_threads

from .beautify import beautify
from .constraints import alignment_score, overlap_score
from .data import synthetic_aligned_layouts
from .diffusion import TASKS, LaceConfig, generate, train
from .layout import encode_layout
from .metrics import feature_fd, max_iou
from .render import layout_grid

MAXIOU_TASKS = ("c", "cwh", "refine")  # tasks whose output keeps the condition's categories


CLAIM_KEYS = ("align", "overlap", "max_iou", "fd", "beautify_align", "beautify_fd")


def settings(mode: str) -> dict:
    """Sizes per mode, fixed before the evaluated runs from calibration runs on seeds no evaluated run uses (the
    baseline arm on layout seeds 3000/3001/3002 with train seed 7, and ``evaluate(..., seed=500)``; the evaluated
    seeds are 0 and 1). Both modes train the same d = 64, 2-layer network at lr 2e-3, both arms alike (in the
    calibration, 1,500 steps: MaxIoU C -> S+P 0.26 at lr 2e-3, 0.16 at 3e-3; 0.21 at 1e-3 after 2,000 steps; lr 5e-3
    did not learn); the official learned timestep embedding. Full: 1,500 steps, 2 seeds, 256 test layouts, about
    5 minutes a seed on an idle 2-core machine (500 test layouts or a third layer would not fit 10 minutes).
    ``gated``: the rules the mode decides on, fixed here before the run (the others are measured and reported).
    Quick (400 steps, about a minute) does not learn the layouts (calibration: MaxIoU C -> S+P 0.03-0.10 against
    0.46 real vs real, beautify dropping most of the thin boxes), so it gates only the constraint losses' direct
    effect on the boxes (alignment, overlap); MaxIoU, FD and beautify are gated in full only."""
    net = dict(dim=64, heads=4, layers=2, ff=128)
    common = dict(lr=2e-3, time_embedding="learned", guidance=0.05, ema=0.0)
    return {
        "smoke": dict(
            net=dict(dim=16, heads=2, layers=1, ff=32),
            batch=8,
            steps=3,
            train_n=64,
            test_n=12,
            ddim=3,
            beautify_iters=5,
            beautify_lr=1e-4,
            seeds=1,
            gated=CLAIM_KEYS,
            **common,
        ),
        "quick": dict(
            net=net,
            batch=32,
            steps=400,
            train_n=2000,
            test_n=128,
            ddim=25,
            beautify_iters=200,
            beautify_lr=5e-4,
            seeds=1,
            gated=("align", "overlap"),
            **common,
        ),
        "full": dict(
            net=net,
            batch=32,
            steps=1500,
            train_n=20000,
            test_n=256,
            ddim=50,
            beautify_iters=1000,
            beautify_lr=1e-4,
            seeds=2,
            gated=CLAIM_KEYS,
            **common,
        ),
    }[mode]


def _metrics(out, real, num_classes: int, task: str) -> dict:
    b, lab, m = out
    res = {
        "align_x100": 100 * float(alignment_score(b.double(), m).mean()),
        "overlap_x100": 100 * float(overlap_score(b.double(), m).mean()),
        "fd": feature_fd(out, real, num_classes),
        "elements": float(m.sum(1).float().mean()),
    }
    if task in MAXIOU_TASKS:
        res["max_iou"] = max_iou(out, real)
    return res


def evaluate(cfg: LaceConfig, s: dict, seed: int, progress: bool = False) -> tuple[dict, dict]:
    """Train the baseline and LACE on the same data and seed; return metrics[arm][task] and the samples to draw;
    ``metrics["real"]["reference"]``: a second set of real layouts (seed 30,000 + seed) against the test layouts."""
    train_layouts = synthetic_aligned_layouts(s["train_n"], seed=10_000 + seed, max_elements=cfg.max_elements)
    test = synthetic_aligned_layouts(s["test_n"], seed=20_000 + seed, max_elements=cfg.max_elements)
    # a second, independent set of real layouts scored against the test layouts: how far a model is from the data
    second = synthetic_aligned_layouts(s["test_n"], seed=30_000 + seed, max_elements=cfg.max_elements)
    tokens = encode_layout(*train_layouts, cfg.num_classes, cfg.max_elements)
    arms = {
        "baseline": LaceConfig(**{**cfg.to_dict(), "align_weight": 0.0, "overlap_weight": 0.0}),
        "LACE": cfg,
    }
    metrics: dict = {"real": {"reference": _metrics(second, test, cfg.num_classes, "c")}}
    samples: dict = {"real": test}
    for arm, acfg in arms.items():
        model, hist = train(acfg, tokens, seed=seed, steps=s["steps"])
        metrics[arm] = {"final_loss": float(np.mean([h["loss"] for h in hist[-20:]]))}
        for task in TASKS:
            cond = None if task == "uncond" else test
            out = generate(model, acfg, task, n=s["test_n"], layouts=cond, steps=s["ddim"], seed=seed)
            metrics[arm][task] = _metrics(out, test, cfg.num_classes, task)
            if task == "uncond":
                samples[arm] = out
            if arm == "LACE" and task in ("uncond", "c") and s.get("guidance"):
                # EXTENSION (not in the official code): constraint-gradient guidance of x0_hat at each DDIM step
                gout = generate(
                    model,
                    acfg,
                    task,
                    n=s["test_n"],
                    layouts=cond,
                    steps=s["ddim"],
                    seed=seed,
                    guidance=s["guidance"],
                )
                metrics.setdefault("LACE+guidance", {})[task] = _metrics(gout, test, cfg.num_classes, task)
            if arm == "LACE" and task in ("uncond", "c"):
                b2, m2 = beautify(out[0], out[2], iterations=s["beautify_iters"], lr=s["beautify_lr"])
                metrics.setdefault("LACE+beautify", {})[task] = _metrics(
                    (b2, out[1], m2), test, cfg.num_classes, task
                )
                if task == "uncond":
                    samples["LACE+beautify"] = (b2, out[1], m2)
    return metrics, samples


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


def run(config: RunConfig) -> ClaimSet:
    claims = ClaimSet("lace", config)
    s = settings(config.mode)
    cfg = LaceConfig(
        **s["net"],
        batch_size=s["batch"],
        steps=s["steps"],
        lr=s["lr"],
        ddim_steps=s["ddim"],
        time_embedding=s["time_embedding"],
        ema=s["ema"],
    )
    seeds = [config.seed + k for k in range(s["seeds"])]
    with claims.timed("LACE vs no-constraint diffusion on synthetic layouts"), torch_threads(1):
        per_seed, samples = [], None
        for seed in seeds:
            m, smp = evaluate(cfg, s, seed)
            per_seed.append(m)
            samples = samples or smp
        table = {
            arm: {
                t: {k: float(np.mean([p[arm][t][k] for p in per_seed])) for k in per_seed[0][arm][t]}
                for t in per_seed[0][arm]
                if t != "final_loss"
            }
            for arm in per_seed[0]
        }
        details = {"metrics": table, "seeds": seeds, "settings": {k: v for k, v in s.items()}}
        f_align = claims.figure(
            _bars(per_seed, "align_x100", TASKS, "Alignment x100 (lower is better)"), "alignment.png"
        )
        f_over = claims.figure(
            _bars(per_seed, "overlap_x100", TASKS, "Overlap x100 (lower is better)"), "overlap.png"
        )
        f_fd = claims.figure(
            _bars(per_seed, "fd", TASKS, "feature Frechet distance (lower is better)"), "fd.png"
        )
        f_iou = claims.figure(
            _bars(per_seed, "max_iou", MAXIOU_TASKS, "MaxIoU (higher is better)"), "max_iou.png"
        )
        grid = {k: samples[k] for k in ("real", "baseline", "LACE", "LACE+beautify")}
        f_grid = claims.figure(layout_grid(grid, n=6, categories=cfg.categories), "samples.png")
        g = lambda arm, t, k: _mean(per_seed, arm, t, k)  # noqa: E731

        def add(key: str, **kw) -> None:
            if key in s["gated"]:
                if not any(c.details for c in claims):
                    kw["details"] = details  # the per-task metrics ride on the first decided claim
                claims.add(**kw)
            else:  # measured, shown in the metrics table, but not decided in this mode (fixed in settings)
                claims.skip(
                    kw["claim"],
                    f"not gated in --{config.mode} (fixed before the run): ours {kw['ours']:.4g}, "
                    f"baseline {kw['baseline']:.4g}; the --full run decides it",
                )

        add(
            "align",
            claim="the constraint losses improve alignment (unconditional)",
            metric="Alignment x100",
            ours=g("LACE", "uncond", "align_x100"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "align_x100"),
            rule="ours <= 0.75 * baseline",
            artifacts=[f_align, f_grid],
        )
        add(
            "overlap",
            claim="the constraint losses lower overlap (unconditional)",
            metric="Overlap x100",
            ours=g("LACE", "uncond", "overlap_x100"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "overlap_x100"),
            rule="ours < baseline",
            artifacts=[f_over],
        )
        add(
            "max_iou",
            claim="MaxIoU is kept (C -> S+P)",
            metric="MaxIoU",
            ours=g("LACE", "c", "max_iou"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "c", "max_iou"),
            rule="ours >= baseline - 0.02",
            artifacts=[f_iou],
        )
        add(
            "fd",
            claim="fidelity is kept (unconditional feature FD)",
            metric="feature Frechet distance",
            ours=g("LACE", "uncond", "fd"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "fd"),
            rule="ours <= 1.1 * baseline",
            artifacts=[f_fd],
        )
        add(
            "beautify_align",
            claim="beautify lowers alignment further (unconditional)",
            metric="Alignment x100",
            ours=g("LACE+beautify", "uncond", "align_x100"),
            baseline_name="LACE without beautify",
            baseline=g("LACE", "uncond", "align_x100"),
            rule="ours < baseline",
            artifacts=[f_align, f_grid],
        )
        add(
            "beautify_fd",
            claim="beautify keeps fidelity (unconditional feature FD)",
            metric="feature Frechet distance",
            ours=g("LACE+beautify", "uncond", "fd"),
            baseline_name="LACE without beautify",
            baseline=g("LACE", "uncond", "fd"),
            rule="ours <= 1.1 * baseline",
            artifacts=[f_fd],
        )
    real = synthetic_aligned_layouts(256, seed=20_000 + config.seed)
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
    return claims


PAPER = Paper(
    name="lace",
    title="Towards Aligned Layout Generation via Diffusion Model with Aesthetic Constraints",
    summary="layout diffusion with alignment/overlap losses gives better-aligned layouts at the same fidelity",
    run=run,
)
