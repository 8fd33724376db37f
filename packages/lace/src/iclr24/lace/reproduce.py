"""The paper's claims, checked at CPU scale on synthetic aligned layouts: LACE (constraint losses on) against the same
continuous diffusion without them (lambda_a = lambda_o = 0), same network, data, steps and seeds.

Rules fixed before running (from the paper's claims, Sec. 5): Alignment <= 0.75 x baseline; Overlap lower; MaxIoU
(C -> S+P) within 0.02; feature Frechet distance within +10 %; beautify lowers Alignment further at <= +10 % FD.
Metrics are on the test layouts (seeds disjoint from training); nothing is tuned on them.
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


def settings(mode: str) -> dict:
    """Sizes per mode. quick: a smaller network and fewer steps than full (lr 2e-3 for its 600 steps, chosen from the
    training loss of a 400-step trial against 5e-4), the same rules and the same lr for both arms."""
    return {
        "smoke": dict(
            net=dict(dim=16, heads=2, layers=1, ff=32),
            batch=8,
            steps=3,
            lr=5e-4,
            train_n=64,
            test_n=12,
            ddim=3,
            beautify_iters=5,
            beautify_lr=1e-4,
            seeds=1,
        ),
        "quick": dict(
            net=dict(dim=32, heads=2, layers=2, ff=64),
            batch=32,
            steps=600,
            lr=2e-3,
            train_n=2000,
            test_n=128,
            ddim=25,
            beautify_iters=200,
            beautify_lr=5e-4,
            seeds=1,
        ),
        "full": dict(
            net=dict(dim=64, heads=4, layers=3, ff=128),
            batch=64,
            steps=2000,
            lr=5e-4,
            train_n=20000,
            test_n=1000,
            ddim=50,
            beautify_iters=1000,
            beautify_lr=1e-4,
            seeds=3,
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
    """Train the baseline and LACE on the same data and seed; return metrics[arm][task] and the samples to draw."""
    train_layouts = synthetic_aligned_layouts(s["train_n"], seed=10_000 + seed, max_elements=cfg.max_elements)
    test = synthetic_aligned_layouts(s["test_n"], seed=20_000 + seed, max_elements=cfg.max_elements)
    tokens = encode_layout(*train_layouts, cfg.num_classes, cfg.max_elements)
    arms = {
        "baseline": LaceConfig(**{**cfg.to_dict(), "align_weight": 0.0, "overlap_weight": 0.0}),
        "LACE": cfg,
    }
    metrics: dict = {}
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
    arms = ("baseline", "LACE", "LACE+beautify")
    w = 0.27
    for k, arm in enumerate(arms):
        vals = [_mean(per_seed, arm, t, key) if t in per_seed[0].get(arm, {}) else np.nan for t in tasks]
        ax.bar(np.arange(len(tasks)) + (k - 1) * w, vals, w, label=arm)
    ax.set_xticks(np.arange(len(tasks)), tasks)
    ax.set_title(title, fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def run(config: RunConfig) -> ClaimSet:
    claims = ClaimSet("lace", config)
    s = settings(config.mode)
    cfg = LaceConfig(**s["net"], batch_size=s["batch"], steps=s["steps"], lr=s["lr"], ddim_steps=s["ddim"])
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
        claims.add(
            claim="the constraint losses improve alignment (unconditional)",
            metric="Alignment x100",
            ours=g("LACE", "uncond", "align_x100"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "align_x100"),
            rule="ours <= 0.75 * baseline",
            details=details,
            artifacts=[f_align, f_grid],
        )
        claims.add(
            claim="the constraint losses lower overlap (unconditional)",
            metric="Overlap x100",
            ours=g("LACE", "uncond", "overlap_x100"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "overlap_x100"),
            rule="ours < baseline",
            artifacts=[f_over],
        )
        claims.add(
            claim="MaxIoU is kept (C -> S+P)",
            metric="MaxIoU",
            ours=g("LACE", "c", "max_iou"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "c", "max_iou"),
            rule="ours >= baseline - 0.02",
            artifacts=[f_iou],
        )
        claims.add(
            claim="fidelity is kept (unconditional feature FD)",
            metric="feature Frechet distance",
            ours=g("LACE", "uncond", "fd"),
            baseline_name="same diffusion, no constraint losses",
            baseline=g("baseline", "uncond", "fd"),
            rule="ours <= 1.1 * baseline",
            artifacts=[f_fd],
        )
        claims.add(
            claim="beautify lowers alignment further (unconditional)",
            metric="Alignment x100",
            ours=g("LACE+beautify", "uncond", "align_x100"),
            baseline_name="LACE without beautify",
            baseline=g("LACE", "uncond", "align_x100"),
            rule="ours < baseline",
            artifacts=[f_align, f_grid],
        )
        claims.add(
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
