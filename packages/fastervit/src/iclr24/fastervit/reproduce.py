"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

1. Carrier tokens carry global context (the mechanism behind HAT): on the cross-window copy task, plain window
   attention stays at chance, HAT learns it and matches global attention (3 seeds).
2. HAT scales better than global attention: the global/HAT time ratio of one layer grows with the map size.

Facts (hold by construction, not claims): the parameter counts of FasterViT-0..3 equal the official release's.
"""

from __future__ import annotations

import statistics
from dataclasses import replace

from iclr24.paperkit import ClaimSet, Paper, RunConfig, progress

from .experiments import (
    ATTENTION_VARIANTS,
    CarrierTokenConfig,
    ScalingConfig,
    config_dict,
    run_carrier_token_task,
    time_layers,
)
from .registry import OFFICIAL_PARAMS

__all__ = ["PAPER", "run", "SMOKE", "QUICK", "FULL", "SCALING", "PARAM_FACT_VARIANTS"]

NAME = "fastervit"

# CPU-scale settings (the paper trains FasterViT on ImageNet-1K for 300 epochs on GPUs; this is a mechanism check).
SMOKE = dict(cfg=CarrierTokenConfig(square=8, epochs=1, samples_per_epoch=128, test_samples=128), seeds=(0,))
# quick: 8x8-px squares fill one carrier token's pooling cell, which the models learn in ~2-4k samples
QUICK = dict(cfg=CarrierTokenConfig(square=8, epochs=5, samples_per_epoch=2000), seeds=(0, 1, 2))
# full: the spec's 4x4-px squares (harder: the pooled carrier token dilutes the colour 4x)
FULL = dict(cfg=CarrierTokenConfig(square=4, epochs=10, samples_per_epoch=2000), seeds=(0, 1, 2))
SCALING = dict(
    smoke=ScalingConfig(sizes=(14, 28), dim=32, repeats=2),
    quick=ScalingConfig(repeats=5),
    full=ScalingConfig(repeats=9),
)
PARAM_FACT_VARIANTS = ("faster_vit_0_224", "faster_vit_1_224", "faster_vit_2_224", "faster_vit_3_224")


def _carrier_token_claim(claims: ClaimSet, config: RunConfig) -> None:
    setting = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    cfg = replace(setting["cfg"])
    seeds = [config.seed + s for s in setting["seeds"]]
    runs = []
    jobs = [(a, s) for s in seeds for a in ATTENTION_VARIANTS]
    for att, seed in progress(jobs, desc="carrier-token task", disable=not config.progress):
        runs.append(run_carrier_token_task(att, seed, cfg))
    acc = {a: [r["test_acc"] for r in runs if r["attention"] == a] for a in ATTENTION_VARIANTS}
    mean = {a: statistics.fmean(v) for a, v in acc.items()}
    claims.add(
        claim="Carrier tokens carry global context: with a readout from one window only, HAT solves a task whose "
        "evidence lies in another window (plain window attention cannot) and matches global attention",
        metric="test accuracy, mean over seeds (chance = 0.5)",
        ours=mean["hat"],
        baseline_name="plain window attention (only_local)",
        baseline=mean["local"],
        rule="ours >= 0.9 and baseline <= 0.6 and abs(ours - global_attention) <= 0.05",
        variables={"global_attention": mean["global"]},
        details={
            "per_seed_test_acc": acc,
            "std": {a: statistics.pstdev(v) for a, v in acc.items()},
            "runs": runs,
            "seeds": seeds,
            "config": config_dict(cfg),
        },
    )


def _scaling_figure(rows: list[dict]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.5, 3.2))
    ax.plot([r["size"] for r in rows], [r["hat_s"] * 1e3 for r in rows], "o-", label="HAT (window 7)")
    ax.plot([r["size"] for r in rows], [r["global_s"] * 1e3 for r in rows], "s-", label="global attention")
    ax.set_xlabel("feature map side")
    ax.set_ylabel("forward time (ms), CPU")
    ax.set_yscale("log")
    ax.legend()
    fig.tight_layout()
    return fig


def _scaling_claim(claims: ClaimSet, config: RunConfig) -> None:
    cfg = config.pick(**SCALING)
    rows = time_layers(cfg)
    artifacts = []
    try:
        artifacts.append(claims.figure(_scaling_figure(rows), "hat_vs_global_scaling.png"))
    except ImportError:  # pragma: no cover - matplotlib is optional for the claim itself
        pass
    first, last = rows[0], rows[-1]
    claims.add(
        claim="HAT scales better than global attention with the feature-map size (time ratio global/HAT grows)",
        metric=f"global/HAT time ratio of one layer at {last['size']}x{last['size']}",
        ours=last["global_over_hat"],
        baseline_name=f"the same ratio at {first['size']}x{first['size']}",
        baseline=first["global_over_hat"],
        rule="ours > baseline",
        details={"rows": rows, "config": config_dict(cfg)},
        artifacts=artifacts,
    )


def _parameter_facts(claims: ClaimSet) -> None:
    """Parameter counts of FasterViT-0..3 (1000-class head): equal to the official release by construction (same
    state-dict keys and shapes), so facts, not claims. Built on the meta device: no memory, no weights."""
    import timm
    import torch

    for name in PARAM_FACT_VARIANTS:
        with torch.device("meta"):
            model = timm.create_model(name)
        claims.fact(
            f"parameters of {name}",
            value=sum(p.numel() for p in model.parameters()),
            paper_value=OFFICIAL_PARAMS[name],
            description="holds by construction: the official release's state-dict keys and shapes (fastervit 1.0.0)",
        )


def run(config: RunConfig) -> ClaimSet:
    """Both claims and the parameter-count facts; smoke mode takes seconds, quick a few minutes on 2 CPU cores,
    full about ten."""
    import torch

    claims = ClaimSet(NAME, config)
    threads = torch.get_num_threads()
    try:
        with claims.timed("carrier-token task"):
            _carrier_token_claim(claims, config)
        with claims.timed("HAT vs global attention scaling"):
            _scaling_claim(claims, config)
    finally:
        torch.set_num_threads(threads)
    _parameter_facts(claims)
    return claims


PAPER = Paper(
    name=NAME,
    title="FasterViT: Fast Vision Transformers with Hierarchical Attention",
    summary="The FasterViT family inside timm, with HAT as a plug-in block; parameter counts equal the official release.",
    run=run,
)
