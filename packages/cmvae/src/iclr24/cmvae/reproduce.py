"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Data: ``poly_digits`` (PolyMNIST's construction on scikit-learn's 8x8 digits, 3 modalities). CMVAE against MMVAE+
(the same code with one cluster at 0) followed by KMeans(10) / GMM(10) on its shared latent, and KMeans(10) on raw
pixels; same data, budget (epochs, batch, optimiser) and seeds. Rules, fixed here before any run:

1. CMVAE's test ACC (after the post-hoc cluster selection) >= the better of MMVAE+ + KMeans / GMM + 3 points,
   decided over paired seeds (``--full``: 3 seeds, 95 % t-interval of the per-seed slack).
2. The number of clusters K* selected by the official rule (``prune_polyMNIST.py``: entropy / log K_max, on held-out
   validation tuples) lies in [8, 12] on every seed.
3. CMVAE's unconditional coherence > MMVAE+'s, decided over paired seeds.
4. The diffusion refinement brings 1,000 prior samples closer (pixel Frechet distance) to the test images than a
   noise-matched baseline does: the decoder means plus i.i.d. Gaussian noise with the per-pixel variance of the
   reconstruction residuals (adding noise to smooth means already lowers that distance) (seed 0).
``--quick`` (1 seed, 15 epochs) gates only rule 4: at that budget the shared latent of both models is still unused
(see ``_CPU`` below), so rules 1-3 are recorded as skipped with their measured numbers. ``--full`` adds the same
construction on real MNIST (data folder; skipped when absent): rule 1 without the margin.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

import numpy as np

from iclr24.paperkit import ClaimSet, Paper, RunConfig, atomic_write_json

from .experiment import ExperimentConfig, run_seed
from .paper_scale import PAPER_SCALE, paper_scale

__all__ = ["PAPER", "PAPER_SCALE", "SMOKE", "QUICK", "FULL", "ReproConfig", "paper_scale", "run"]

NAME = "cmvae"


@dataclass(frozen=True)
class ReproConfig:
    """What one mode runs. ``acc_margin``: claim 1 asks ours >= baseline + acc_margin (fixed before running).
    ``n_test`` test tuples are scored; ``experiment.n_val`` more, drawn from the same test pool, select K*."""

    experiment: ExperimentConfig = field(default_factory=ExperimentConfig)
    seeds: tuple[int, ...] = (0, 1, 2)
    n_train: int = 6000
    n_test: int = 1000
    n_modalities: int = 3
    acc_margin: float = 3.0
    mnist: bool = True
    mnist_train: int = 6000
    mnist_test: int = 1000
    mnist_epochs: int = 20
    gate_clustering: bool = True  # False: rules 1-3 are recorded as skipped, with their numbers


SMOKE = ReproConfig(
    ExperimentConfig(hidden=(16,), epochs=1, n_clusters_max=12, n_generated=64, refiner_iterations=5,
                     refiner_steps=10, refiner_hidden=16, n_val=60),
    seeds=(0,), n_train=300, n_test=100, acc_margin=0.0, mnist=False,
)  # fmt: skip
# The CPU-scale model of --quick and --full (calibrated on seed 100 only, before any evaluated run; README,
# "Differences from the official code"): MLPs 128 wide, a normal likelihood with sd 0.1, 3,000 train tuples. Trained
# for fewer than ~700 Adam steps both CMVAE and MMVAE+ stay on the plateau where the shared latent is unused;
# 40 epochs (960 steps) leave it. --quick (about a minute) cannot afford them: it trains 15 epochs and records its
# clustering and coherence numbers as skipped records (ungated); --full gates them. Why CMVAE still trails
# MMVAE+ + KMeans at 960 steps (its mixture prior has not aligned with the classes; knobs moved to the official values
# one at a time on seeds 100-101 do not close the gap within the --full budget): README, "Why the clustering effect
# does not show at CPU scale" (scripts/gap_runs.py).
_CPU = ExperimentConfig(
    hidden=(128, 128), likelihood="normal", likelihood_scale=0.1, refiner_iterations=1000, refiner_hidden=128
)
QUICK = ReproConfig(
    dataclasses.replace(_CPU, epochs=15),
    seeds=(0,), n_train=3000, n_test=1000, acc_margin=0.0, mnist=False, gate_clustering=False,
)  # fmt: skip
# --full: 3 seeds of the same model for 40 epochs, plus real MNIST on 2,000 tuples x 10 epochs (too few steps to
# leave the plateau at 784 pixels; there to run the real data through the public API), about 10 idle minutes.
FULL = ReproConfig(
    dataclasses.replace(_CPU, epochs=40),
    n_train=3000, mnist_train=2000, mnist_epochs=10,
)  # fmt: skip

# Which gates each mode carries (the README lists those gated only in --full).
GATES = {
    "quick": ["diffusion FD below the noise-matched baseline"],
    "full": ["ACC >= best baseline + 3 (paired over 3 seeds)", "K* in [8, 12] (official rule, every seed)",
             "coherence (paired over 3 seeds)", "diffusion FD below the noise-matched baseline",
             "MNIST ACC direction"],
}  # fmt: skip


def _pct(d: dict) -> dict:
    return {k: round(100 * v, 2) for k, v in d.items()}


def _public(r: dict) -> dict:
    return {k: v for k, v in r.items() if not k.startswith("_")}


def run(cfg: RunConfig) -> ClaimSet:
    c = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)
    _facts(claims)
    with claims.timed(f"poly_digits: CMVAE vs MMVAE+ (+KMeans/GMM), {len(c.seeds)} seed(s)"):
        results = _train_seeds(c, cfg)
        _acc_claim(claims, c, cfg, results)
        _k_star_claim(claims, c, results)
        _coherence_claim(claims, c, results)
        _refinement_claim(claims, c, results[0])
        first = results[0]
        claims.fact(
            "training seconds per model (CMVAE, MMVAE+), first seed",
            value=f"{first['cmvae_train_seconds']:.1f}, {first['mmvae_train_seconds']:.1f}",
            description=f"{c.experiment.epochs} epochs of {c.n_train} tuples, batch {c.experiment.batch_size}, "
            "one thread",
            timing=True,
        )
    if c.mnist:
        _mnist_claim(claims, cfg, c)
    else:
        claims.skip("real MNIST (poly_mnist): CMVAE ACC vs MMVAE+ + KMeans/GMM", "runs in --full")
    return claims


def _facts(claims: ClaimSet) -> None:
    claims.fact(
        "q(c|z) at z = (0.5, 0), mu = (+-1, 0), sigma = 1, pi = (1/2, 1/2)",
        value="(0.2689414, 0.7310586)",
        description="closed form softmax(-1.5, -0.5); tests pin it, with the normalised entropy 0.8399415",
    )
    claims.fact(
        "MMVAE+ is CMVAE with one cluster at mu = 0",
        value=True,
        description="equal losses to 1e-9 (float64) in the tests, K = 1 and K = 3",
    )


def _train_seeds(c: ReproConfig, cfg: RunConfig) -> list[dict]:
    """CMVAE and MMVAE+ (and the refiner on the first seed) on ``poly_digits`` for every seed of the mode."""
    from .data import poly_digits

    e = c.experiment
    results = []
    for s in c.seeds:  # threads: pinned by paperkit (Paper.threads)
        data = poly_digits(c.n_train, c.n_test + e.n_val, c.n_modalities, seed=s)
        results.append(run_seed(e, data, s, show_progress=cfg.progress, refine=e.refine and s == c.seeds[0]))
    atomic_write_json(
        cfg.out / "poly_digits.json",
        {"config": dataclasses.asdict(c), "seeds": [_public(r) for r in results]},
    )
    return results


def _acc_claim(claims: ClaimSet, c: ReproConfig, cfg: RunConfig, results: list[dict]) -> None:
    """Rule 1: CMVAE's ACC against the better (by mean) of MMVAE+ + KMeans / GMM, paired over seeds."""
    from .plots import plot_clustering

    e = c.experiment
    table = {
        "CMVAE (K*)": _mean(results, "cmvae"),
        f"CMVAE (K={e.n_clusters_max})": _mean(results, "cmvae_at_kmax"),
        "MMVAE+ + KMeans": _mean(results, "mmvae_kmeans"),
        "MMVAE+ + GMM": _mean(results, "mmvae_gmm"),
        "KMeans (pixels)": _mean(results, "raw_kmeans"),
    }
    art_table = claims.figure(
        plot_clustering(table, f"poly_digits test tuples, mean of {len(c.seeds)} seed(s)"),
        "clustering.png",
    )
    art_json = claims.artifact(cfg.out / "poly_digits.json")
    best_name = max(("MMVAE+ + KMeans", "MMVAE+ + GMM"), key=lambda k: table[k]["acc"])
    best_key = "mmvae_kmeans" if best_name == "MMVAE+ + KMeans" else "mmvae_gmm"
    _compare(
        claims,
        c.gate_clustering,
        claim="CMVAE clusters the test tuples better than MMVAE+ followed by KMeans / GMM on its shared latent",
        metric=f"ACC (%, Hungarian) on {c.n_test} test tuples after selecting K*, {len(c.seeds)} seed(s)",
        ours=[100 * r["cmvae"]["acc"] for r in results],
        baseline_name=f"MMVAE+ + {best_name.split('+ ')[-1]} (the better of KMeans, GMM by mean)",
        baseline=[100 * r[best_key]["acc"] for r in results],
        seeds=list(c.seeds),
        margin=-c.acc_margin,
        details={
            "table_percent": {k: _pct(v) for k, v in table.items()},
            "per_seed_acc": {r["seed"]: round(100 * r["cmvae"]["acc"], 2) for r in results},
            "k_star": [r["selection"]["k_star"] for r in results],
            "epochs": e.epochs,
            "hidden": list(e.hidden),
        },
        artifacts=[art_table, art_json],
    )


def _k_star_claim(claims: ClaimSet, c: ReproConfig, results: list[dict]) -> None:
    """Rule 2: K* (the official selection rule, on the validation tuples) lies in [8, 12] on every seed."""
    from .plots import plot_selection

    curves = [r["selection"]["h"] for r in results]
    art_sel = claims.figure(plot_selection(curves, 10), "cluster_selection.png")
    ks = [r["selection"]["k_star"] for r in results]
    _add(
        claims,
        c.gate_clustering,
        claim="post-hoc selection recovers about the true number of clusters (10 digits) from K_max",
        metric=f"K* = argmin h(K) ({c.experiment.selection_rule} rule, {c.experiment.n_val} validation tuples), "
        f"K_max = {c.experiment.n_clusters_max}, worst seed (distance to [8, 12])",
        ours=float(max(ks, key=lambda k: (abs(k - 10), k))),
        baseline_name="true number of classes",
        baseline=10.0,
        rule="ours >= 8 and ours <= 12",
        details={
            "k_star_per_seed": ks,
            "rule": c.experiment.selection_rule,
            "timings": {"selection_seconds": [round(r["selection"]["seconds"], 2) for r in results]},
        },
        artifacts=[art_sel],
    )


def _coherence_claim(claims: ClaimSet, c: ReproConfig, results: list[dict]) -> None:
    """Rule 3: CMVAE's unconditional coherence > MMVAE+'s, paired over seeds."""
    from .plots import plot_coherence

    coh_c = [r["coherence_cmvae"]["unconditional"] for r in results]
    coh_m = [r["coherence_mmvae"]["unconditional"] for r in results]
    art_coh = claims.figure(
        plot_coherence({"CMVAE": float(np.mean(coh_c)), "MMVAE+": float(np.mean(coh_m))}), "coherence.png"
    )
    _compare(
        claims,
        c.gate_clustering,
        claim="CMVAE's unconditional generations are more coherent than MMVAE+'s",
        metric=f"unconditional coherence of {c.experiment.n_generated} prior samples (logistic-regression digit "
        f"classifiers), {len(c.seeds)} seed(s)",
        ours=coh_c,
        baseline_name="MMVAE+",
        baseline=coh_m,
        seeds=list(c.seeds),
        margin=0.0,
        details={
            "conditional_cmvae": [round(r["coherence_cmvae"]["conditional"], 4) for r in results],
            "conditional_mmvae": [round(r["coherence_mmvae"]["conditional"], 4) for r in results],
            "conditional_w_from": "the fixed p(w) = Laplace(0, 1) (official test-time cross-generation)",
            "classifier_test_accuracy": results[0]["classifier_test_accuracy"],
        },
        artifacts=[art_coh],
    )


def _refinement_claim(claims: ClaimSet, c: ReproConfig, first: dict) -> None:
    """Rule 4: the refined samples are closer to the real images than the noise-matched baseline (first seed)."""
    from .plots import plot_samples_per_cluster

    if "fd_pixels_refined" not in first:
        return
    e = c.experiment
    arts = []
    if "_cmvae" in first and hasattr(first.get("_refiner"), "eps"):
        arts.append(
            claims.figure(
                plot_samples_per_cluster(first["_cmvae"], 8, refiner=first["_refiner"], seed=0),
                "samples_per_cluster.png",
            )
        )
    claims.add(
        claim="the diffusion refinement brings CMVAE's prior samples closer to the real images than adding "
        "noise of the reconstruction residuals' variance does",
        metric=f"pixel Frechet distance of {e.n_generated} prior samples to the test images, mean over "
        f"modalities (seed {c.seeds[0]})",
        ours=first["fd_pixels_refined"],
        baseline_name="decoder means + i.i.d. Gaussian noise (per-pixel variance of the reconstruction residuals)",
        baseline=first["fd_pixels_noise_matched"],
        rule="ours < baseline",
        details={
            "fd_pixels_unrefined_decoder_means": round(first["fd_pixels_unrefined"], 4),
            "fd_classifier_probabilities": {
                "refined": round(first["fd_probs_refined"], 4),
                "noise_matched": round(first["fd_probs_noise_matched"], 4),
                "unrefined": round(first["fd_probs_unrefined"], 4),
            },
            "residual_sd_mean": round(first["residual_sd_mean"], 4),
            "ddpm_steps": e.refiner_steps,
            "timings": {
                "refiner_train_seconds": round(first["refiner_train_seconds"], 1),
                "refine_ms_per_sample": round(1000 * first["refine_seconds_per_sample"], 3),
            },
        },
        artifacts=arts,
    )


def _skip_message(kw: dict) -> str:
    ours, base = np.mean(kw["ours"]), np.mean(kw["baseline"])
    return (
        f"gated only in --full (--quick trains too few steps for the shared latent to be used); measured here: "
        f"{kw['metric']}: ours {ours:.4g}, {kw['baseline_name']} {base:.4g}"
    )


def _add(claims: ClaimSet, gate: bool, **kw) -> None:
    """A gated claim, or (``gate=False``: --quick, too few steps to leave the plateau) a skipped record that keeps
    the measured numbers in its message."""
    if gate:
        claims.add(**kw)
        return
    claims.skip(kw["claim"], _skip_message(kw))


def _compare(claims: ClaimSet, gate: bool, **kw) -> None:
    """A method comparison over seeds: a paired verdict (95 % t-interval of the per-seed slack; one seed is
    inconclusive), or a skipped record with the measured means when not gated."""
    if gate:
        claims.paired(better="higher", **kw)
        return
    claims.skip(kw["claim"], _skip_message(kw))


def _mean(results: list[dict], key: str) -> dict:
    return {m: float(np.mean([r[key][m] for r in results])) for m in ("acc", "nmi", "ari")}


def _mnist_claim(claims: ClaimSet, cfg: RunConfig, c: ReproConfig) -> None:
    text = "real MNIST (poly_mnist): CMVAE clusters better than MMVAE+ + KMeans / GMM"
    with claims.timed(text):
        from .data import poly_mnist

        e = dataclasses.replace(c.experiment, epochs=c.mnist_epochs, refine=False)
        data = poly_mnist(
            cfg.data_dir, c.mnist_train, c.mnist_test + e.n_val, c.n_modalities, seed=c.seeds[0]
        )
        r = run_seed(e, data, c.seeds[0], show_progress=cfg.progress, refine=False)
        best = max(("mmvae_kmeans", "mmvae_gmm"), key=lambda k: r[k]["acc"])
        claims.add(
            claim=text,
            metric=f"ACC (%) on {c.mnist_test} test tuples of 28x28 MNIST digits, seed {c.seeds[0]}",
            ours=100 * r["cmvae"]["acc"],
            baseline_name="MMVAE+ + " + ("KMeans" if best == "mmvae_kmeans" else "GMM"),
            baseline=100 * r[best]["acc"],
            rule="ours > baseline",
            details={
                k: _pct(r[k]) for k in ("cmvae", "cmvae_at_kmax", "mmvae_kmeans", "mmvae_gmm", "raw_kmeans")
            }
            | {"k_star": r["selection"]["k_star"], "epochs": c.mnist_epochs},
        )


PAPER = Paper(
    name=NAME,
    title="Deep Generative Clustering with Multimodal Diffusion Variational Autoencoders",
    summary="a clustered prior on MMVAE+'s shared latent clusters multimodal data, picks K post hoc, "
    "and a DDPM refines its samples",
    run=run,
    budgets={"full": 1800},  # 30 CPU minutes: this paper's effects need more training than ten give
    data=("mnist",),
    threads=1,
    paper_scale=paper_scale,
)
