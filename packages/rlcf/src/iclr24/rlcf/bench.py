"""Benchmarks behind ``rlcf bench``: the cost of one test sample for zero-shot, TPT and RLCF (time and peak memory),
as ratios to zero-shot. The toy digits CLIPs always; a randomly initialised ViT-B-16 policy with a ViT-L-14 reward
on one 224 px sample with 16 views in ``--full``. One torch thread, interleaved medians."""

from __future__ import annotations

from dataclasses import replace

import torch

from iclr24.paperkit.bench import BenchReport
from iclr24.paperkit.bench import benchmark_many
from iclr24.paperkit.bench import peak_rss_delta
from iclr24.paperkit.errors import InputError

from .data import DIGIT_NAMES
from .data import DIGIT_TEMPLATE
from .experiments import toy_tokenizer
from .model import ToyCLIPConfig
from .reward import CLIPReward
from .toyclip import build_toy_clip
from .tta import TTAConfig
from .tta import TTARunner
from .views import clip_views
from .views import digit_views

__all__ = ["run_benchmarks"]


def _cases(policy, reward_model, names, views, n_views, kw, resolution=None) -> dict:
    cfgs = {
        "zero-shot": TTAConfig(method="zero-shot", mode="image", n_views=n_views),
        "TPT (1 step)": TTAConfig(method="tpt", mode="image", steps=1, lr=1e-3, n_views=n_views),
        "RLCF (3 steps + reward)": TTAConfig(method="rlcf", mode="image", steps=3, lr=1e-3, n_views=n_views),
    }
    runners = {
        k: TTARunner(policy, CLIPReward(reward_model, resolution=resolution), names, c, **kw)
        for k, c in cfgs.items()
    }
    return {
        k: (lambda r=r, v=(views[:1] if k == "zero-shot" else views): r.adapt(v)) for k, r in runners.items()
    }


def _measure(cases: dict, repeats: int, warmup: int, label: str, notes: list[str]):
    res = benchmark_many(cases, baseline="zero-shot", repeats=repeats, warmup=warmup, threads=1, clock="cpu")
    out = []
    for r in res:
        mem = peak_rss_delta(cases[r.name])
        out.append(replace(r, name=f"{label}: {r.name}", peak_mem_bytes=mem))
        notes.append(
            f"{label}: {r.name}: {1.0 / r.median_s:.2f} samples/s, x{r.median_s / r.baseline_median_s:.1f} the time of "
            f"zero-shot, peak RSS growth {mem / 2**20:.1f} MiB" if mem is not None else
            f"{label}: {r.name}: {1.0 / r.median_s:.2f} samples/s"
        )  # fmt: skip
    return out


def _side(model) -> int:
    size = getattr(model.visual, "image_size", 224)
    return int(size[0] if isinstance(size, tuple | list) else size)


def run_benchmarks(mode: str, repeats: int | None = None) -> BenchReport:
    """``mode`` smoke|quick|full; ``repeats`` overrides the toy's repeats (tests)."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    repeats = repeats or {"smoke": 2, "quick": 7, "full": 9}[mode]
    notes = [
        "process CPU time, torch pinned to one thread, interleaved medians over repeats; ratio column = zero-shot "
        "time / method time (< 1: slower than zero-shot); peak memory = growth of the process's peak RSS in one call"
    ]
    results = []
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(0)
        pol = build_toy_clip(ToyCLIPConfig(vision_width=8), seed=0)
        rew = build_toy_clip(ToyCLIPConfig(vision_width=16), seed=1)
        views = digit_views(torch.rand(1, 8, 8), 64, generator=torch.Generator().manual_seed(0))
        kw = dict(template=DIGIT_TEMPLATE, ctx_init=None, policy_tokenizer=toy_tokenizer,
                  reward_tokenizer=toy_tokenizer)  # fmt: skip
        results += _measure(
            _cases(pol, rew, DIGIT_NAMES, views, 64, kw), repeats, 1, "toy digits, 64 views", notes
        )
        if mode == "full":
            import open_clip

            pol = open_clip.create_model("ViT-B-16").eval()
            rew = open_clip.create_model("ViT-L-14").eval()
            names = ["cat", "dog", "car", "plane", "ship", "bird", "horse", "truck", "deer", "frog"]
            img = torch.rand(3, 256, 256)
            side = _side(pol)
            views = clip_views(img, 16, resolution=side, generator=torch.Generator().manual_seed(0))
            cases = _cases(pol, rew, names, views, 16, {}, resolution=_side(rew))
            results += _measure(
                cases, 1, 0, "ViT-B-16 policy + ViT-L-14 reward (random init), 16 views", notes
            )
            notes.append("ViT row: one repeat (a 16-view ViT-B-16 forward takes seconds on a CPU); selection keeps "
                         "floor(0.1 * 16) = 1 view")  # fmt: skip
    return BenchReport(results=results, notes=notes)
