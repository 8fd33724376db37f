"""The paper's claims at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

One source model per seed, shared by every method: source-only, AaD (= SNC only, the paper's named baseline:
SF(DA)^2 without its regularisers), SF(DA)^2 with FD weight 1 (the method under test), and in --quick SF(DA)^2 with
the paper's FD weight 10 and SHOT-IM (reported). ``--full`` runs MNIST -> digits (real images, 8 seeds) first, then
the digits shift (clean sklearn digits -> rotated +-20-35 degrees + noise) at the official adaptation length over
5 seeds; ``--quick`` runs the digits shift over seeds 0-2. Each claim is decided over the paired seeds by a 95 %
t-interval (paperkit's ``claims.paired``). The rules and seed counts are fixed here, before any run.
:data:`PAPER_SCALE` (``paper_scale.py``) is the paper's own VisDA-2017 run, measured by ``sfda2 bench --paper-scale``.
"""

from __future__ import annotations

import copy
import math
import statistics
import time
from dataclasses import asdict, dataclass, replace

import torch

from iclr24.paperkit import ClaimSet, Paper, RunConfig, progress, seed_everything, torch_threads

from .adapt import SFDA2Config, SourceConfig, accuracy, adapt, per_class_accuracy, predict, train_source
from .data import Domains, digits_domains, mnist_to_digits
from .losses import alpha_schedule, implicit_feature_augmentation_loss, lambda_schedule
from .models import digits_model
from .paper_scale import PAPER_SCALE, paper_scale

__all__ = ["FULL", "PAPER", "PAPER_SCALE", "QUICK", "SMOKE", "ReproConfig", "paper_scale", "run"]

NAME = "sfda2"

# The paper's VisDA-2017 numbers (ResNet-101, per-class mean accuracy, as listed for the paper on Papers with Code
# and in its VisDA table): reported beside ours, never compared with a rule.
PAPER_VISDA = {"source-only": 46.6, "SHOT": 82.9, "NRC": 85.9, "AaD": 88.0, "SF(DA)^2": 88.1}

METHOD_LABELS = {
    "aad": "AaD (SNC only)",
    "sfda2": "SF(DA)^2 (FD weight 1)",
    "sfda2-paper-fd": "SF(DA)^2 (paper's FD weight 10)",
    "shot-im": "SHOT-IM",
}


@dataclass(frozen=True)
class ReproConfig:
    """The CPU study. ``adapt`` holds the adaptation settings shared by every method (official defaults except
    lr 1e-2 and FD weight ``alpha_2`` = 1; see the README's differences). ``mnist`` is the MNIST -> digits study
    run before the digits one (``--full``; ``None`` skips it), with its own seeds, sizes and ``mnist_n_source``."""

    seeds: tuple[int, ...] = (0, 1, 2)
    source: SourceConfig = SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=30, weight_decay=5e-4)
    adapt: SFDA2Config = SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=15, interval=15)
    paper_alpha_2: float = 10.0
    methods: tuple[str, ...] = ("aad", "sfda2", "sfda2-paper-fd", "shot-im")
    bottleneck_dim: int = 64
    max_samples: int | None = None  # cap on source/target sizes (smoke only)
    mnist: ReproConfig | None = None
    mnist_n_source: int = 2000


# Calibration seeds for the smaller configs below: 100, 101, 102 (disjoint from the evaluated seeds, which start at
# 0). On them (mean of 3) the quick digits config gave source-only 46.2, AaD 58.6, SF(DA)^2 61.0, and the MNIST
# config gave source-only 78.1, AaD 92.6, SF(DA)^2 94.2. The seed counts of --full were then set by the CPU time
# one seed costs (calibration seed 100, one torch thread, 2026-12-02: digits source 10 epochs 4.5 s, digits
# adaptation 15 epochs about 12 s per method, MNIST source 10 epochs 9.3 s, MNIST adaptation 5 epochs about 8 s
# per method), to fit --full's ten minutes; no evaluated result chose them.
CALIBRATION_SEEDS = (100, 101, 102)

SMOKE = ReproConfig(
    seeds=(0,),
    source=SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=1, weight_decay=5e-4),
    adapt=SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=1, interval=1),
    methods=("aad", "sfda2"),
    max_samples=160,
)
QUICK = ReproConfig(
    source=SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=10, weight_decay=5e-4),
    adapt=SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=2, interval=6),
)
MNIST_FULL = ReproConfig(
    seeds=tuple(range(8)),
    source=SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=10, weight_decay=5e-4),
    adapt=SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=5, interval=5),
    methods=("aad", "sfda2"),
    mnist_n_source=2000,
)
# --full: MNIST -> digits over 8 seeds (it leads), then the digits shift at the official adaptation length (15
# epochs) over 5 seeds, with the lighter 10-epoch source model of --quick (instead of 30 epochs) and only the two
# methods the claims compare (FD weight 10 and SHOT-IM are reported by --quick), which is what buys the seeds.
FULL = ReproConfig(
    seeds=tuple(range(5)),
    source=SourceConfig(lr=1e-2, backbone_lr_mult=1.0, epochs=10, weight_decay=5e-4),
    methods=("aad", "sfda2"),
    mnist=MNIST_FULL,
)


def _method_config(c: ReproConfig, method: str) -> SFDA2Config:
    if method == "sfda2-paper-fd":
        return replace(c.adapt, method="sfda2", alpha_2=c.paper_alpha_2)
    return replace(c.adapt, method=method)


def _cap(d: Domains, n: int | None) -> Domains:
    if n is None:
        return d
    return Domains(d.source_x[:n], d.source_y[:n], d.target_x[:n], d.target_y[:n], name=d.name)


def measure(c: ReproConfig, domains_for_seed, device: str = "cpu", show: bool = True) -> dict:
    """Train one source model per seed, adapt a copy with every method; returns per-method per-seed accuracies,
    curves, loss histories' non-finite counts and seconds."""
    out: dict = {"source-only": [], "curves": {}, "nonfinite": {}, "seconds": {}, "mean_class": {}}
    for m in c.methods:
        out[m] = []
        out["curves"][m] = []
        out["nonfinite"][m] = 0
        out["seconds"][m] = 0.0
        out["mean_class"][m] = []
    out["mean_class"]["source-only"] = []
    out["seconds"]["source training"] = 0.0
    bar = progress(
        total=len(c.seeds) * (1 + len(c.methods)), desc="sfda2 study", disable=None if show else True
    )
    for seed in c.seeds:
        d = _cap(domains_for_seed(seed), c.max_samples)
        t0 = time.perf_counter()
        seed_everything(seed)  # the source model's initialisation depends on the seed only, not on run order
        model = digits_model(num_classes=10, bottleneck_dim=c.bottleneck_dim)
        model = train_source(model, d.source_x, d.source_y, c.source, seed=seed, device=device)
        out["seconds"]["source training"] += time.perf_counter() - t0
        _, logits = predict(model, d.target_x, device=device)
        pred = logits.argmax(1).cpu()
        out["source-only"].append(accuracy(pred, d.target_y))
        out["mean_class"]["source-only"].append(
            float(torch.nanmean(per_class_accuracy(pred, d.target_y, 10)))
        )
        bar.update(1)
        for m in c.methods:
            res = adapt(
                copy.deepcopy(model),
                d.target_x,
                _method_config(c, m),
                labels=d.target_y,
                seed=seed,
                device=device,
            )
            out[m].append(res.final_acc)
            out["mean_class"][m].append(res.evals[-1]["mean_class_acc"])
            out["curves"][m].append([(e["iter"], e["acc"]) for e in res.evals])
            out["nonfinite"][m] += res.nonfinite + sum(
                1 for h in res.history for v in h.values() if not math.isfinite(v)
            )
            out["seconds"][m] += res.seconds
            bar.update(1)
    bar.close()
    return out


def _mean(xs) -> float:
    return float(statistics.fmean(xs))


def _plot(res: dict, title: str):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    src = _mean(res["source-only"])
    ax.axhline(src, color="grey", ls=":", label=f"source-only ({src:.1f})")
    for m, curves in res["curves"].items():
        if not curves:
            continue
        iters = [p[0] for p in curves[0]]
        acc = [_mean([cv[i][1] for cv in curves]) for i in range(len(iters))]
        ax.plot(iters, acc, marker="o", ms=3, label=f"{METHOD_LABELS[m]} ({acc[-1]:.1f})")
    ax.set_xlabel("adaptation iteration")
    ax.set_ylabel("target accuracy (%), mean over seeds")
    ax.set_title(title)
    ax.legend(fontsize=8)
    ax.grid(alpha=0.3)
    return fig


def _digits_target(seed: int) -> Domains:
    """All rotated digits are the (unlabelled) adaptation set and the evaluation set: the transductive protocol
    of the paper's VisDA/Office experiments (the target list is both)."""
    d = digits_domains(seed=seed)
    return Domains(
        d.source_x,
        d.source_y,
        torch.cat([d.target_x, d.test_x]),
        torch.cat([d.target_y, d.test_y]),
        name=d.name,
    )


def _add_claims(claims: ClaimSet, res: dict, where: str, art: str, c: ReproConfig) -> None:
    """The claims of one study, each decided over the paired seeds (same source model and target within a seed):
    the 95 % t-interval of the per-seed difference against the rule (holds / fails / inconclusive)."""
    seeds = list(c.seeds)
    per_seed = {k: res[k] for k in ("source-only", *c.methods)}
    common = {
        "per_seed_accuracy": per_seed,
        "mean_accuracy": {k: _mean(v) for k, v in per_seed.items()},
        "mean_class_accuracy": {k: _mean(v) for k, v in res["mean_class"].items()},
        "seconds": res["seconds"],
        "seeds": seeds,
        "paper_visda2017": PAPER_VISDA,
    }
    claims.paired(
        claim=f"{where}: AaD (SNC only) adapts: >= source-only + 5 points",
        metric="target top-1 accuracy (%) per seed",
        ours=res["aad"],
        baseline=res["source-only"],
        seeds=seeds,
        better="higher",
        margin=-5.0,  # ours >= baseline + 5
        baseline_name="source-only",
        paper_value=PAPER_VISDA["AaD"],
        details=common,
        artifacts=[art],
    )
    if "sfda2" in c.methods:
        claims.paired(
            claim=f"{where}: SF(DA)^2 (SNC + IFA + FD, FD weight 1) >= AaD - 0.5 points",
            metric="target top-1 accuracy (%) per seed",
            ours=res["sfda2"],
            baseline=res["aad"],
            seeds=seeds,
            better="higher",
            margin=0.5,  # ours >= baseline - 0.5
            baseline_name="AaD (SNC only)",
            paper_value=PAPER_VISDA["SF(DA)^2"],
            details={
                "per_seed": {"sfda2": res["sfda2"], "aad": res["aad"]},
                "paper_fd_weight_10": res.get("sfda2-paper-fd"),
                "shot_im": res.get("shot-im"),
            },
            artifacts=[art],
        )
    claims.add(
        claim=f"{where}: no NaN/inf in any loss term of any method",
        metric="iterations or logged terms that were not finite",
        ours=float(sum(res["nonfinite"].values())),
        baseline_name="none allowed",
        baseline=0.0,
        rule="ours == 0",
        details={"per_method": res["nonfinite"]},
    )


def _mnist_claims(claims: ClaimSet, cfg: RunConfig, mc: ReproConfig) -> None:
    with claims.timed("MNIST -> digits"):
        mres = measure(
            mc,
            lambda s: mnist_to_digits(cfg.data_dir, mc.mnist_n_source, seed=s),
            cfg.device,
            cfg.progress,
        )
        art = claims.figure(_plot(mres, "MNIST (8x8) -> sklearn digits"), "adaptation_mnist.png")
        _add_claims(claims, mres, "MNIST -> digits", art, mc)


def run(cfg: RunConfig) -> ClaimSet:
    c: ReproConfig = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)
    with torch_threads(1):
        if c.mnist is not None:  # the real shift leads
            _mnist_claims(claims, cfg, c.mnist)
        with claims.timed(f"digits shift, seeds {list(c.seeds)}"):
            res = measure(c, _digits_target, device=cfg.device, show=cfg.progress)
            art = claims.figure(_plot(res, "digits: clean -> rotated + noisy"), "adaptation_digits.png")
            _add_claims(claims, res, "digits shift", art, c)
    claims.fact(
        "IFA loss with Sigma = 0 for logits [0, 0]",
        value=float(
            implicit_feature_augmentation_loss(torch.zeros(1, 2), torch.eye(2), torch.zeros(2, 2, 2), 5.0)[0]
        ),
        description="closed form 2 * sum_i CE(l, i) = 4 ln 2 = 2.7726; holds by construction",
    )
    claims.fact(
        "alpha_t at t = T", value=alpha_schedule(1, 1), description="11^-5 = 6.2092e-6 (schedule endpoint)"
    )
    claims.fact("lambda_t at t = T/2", value=lambda_schedule(1, 2, 5.0), description="lambda_0 / 2 = 2.5")
    claims.fact(
        "study settings",
        value=f"digits CNN, bottleneck {c.bottleneck_dim}, lr {c.adapt.lr:g}, FD weight {c.adapt.alpha_2:g}",
        description="the configuration the claims above ran with (set before the run)",
        details={"repro": _jsonable(asdict(c))},
    )
    return claims


def _jsonable(obj):
    if isinstance(obj, dict):
        return {k: _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    return obj


PAPER = Paper(
    name=NAME,
    title="SF(DA)^2: Source-free Domain Adaptation Through the Lens of Data Augmentation",
    summary="Source-free adaptation by spectral neighbourhood clustering plus implicit feature augmentation and "
    "feature disentanglement, checked against AaD on a digits shift (and MNIST -> digits in --full).",
    run=run,
    data=("mnist",),
    paper_scale=paper_scale,
)
