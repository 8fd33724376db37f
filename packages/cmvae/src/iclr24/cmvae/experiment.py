"""One seed of the CPU-scale experiment: CMVAE against MMVAE+ (+ KMeans / GMM on its shared latent) and KMeans on
raw pixels, on the same data, budget and seed; cluster selection, clustering scores, coherence, and (optionally)
the diffusion refinement. ``reproduce.py`` and ``cmvae reproduce`` call this."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
import torch

from .data import MultimodalData
from .diffusion import DiffusionRefiner
from .metrics import clustering_scores, conditional_coherence, unconditional_coherence
from .model import CMVAE, build_mlp_model
from .train import fit

__all__ = ["ExperimentConfig", "run_seed", "train_classifiers", "refinement_distances"]


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

    xs, xt, y = data.tensors("train"), data.tensors("test"), data.test_labels
    out: dict = {"seed": seed}
    t0 = time.perf_counter()
    cm = _model(cfg, data, True, seed)
    out["cmvae_loss"] = fit(cm, xs, epochs=cfg.epochs, batch_size=cfg.batch_size, lr=cfg.lr, prior_lr=cfg.prior_lr, seed=seed,
                            show_progress=show_progress)[-1]  # fmt: skip
    out["cmvae_train_seconds"] = time.perf_counter() - t0
    out["cmvae_at_kmax"] = clustering_scores(y, cm.predict_clusters(xt, seed=seed).clusters)
    sel = cm.select_num_clusters(xs, apply=True, seed=seed)
    out["selection"] = {
        "h": [v if v != float("inf") else None for v in sel.h],
        "k_star": sel.k_star,
        "removed": sel.removed,
        "seconds": sel.seconds,
    }
    out["cmvae"] = clustering_scores(y, cm.predict_clusters(xt, seed=seed).clusters)

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
) -> dict:
    """Train the DDPM refiner on (CMVAE reconstruction, image) pairs of the train tuples; compare the Frechet
    distance to the test images of n prior samples before and after refinement (pixels, and the classifiers'
    probability space), averaged over modalities."""
    from iclr24.paperkit.metrics import frechet_distance

    xs = data.tensors("train")
    recons = model.reconstruct(xs)
    ref = DiffusionRefiner(
        xs[0].shape[1], data.n_modalities, steps=cfg.refiner_steps, hidden=cfg.refiner_hidden
    )
    t0 = time.perf_counter()
    ref.fit(xs, recons, iterations=cfg.refiner_iterations, seed=seed, show_progress=show_progress)
    train_s = time.perf_counter() - t0
    gen = model.sample(cfg.n_generated, seed=seed + 1)
    t0 = time.perf_counter()
    refined = [ref.refine(g, m, seed=seed + m) for m, g in enumerate(gen)]
    refine_s = time.perf_counter() - t0
    fd_pix_raw, fd_pix_ref, fd_p_raw, fd_p_ref = [], [], [], []
    for m in range(data.n_modalities):
        real = data.test[m]
        fd_pix_raw.append(frechet_distance(gen[m].numpy(), real))
        fd_pix_ref.append(frechet_distance(refined[m].numpy(), real))
        pr = clfs[m].predict_proba(real)
        fd_p_raw.append(frechet_distance(clfs[m].predict_proba(gen[m].numpy()), pr))
        fd_p_ref.append(frechet_distance(clfs[m].predict_proba(refined[m].numpy()), pr))
    return {
        "fd_pixels_unrefined": float(np.mean(fd_pix_raw)),
        "fd_pixels_refined": float(np.mean(fd_pix_ref)),
        "fd_probs_unrefined": float(np.mean(fd_p_raw)),
        "fd_probs_refined": float(np.mean(fd_p_ref)),
        "refiner_train_seconds": train_s,
        "refine_seconds_per_sample": refine_s / (cfg.n_generated * data.n_modalities),
        "_refiner": ref,
    }
