"""One seed of the CPU-scale experiment: CMVAE against MMVAE+ (+ KMeans / GMM on its shared latent) and KMeans on
raw pixels, on the same data, budget and seed; cluster selection (the official rule, on a validation split held out
of the test tuples, as the official ``prune_polyMNIST.py`` does), clustering scores on the rest of the test tuples,
coherence, and (optionally) the diffusion refinement against a noise-matched baseline. ``reproduce.py`` and
``cmvae reproduce`` call this."""

from __future__ import annotations

import time
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import torch

from iclr24.paperkit.errors import InputError

from .data import MultimodalData
from .diffusion import DiffusionRefiner
from .metrics import clustering_scores
from .metrics import conditional_coherence
from .metrics import unconditional_coherence
from .model import CMVAE
from .model import build_mlp_model
from .train import fit

__all__ = [
    "ExperimentConfig",
    "run_seed",
    "train_classifiers",
    "refinement_distances",
    "hold_out_validation",
    "noise_matched_samples",
]


def hold_out_validation(data: MultimodalData, n_val: int) -> tuple[MultimodalData, list[torch.Tensor]]:
    """Split the first ``n_val`` test tuples off as the validation tuples of the cluster selection (the official
    code splits PolyMNIST's test set into validation and test indices); returns (data with the remaining test
    tuples, the validation tensors)."""
    n = len(data.test_labels)
    if isinstance(n_val, bool) or not isinstance(n_val, int) or not 1 <= n_val < n:
        raise InputError(f"n_val must be an integer in [1, {n}) (the test tuples), got {n_val!r}")
    val = [torch.from_numpy(np.ascontiguousarray(x[:n_val])) for x in data.test]
    rest = MultimodalData(
        data.train, data.train_labels, [x[n_val:] for x in data.test], data.test_labels[n_val:],
        side=data.side, channels=data.channels, name=data.name,
    )  # fmt: skip
    return rest, val


def noise_matched_samples(
    means: list[torch.Tensor], residual_var: list[np.ndarray], seed: int
) -> list[torch.Tensor]:
    """The noise-matched baseline of the refinement: decoder means plus i.i.d. Gaussian noise whose per-pixel
    variance is that of the reconstruction residuals (x - posterior-mean reconstruction) on the train tuples,
    clipped to [0, 1] as the refiner's output is."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for mu, var in zip(means, residual_var, strict=True):
        sd = torch.as_tensor(np.sqrt(var), dtype=mu.dtype)
        out.append((mu + sd * torch.randn(mu.shape, generator=g, dtype=mu.dtype)).clamp(0, 1))
    return out


@dataclass(frozen=True)
class ExperimentConfig:
    """Model, training and evaluation sizes (defaults: the CPU-scale reproduction of Sec. 4 on poly_digits)."""

    latent_dim: int = 10
    modality_latent_dim: int = 4
    hidden: tuple[int, ...] = (256, 256)
    n_clusters_max: int = 20
    n_classes: int = 10
    beta: float = 1.0  # MultiVae's PolyMNIST example: 2.5 (see the README's differences)
    likelihood: str = "laplace"  # MultiVae's PolyMNIST example: laplace
    likelihood_scale: float = 0.1  # MultiVae's PolyMNIST example: 0.75 on 3x28x28 images
    K: int = 1
    estimator: str = "iwae_looser"
    epochs: int = 40
    batch_size: int = 128
    lr: float = 3e-3  # MultiVae: 1e-3 for 250 epochs
    prior_lr: float = 1e-2  # cluster logits and means
    n_generated: int = 1000
    n_val: int = 500  # validation tuples for the cluster selection, held out of the test tuples
    selection_rule: str = "official"  # CMVAE.select_num_clusters(rule=...)
    refine: bool = True
    refiner_steps: int = 200
    refiner_hidden: int = 256
    refiner_iterations: int = 3000
    extra: dict = field(default_factory=dict)


def _model(cfg: ExperimentConfig, data: MultimodalData, clustered: bool, seed: int) -> CMVAE:
    torch.manual_seed(seed)
    return build_mlp_model(
        data.input_dims,
        latent_dim=cfg.latent_dim,
        modality_latent_dim=cfg.modality_latent_dim,
        hidden=cfg.hidden,
        n_clusters_max=cfg.n_clusters_max,
        clustered=clustered,
        beta=cfg.beta,
        likelihood=cfg.likelihood,
        likelihood_scale=cfg.likelihood_scale,
        K=cfg.K,
        estimator=cfg.estimator,
    )


def train_classifiers(data: MultimodalData, seed: int = 0) -> list:
    """One logistic-regression digit classifier per modality, trained on the composited train images."""
    from sklearn.linear_model import LogisticRegression

    return [
        LogisticRegression(max_iter=300, C=1.0, random_state=seed).fit(x, data.train_labels)
        for x in data.train
    ]


def _coherences(model: CMVAE, clfs: list, data: MultimodalData, n: int, seed: int) -> dict:
    gen = model.sample(n, seed=seed)
    uncond = unconditional_coherence([clf.predict(g.numpy()) for clf, g in zip(clfs, gen, strict=True)])
    xt = data.tensors("test")
    cond = []
    for m in range(data.n_modalities):
        outs = model.cross_generate(xt[m], m, seed=seed + m)
        preds = [clfs[n].predict(outs[n].numpy()) for n in range(data.n_modalities) if n != m]
        cond.append(conditional_coherence(preds, data.test_labels))
    return {"unconditional": uncond, "conditional": float(np.mean(cond)), "conditional_per_source": cond}


def run_seed(
    cfg: ExperimentConfig,
    data: MultimodalData,
    seed: int,
    *,
    show_progress: bool = False,
    refine: bool | None = None,
) -> dict:
    """Train CMVAE and MMVAE+ on ``data`` with ``seed``; returns scores, the selection curve and timings (and the
    trained models under ``_cmvae``/``_mmvae`` and the refiner under ``_refiner``, for plots)."""
    from sklearn.cluster import KMeans
    from sklearn.mixture import GaussianMixture

    data, xv = hold_out_validation(data, cfg.n_val)
    xs, xt, y = data.tensors("train"), data.tensors("test"), data.test_labels
    out: dict = {"seed": seed, "n_val": cfg.n_val, "n_test": len(y)}
    t0 = time.perf_counter()
    cm = _model(cfg, data, True, seed)
    out["cmvae_loss"] = fit(cm, xs, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, prior_lr=cfg.prior_lr, seed=seed,
                            show_progress=show_progress)[-1]  # fmt: skip
    out["cmvae_train_seconds"] = time.perf_counter() - t0
    out["cmvae_at_kmax"] = clustering_scores(y, cm.predict_clusters(xt, seed=seed).clusters)
    # diagnostics (not the paper's rule): q(c|z) at the posterior means, and KMeans(10) on CMVAE's own latent
    out["cmvae_at_kmax_means"] = clustering_scores(y, cm.predict_clusters(xt, at_means=True).clusters)
    e_cm = cm.encode(xt).numpy()
    out["cmvae_latent_kmeans"] = clustering_scores(
        y, KMeans(cfg.n_classes, n_init=10, random_state=seed).fit(e_cm).predict(e_cm)
    )
    sel = cm.select_num_clusters(xv, apply=True, seed=seed, rule=cfg.selection_rule)
    out["selection"] = {
        "h": [v if v != float("inf") else None for v in sel.h],
        "k_star": sel.k_star,
        "removed": sel.removed,
        "rule": sel.rule,
        "seconds": sel.seconds,
    }
    out["cmvae"] = clustering_scores(y, cm.predict_clusters(xt, seed=seed).clusters)
    out["cmvae_means"] = clustering_scores(y, cm.predict_clusters(xt, at_means=True).clusters)

    t0 = time.perf_counter()
    mm = _model(cfg, data, False, seed)
    out["mmvae_loss"] = fit(mm, xs, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, prior_lr=cfg.prior_lr, seed=seed,
                            show_progress=show_progress)[-1]  # fmt: skip
    out["mmvae_train_seconds"] = time.perf_counter() - t0
    e_tr, e_te = mm.encode(xs).numpy(), mm.encode(xt).numpy()
    k = cfg.n_classes
    out["mmvae_kmeans"] = clustering_scores(
        y, KMeans(k, n_init=10, random_state=seed).fit(e_tr).predict(e_te)
    )
    out["mmvae_gmm"] = clustering_scores(y, GaussianMixture(k, random_state=seed).fit(e_tr).predict(e_te))
    raw_tr, raw_te = np.concatenate(data.train, 1), np.concatenate(data.test, 1)
    out["raw_kmeans"] = clustering_scores(
        y, KMeans(k, n_init=10, random_state=seed).fit(raw_tr).predict(raw_te)
    )

    clfs = train_classifiers(data, seed)
    out["classifier_test_accuracy"] = [float(c.score(x, y)) for c, x in zip(clfs, data.test, strict=True)]
    out["coherence_cmvae"] = _coherences(cm, clfs, data, cfg.n_generated, seed)
    out["coherence_mmvae"] = _coherences(mm, clfs, data, cfg.n_generated, seed)
    out["_cmvae"], out["_mmvae"] = cm, mm
    if cfg.refine if refine is None else refine:
        out.update(refinement_distances(cfg, cm, data, clfs, seed, show_progress=show_progress))
    return out


def refinement_distances(
    cfg: ExperimentConfig,
    model: CMVAE,
    data: MultimodalData,
    clfs: list,
    seed: int,
    *,
    show_progress: bool = False,
    refiner=None,
) -> dict:
    """Train the DDPM refiner on (CMVAE reconstruction, image) pairs of the train tuples (or use ``refiner``, any
    object with ``refine(means, modality, seed=...)``); compare the Frechet distance to the test images of n prior
    samples refined, unrefined (the decoder means) and noise-matched (:func:`noise_matched_samples`), in pixels and
    in the classifiers' probability space, averaged over modalities."""
    from iclr24.paperkit.metrics import frechet_distance

    xs = data.tensors("train")
    recons = model.reconstruct(xs)
    residual_var = [np.var((x - r).numpy(), axis=0) for x, r in zip(xs, recons, strict=True)]
    train_s = 0.0
    if refiner is None:
        refiner = DiffusionRefiner(
            xs[0].shape[1], data.n_modalities, steps=cfg.refiner_steps, hidden=cfg.refiner_hidden
        )
        t0 = time.perf_counter()
        refiner.fit(xs, recons, iterations=cfg.refiner_iterations, seed=seed, show_progress=show_progress)
        train_s = time.perf_counter() - t0
    gen = model.sample(cfg.n_generated, seed=seed + 1)
    t0 = time.perf_counter()
    refined = [refiner.refine(g, m, seed=seed + m) for m, g in enumerate(gen)]
    refine_s = time.perf_counter() - t0
    noisy = noise_matched_samples(gen, residual_var, seed + 7)
    fd: dict[str, list[float]] = {
        k: [] for k in ("pix_raw", "pix_ref", "pix_noise", "p_raw", "p_ref", "p_noise")
    }
    for m in range(data.n_modalities):
        real = data.test[m]
        pr = clfs[m].predict_proba(real)
        for tag, imgs in (("raw", gen[m]), ("ref", refined[m]), ("noise", noisy[m])):
            arr = imgs.numpy()
            fd[f"pix_{tag}"].append(frechet_distance(arr, real))
            fd[f"p_{tag}"].append(frechet_distance(clfs[m].predict_proba(arr), pr))
    return {
        "fd_pixels_unrefined": float(np.mean(fd["pix_raw"])),
        "fd_pixels_refined": float(np.mean(fd["pix_ref"])),
        "fd_pixels_noise_matched": float(np.mean(fd["pix_noise"])),
        "fd_probs_unrefined": float(np.mean(fd["p_raw"])),
        "fd_probs_refined": float(np.mean(fd["p_ref"])),
        "fd_probs_noise_matched": float(np.mean(fd["p_noise"])),
        "residual_sd_mean": float(np.mean([np.sqrt(v).mean() for v in residual_var])),
        "refiner_train_seconds": train_s,
        "refine_seconds_per_sample": refine_s / (cfg.n_generated * data.n_modalities),
        "_refiner": refiner,
    }
