"""CMVAE: MMVAE+ with a learnable clustering prior on the shared latent (Palumbo et al., ICLR 2024, Sec. 3).

Notation (the paper's symbols; shapes in brackets):
    M             number of modalities; x_m the m-th modality [B, *shape_m]
    z             shared latent [K, B, d]            (``u`` in MultiVae)
    w_m           modality-specific latent [K, B, d_w]
    c             cluster 1..C with p(c) = Cat(pi), pi = softmax(l), l learnable (init 0)
    p(z|c)        Laplace(mu_c, 1): mu_c learnable (init U(-1, 1)^d), scale fixed
    p(w_m)        Laplace(0, 1), fixed; r_m(w) = Laplace(0, sigma_m) the auxiliary priors (sigma_m learnable)
                  (``latent="normal"``: every latent density above is Normal, scales softplus(raw) + 1e-6, as in
                  the official CUBICC configuration; the priors' raw scales start at 0, i.e. sigma = log 2)
    q(z|x_m), q(w_m|x_m)  unimodal Laplace posteriors from encoder m; q(z|X) their mixture of experts
    q(c|z)        the closed-form cluster posterior p(c|z)
    lambda_m      likelihood rescaling of modality m (default 1); beta weights the regulariser
    K             importance samples per modality (the IWAE/DReG estimators)

Encoders are any ``nn.Module`` mapping ``x_m [B, *shape_m]`` to ``(z_loc, z_raw_scale, w_loc, w_raw_scale)`` with
shapes ``[B, d], [B, d], [B, d_w], [B, d_w]``; decoders map ``[N, d + d_w]`` to the mean (or logits, for
``bernoulli``) of ``x_m`` with shape ``[N, *shape_m]``. ``MLPEncoder``/``MLPDecoder`` (:mod:`.nets`) are the CPU-scale ones; :mod:`.checkpoint` saves and loads a
model of :func:`build_mlp_model`.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

from .distributions import LATENTS
from .distributions import Q_EPS
from .distributions import SCALE_EPS
from .distributions import cluster_log_joint
from .distributions import cluster_marginal_log_likelihood
from .distributions import laplace_log_prob
from .distributions import latent_log_prob
from .distributions import latent_scale
from .distributions import log_mean_exp
from .distributions import log_moe_density
from .distributions import normalised_entropy
from .distributions import official_selection_terms
from .nets import MAX_WIDTH
from .nets import MLPDecoder
from .nets import MLPEncoder

__all__ = [
    "LIKELIHOODS",
    "ESTIMATORS",
    "LATENTS",
    "SELECTION_RULES",
    "CMVAE",
    "MMVAEPlus",
    "ClusterPrediction",
    "ClusterSelection",
    "build_mlp_model",
    "majority_vote",
]

LIKELIHOODS = ("laplace", "normal", "bernoulli")
ESTIMATORS = ("iwae_looser", "dreg_looser", "dreg_detached")
SELECTION_RULES = ("official", "active", "multivae")


def majority_vote(votes: torch.Tensor, n_clusters: int, valid: torch.Tensor | None = None) -> torch.Tensor:
    """The cluster most modalities vote for, per row of ``votes`` [N, M]; a tie goes to the smallest cluster index.
    ``valid`` [N, M] marks the votes that count (missing modalities do not vote)."""
    check_int(n_clusters, "n_clusters", minimum=1, maximum=2**20)
    check_tensor(votes, "votes", ndim=2, kind="int", allow_empty=True)
    if votes.numel() and (int(votes.min()) < 0 or int(votes.max()) >= n_clusters):
        raise InputError(f"votes must be cluster indices in [0, {n_clusters}), got values outside")
    if valid is not None:
        check_tensor(valid, "valid", shape=tuple(votes.shape), kind="any", allow_empty=True)
    one_hot = F.one_hot(votes.long(), n_clusters)
    if valid is not None:
        one_hot = one_hot * valid.unsqueeze(-1).long()
    counts = one_hot.sum(1)  # [N, C]
    return counts.argmax(-1)  # argmax returns the first (smallest) index among the maxima


@dataclass
class ClusterPrediction:
    """``clusters`` [N] (majority vote), ``per_modality`` [N, M] (argmax q(c|z_m)), ``q_c`` [N, M, C]."""

    clusters: np.ndarray
    per_modality: np.ndarray
    q_c: np.ndarray


@dataclass
class ClusterSelection:
    """The post-hoc choice of the number of clusters: ``h[k]`` the score with k active clusters (inf where not
    evaluated, always at 0 and 1), ``k_star = argmin h``, ``active`` the cluster mask at ``k_star``, ``removed`` the
    clusters in the order they were deactivated, ``seconds`` the time it took (a timing), ``rule`` the rule used."""

    h: list[float]
    k_star: int
    active: np.ndarray
    removed: list[int] = field(default_factory=list)
    seconds: float = 0.0
    rule: str = "official"


def _finite_pos(name: str, v: float) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v <= 0:
        raise InputError(f"{name} must be a positive finite number, got {v!r}")
    return float(v)


class CMVAE(PretrainedMixin, nn.Module):
    """The clustering multimodal VAE. ``CMVAE(encoders, decoders, n_clusters_max=..., latent_dim=...,
    modality_latent_dim=..., likelihood="laplace", beta=...)``; train with :func:`iclr24.cmvae.fit` or any loop
    over ``model.loss(xs)``.

    A model made by :func:`build_mlp_model` saves and loads as a model folder: ``model.save_pretrained(dir)``,
    ``CMVAE.from_pretrained(dir)`` (``config.json`` holds its build spec; the weights include the active-cluster
    mask a cluster selection left).

    ``xs`` everywhere is a list of M tensors (one per modality, same batch size), ``None`` for a modality missing
    from the whole batch; ``mask`` [B, M] (bool, True = present) marks modalities missing in some rows."""

    _min_clusters = 2

    def __init__(
        self,
        encoders: Sequence[nn.Module],
        decoders: Sequence[nn.Module],
        *,
        n_clusters_max: int = 10,
        latent_dim: int,
        modality_latent_dim: int,
        likelihood: str = "laplace",
        likelihood_scale: float = 0.75,
        beta: float = 1.0,
        K: int = 1,
        estimator: str = "iwae_looser",
        rescale_factors: Sequence[float] | None = None,
        learn_modality_prior: bool = True,
        generation_prior: str = "joint_prior",
        latent: str = "laplace",
        scale_eps: float = SCALE_EPS,
    ) -> None:
        super().__init__()
        encoders, decoders = list(encoders), list(decoders)
        if not encoders:
            raise InputError("CMVAE needs at least one modality: got no encoders")
        if len(encoders) != len(decoders):
            raise InputError(
                f"one encoder and one decoder per modality expected, got {len(encoders)} encoders and "
                f"{len(decoders)} decoders"
            )
        for i, mod in enumerate([*encoders, *decoders]):
            if not isinstance(mod, nn.Module):
                raise InputError(
                    f"encoders and decoders must be torch.nn.Module, got {type(mod).__name__} at {i}"
                )
        for name, v in (("latent_dim", latent_dim), ("modality_latent_dim", modality_latent_dim), ("K", K)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be a positive integer, got {v!r}")
        if (
            isinstance(n_clusters_max, bool)
            or not isinstance(n_clusters_max, int)
            or n_clusters_max < self._min_clusters
        ):
            raise InputError(
                f"n_clusters_max must be an integer >= {self._min_clusters}, got {n_clusters_max!r}"
            )
        check_choice(likelihood, "likelihood", LIKELIHOODS)
        check_choice(estimator, "estimator", ESTIMATORS)
        check_choice(latent, "latent", LATENTS)
        if generation_prior not in ("joint_prior", "single_prior"):
            raise InputError(
                f"generation_prior must be 'joint_prior' or 'single_prior', got {generation_prior!r}"
            )
        for m, enc in enumerate(encoders):
            for attr, want in (("latent_dim", latent_dim), ("modality_latent_dim", modality_latent_dim)):
                got = getattr(enc, attr, want)
                if got != want:
                    raise InputError(f"encoder {m} has {attr}={got}, but the model has {attr}={want}")
        for m, dec in enumerate(decoders):
            got = getattr(dec, "in_dim", latent_dim + modality_latent_dim)
            if got != latent_dim + modality_latent_dim:
                raise InputError(
                    f"decoder {m} takes {got} inputs, but z and w_m have {latent_dim} + {modality_latent_dim} = "
                    f"{latent_dim + modality_latent_dim} dimensions"
                )
        M = len(encoders)
        rescale = [1.0] * M if rescale_factors is None else [float(r) for r in rescale_factors]
        if len(rescale) != M or not all(math.isfinite(r) and r > 0 for r in rescale):
            raise InputError(f"rescale_factors must be {M} positive numbers, got {rescale_factors!r}")
        self.encoders, self.decoders = nn.ModuleList(encoders), nn.ModuleList(decoders)
        self.n_modalities, self.latent_dim, self.modality_latent_dim = M, latent_dim, modality_latent_dim
        self.likelihood, self.likelihood_scale = likelihood, _finite_pos("likelihood_scale", likelihood_scale)
        self.beta, self.K, self.estimator = _finite_pos("beta", beta), K, estimator
        self.rescale_factors, self.generation_prior = rescale, generation_prior
        self.latent = latent
        if isinstance(scale_eps, bool) or not isinstance(scale_eps, int | float) or not 0 < scale_eps <= 1e-2:
            raise InputError(
                f"scale_eps must be a number in (0, 1e-2] (1e-6 by default; the official code's 1e-20), got "
                f"{scale_eps!r}"
            )
        self.scale_eps = float(scale_eps)
        C = n_clusters_max
        self.n_clusters_max = C
        # p(c) = Cat(softmax(l)), l = 0 at start: uniform 1/C
        self.cluster_logits = nn.Parameter(torch.zeros(C))
        # p(z|c) = Laplace(mu_c, sigma_c): mu_c ~ U(-1, 1)^d at start, raw scale 0 and fixed (sigma_c = 1 + 1e-6;
        # latent="normal": Normal(mu_c, softplus(0) = log 2))
        self.cluster_means = nn.Parameter(2 * torch.rand(C, latent_dim) - 1)
        self.register_buffer("cluster_raw_scale", torch.zeros(C, latent_dim))
        # p(w_m) = Laplace(0, 1) fixed; r_m(w) = Laplace(0, sigma_m), sigma_m learnable (raw 0 -> 1)
        self.register_buffer("w_prior_raw_scale", torch.zeros(modality_latent_dim))
        self.aux_prior_raw_scale = nn.Parameter(
            torch.zeros(M, modality_latent_dim), requires_grad=learn_modality_prior
        )
        self.register_buffer("active", torch.ones(C, dtype=torch.bool))
        self.spec: dict | None = None  # set by build_mlp_model, so save_checkpoint can rebuild the model

    # ---------------------------------------------------------------- model folder
    def pretrained_config(self) -> dict:
        """The build spec of :func:`build_mlp_model` (what rebuilds this model); other models are refused."""
        if getattr(self, "spec", None) is None:
            raise InputError(
                "save_pretrained saves a model made by build_mlp_model (its build spec goes into config.json); for "
                "your own encoders and decoders save model.state_dict() with safetensors and rebuild the modules"
            )
        try:
            return json.loads(json.dumps(self.spec, allow_nan=False))
        except (TypeError, ValueError) as e:
            raise InputError(f"the model's build spec must hold JSON values only to be saved: {e}") from None

    @classmethod
    def from_pretrained_config(cls, **spec) -> CMVAE:
        """Rebuild the model of a build spec (``config.json``), its weights drawn without touching the global RNG
        (they are replaced by the saved ones)."""
        dims = spec.pop("input_dims", None)
        if not isinstance(dims, list):
            raise InputError(f"a cmvae build spec needs an input_dims list, got {describe(dims)}")
        clustered = spec.get("clustered", True)
        if clustered != (not issubclass(cls, MMVAEPlus)) and cls is not CMVAE:
            raise InputError(
                f"the spec builds a {'CMVAE' if clustered else 'MMVAEPlus'}, not a {cls.__name__}"
            )
        with torch.random.fork_rng(devices=[]):
            return build_mlp_model(dims, **spec)

    # ---------------------------------------------------------------- priors
    @property
    def n_active(self) -> int:
        return int(self.active.sum())

    def log_pi(self, active: torch.Tensor | None = None) -> torch.Tensor:
        """log pi_c over the active clusters (-inf for a deactivated one), [C]."""
        a = self.active if active is None else active
        return torch.log_softmax(self.cluster_logits.masked_fill(~a, float("-inf")), dim=-1)

    def scale_of(self, raw: torch.Tensor) -> torch.Tensor:
        """A latent density's scale from its raw parameter (softmax * D + eps, or softplus + eps for Normal; eps =
        ``scale_eps``, 1e-6 by default, the official code's 1e-20 on request)."""
        return latent_scale(raw, self.latent, self.scale_eps)

    def latent_log_prob(self, x, loc, scale) -> torch.Tensor:
        """Elementwise log density of the latent family (Laplace or Normal)."""
        return latent_log_prob(x, loc, scale, self.latent)

    def _draw(self, loc, scale, shape, generator: torch.Generator | None = None) -> torch.Tensor:
        """Seeded draws of the latent family (no gradient): Laplace by its inverse CDF, Normal by loc + scale eps."""
        dev = loc.device if isinstance(loc, torch.Tensor) else scale.device
        if self.latent == "normal":
            return loc + scale * torch.randn(shape, generator=generator).to(dev)
        u = torch.rand(shape, generator=generator).to(dev).clamp(1e-7, 1 - 1e-7) - 0.5
        return loc - scale * u.sign() * torch.log1p(-2 * u.abs())  # Laplace inverse CDF

    def _rsample(self, loc, scale, shape=()) -> torch.Tensor:
        family = torch.distributions.Normal if self.latent == "normal" else torch.distributions.Laplace
        return family(loc, scale).rsample(shape)

    def cluster_scale(self) -> torch.Tensor:
        return self.scale_of(self.cluster_raw_scale)

    def cluster_posterior(self, z: torch.Tensor, active: torch.Tensor | None = None) -> torch.Tensor:
        """q(c|z) [..., C] for shared latents z [..., d]."""
        lpc, lpzc = cluster_log_joint(
            z, self.log_pi(active), self.cluster_means, self.cluster_scale(), self.latent
        )
        # Eq. (q(c|z)): q(c|z) = softmax_c(log pi_c + log p(z|c))
        return torch.softmax(lpc + lpzc, dim=-1)

    # ---------------------------------------------------------------- checks
    def _check_inputs(self, xs: Sequence[torch.Tensor | None], mask: torch.Tensor | None):
        if not isinstance(xs, list | tuple):
            raise InputError(
                f"xs must be a list of {self.n_modalities} tensors (one per modality), got {type(xs).__name__}"
            )
        if len(xs) != self.n_modalities:
            raise InputError(f"expected {self.n_modalities} modalities, got {len(xs)}")
        present = [x for x in xs if x is not None]
        if not present:
            raise InputError("every modality of the batch is missing (all entries of xs are None)")
        B = None
        for m, x in enumerate(xs):
            if x is None:
                continue
            if not isinstance(x, torch.Tensor):
                raise InputError(f"modality {m}: expected a torch.Tensor, got {type(x).__name__}")
            if not x.is_floating_point():
                raise InputError(f"modality {m}: expected a floating-point tensor, got {x.dtype}")
            w = next(iter(self.encoders[m].parameters()), None)
            if w is not None and w.dtype != x.dtype:
                raise InputError(
                    f"modality {m}: the encoder's weights are {w.dtype}, the input {x.dtype}: convert one"
                )
            shape = getattr(self.encoders[m], "in_shape", None)
            if shape is not None and tuple(x.shape[1:]) != tuple(shape):
                raise InputError(
                    f"modality {m}: expected inputs of shape [B, {', '.join(map(str, shape))}], got {list(x.shape)}"
                )
            if B is None:
                B = x.shape[0]
            elif x.shape[0] != B:
                raise InputError(f"modality {m} has {x.shape[0]} rows, but an earlier modality has {B}")
            if not torch.isfinite(x).all():
                raise InputError(f"modality {m} has non-finite values (NaN or inf)")
            if self.likelihood == "bernoulli" and x.numel() and (x.min() < 0 or x.max() > 1):
                raise InputError(
                    f"modality {m}: a Bernoulli likelihood needs values in [0, 1] (probabilities or binary "
                    f"pixels), got the range [{float(x.min()):g}, {float(x.max()):g}]"
                )
        if B == 0:
            raise InputError("the batch is empty (0 rows)")
        avail = torch.tensor([x is not None for x in xs], device=present[0].device)
        full = avail.expand(B, -1).clone()
        if mask is not None:
            mask = torch.as_tensor(mask, device=present[0].device)
            if mask.is_floating_point() and not bool(((mask == 0) | (mask == 1)).all()):
                raise InputError(f"mask must hold booleans (or 0/1), got {describe(mask)} with other values")
            if mask.shape != (B, self.n_modalities):
                raise InputError(f"mask must have shape [{B}, {self.n_modalities}], got {list(mask.shape)}")
            full = full & mask.to(torch.bool)
        if not full.any(1).all():
            bad = int((~full.any(1)).sum())
            raise InputError(
                f"{bad} row(s) of the batch have every modality missing; each row needs at least one"
            )
        return B, full

    def _encode(self, xs, avail):
        """Unimodal posterior parameters, stacked: z_loc, z_scale [M, B, d]; w_loc, w_scale [M, B, d_w]."""
        B = avail.shape[0]
        ref = next(x for x in xs if x is not None)
        zl, zs, wl, ws = [], [], [], []
        for m, x in enumerate(xs):
            if x is None:
                zl.append(ref.new_zeros(B, self.latent_dim))
                zs.append(ref.new_ones(B, self.latent_dim))
                wl.append(ref.new_zeros(B, self.modality_latent_dim))
                ws.append(ref.new_ones(B, self.modality_latent_dim))
                continue
            out = self.encoders[m](x)
            if not isinstance(out, tuple | list) or len(out) != 4:
                raise InputError(f"encoder {m} must return (z_loc, z_raw_scale, w_loc, w_raw_scale)")
            want = [(B, self.latent_dim)] * 2 + [(B, self.modality_latent_dim)] * 2
            for t, s, n in zip(out, want, ("z_loc", "z_raw_scale", "w_loc", "w_raw_scale"), strict=True):
                if tuple(t.shape) != s:
                    raise InputError(f"encoder {m} returned {n} of shape {list(t.shape)}, expected {list(s)}")
            zl.append(out[0])
            zs.append(self.scale_of(out[1]))
            wl.append(out[2])
            ws.append(self.scale_of(out[3]))
        return torch.stack(zl), torch.stack(zs), torch.stack(wl), torch.stack(ws)

    def _decode(self, n: int, zw: torch.Tensor) -> torch.Tensor:
        lead = zw.shape[:-1]
        out = self.decoders[n](zw.reshape(-1, zw.shape[-1]))
        return out.reshape(*lead, *out.shape[1:])

    def log_likelihood(self, recon: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        """log p(x_n | z, w_n) summed over the features of x: recon [K, B, *shape], x [B, *shape] -> [K, B]."""
        if self.likelihood == "laplace":
            lp = laplace_log_prob(x, recon, self.likelihood_scale)
        elif self.likelihood == "normal":
            s = self.likelihood_scale
            lp = -0.5 * ((x - recon) / s) ** 2 - math.log(s) - 0.5 * math.log(2 * math.pi)
        else:
            lp = -F.binary_cross_entropy_with_logits(recon, x.expand_as(recon), reduction="none")
        return lp.reshape(*lp.shape[: recon.dim() - x.dim() + 1], -1).sum(-1)

    def mean_of(self, recon: torch.Tensor) -> torch.Tensor:
        """The mean of p(x|z, w) from a decoder output (sigmoid of the logits for ``bernoulli``)."""
        return torch.sigmoid(recon) if self.likelihood == "bernoulli" else recon

    # ---------------------------------------------------------------- the objective
    def _cluster_prior_terms(self):
        """log pi_c, mu_c, sigma_c of the ACTIVE clusters only: a deactivated cluster is left out of the objective
        instead of entering it as log pi = -inf (which would put 0 * (-inf) = NaN into the gradients)."""
        if bool(self.active.all()):
            return torch.log_softmax(self.cluster_logits, -1), self.cluster_means, self.cluster_scale()
        idx = self.active.nonzero().flatten()
        return (
            torch.log_softmax(self.cluster_logits[idx], -1),
            self.cluster_means[idx],
            self.cluster_scale()[idx],
        )

    def log_weights(self, xs, mask=None, K: int | None = None, detach_posteriors: bool = False):
        """The per-modality importance log-weights lw_m [M, K, B] (0 where x_m is missing), the available mask
        [B, M], and the sampled latents {m: (z, w_m)}. ``detach_posteriors``: the densities log q(z|X) and
        log q(w_m|x_m) see the encoder outputs detached (the ``dreg_detached`` estimator)."""
        K = self.K if K is None else K
        B, avail = self._check_inputs(xs, mask)
        zl, zs, wl, ws = self._encode(xs, avail)
        zl_q, zs_q, wl_q, ws_q = (
            (t.detach() for t in (zl, zs, wl, ws)) if detach_posteriors else (zl, zs, wl, ws)
        )
        w_prior_scale = self.scale_of(self.w_prior_raw_scale)
        aux_scale = self.scale_of(self.aux_prior_raw_scale)  # [M, d_w]
        lpc_act, mu_act, sc_act = self._cluster_prior_terms()
        present = [m for m in range(self.n_modalities) if xs[m] is not None]
        latents, w_for = {}, {}
        for m in present:
            # (z, w_m) ~ q(z|x_m) q(w_m|x_m), K reparameterised samples
            z = self._rsample(zl[m], zs[m], (K,))
            w = self._rsample(wl[m], ws[m], (K,))
            latents[m] = (z, w)
            for n in present:  # w~_n ~ r_n(w) for the cross-modal reconstructions
                w_for[m, n] = (
                    w if n == m else self._rsample(torch.zeros_like(aux_scale[n]), aux_scale[n], (K, B))
                )
        lpx = {}
        for n in present:  # decoder n once, on the latents of every sampling modality m
            zw = torch.stack([torch.cat([latents[m][0], w_for[m, n]], dim=-1) for m in present])
            recon = self._decode(n, zw)  # [P, K, B, *shape_n]
            if tuple(recon.shape[3:]) != tuple(xs[n].shape[1:]):
                raise InputError(
                    f"decoder {n} outputs shape [{', '.join(map(str, recon.shape[3:]))}] per sample, but "
                    f"modality {n} has inputs of shape [{', '.join(map(str, xs[n].shape[1:]))}]"
                )
            lpx[n] = self.log_likelihood(recon, xs[n]) * self.rescale_factors[n] * avail[:, n].to(zl.dtype)
        lws = []
        for m in range(self.n_modalities):
            if xs[m] is None:
                lws.append(zl.new_zeros(K, B))
                continue
            z, w = latents[m]
            i = present.index(m)
            recon_sum = sum(lpx[n][i] for n in present)  # sum_n lambda_n log p(x_n | z, w_n^(m))  [K, B]
            lpw = self.latent_log_prob(w, 0.0, w_prior_scale).sum(-1)  # log p(w_m)
            lqw = self.latent_log_prob(w, wl_q[m], ws_q[m]).sum(-1)  # log q(w_m|x_m)
            lqz = log_moe_density(z, zl_q, zs_q, avail, self.latent)  # log q(z|X)
            lpc, lpzc = cluster_log_joint(z, lpc_act, mu_act, sc_act, self.latent)  # [K, B, C_active]
            q = torch.softmax(lpc + lpzc, dim=-1) + Q_EPS  # q(c|z) + 1e-20, as in the official objectives.py
            # Eq. (ELBO): lw_m = sum_n lambda_n log p(x_n|z, w_n) + beta ( sum_c q(c|z) (log pi_c + log p(z|c)
            #                    - log q(c|z)) + log p(w_m) - log q(z|X) - log q(w_m|x_m) )
            lw = recon_sum + self.beta * ((q * (lpc + lpzc - torch.log(q))).sum(-1) + lpw - lqz - lqw)
            lws.append(lw * avail[:, m].to(lw.dtype))
        return torch.stack(lws), avail, latents

    def loss(self, xs, mask=None, K: int | None = None, estimator: str | None = None) -> torch.Tensor:
        """The negative objective, averaged over the batch. ``iwae_looser``: log-mean-exp over the K samples;
        ``dreg_looser`` (the official ``cmvae_dreg``): sum_k w~_k lw_k with the weights w~ = softmax_k(lw) stopped
        and nothing else detached, whose gradient equals ``iwae_looser``'s; ``dreg_detached``: DReG as Tucker et
        al. define it (posterior densities detached, the sampled z and w's gradients re-weighted by w~_k)."""
        est = self.estimator if estimator is None else estimator
        check_choice(est, "estimator", ESTIMATORS)
        lws, avail, latents = self.log_weights(xs, mask, K, detach_posteriors=est == "dreg_detached")
        a = avail.T.to(lws.dtype)  # [M, B]
        if est == "iwae_looser":
            # Eq. (IWAE looser): L = (1/|A|) sum_m log (1/K) sum_k exp(lw_m^k)
            per_mod = log_mean_exp(lws, dim=1)
        else:
            # Eq. (DReG): L = (1/|A|) sum_m sum_k w~_k lw_m^k, w~ = softmax_k(lw_m) stopped
            with torch.no_grad():
                wk = torch.softmax(lws, dim=1)  # [M, K, B]
            per_mod = (wk * lws).sum(1)
            if est == "dreg_detached":  # grads on z, w times w~_k (the official hook never reaches the graph)
                for m, (z, w) in latents.items():
                    if z.requires_grad:
                        z.register_hook(lambda g, wm=wk[m]: g * wm.unsqueeze(-1))
                    if w.requires_grad:
                        w.register_hook(lambda g, wm=wk[m]: g * wm.unsqueeze(-1))
        per_row = (per_mod * a).sum(0) / a.sum(0)
        return -per_row.mean()

    forward = loss

    # ---------------------------------------------------------------- inference
    @torch.no_grad()
    def encode(self, xs, mask=None) -> torch.Tensor:
        """The mean of the unimodal posterior means of z over the available modalities, [B, d]."""
        _, avail = self._check_inputs(xs, mask)
        zl, _, _, _ = self._encode(xs, avail)
        a = avail.T.unsqueeze(-1).to(zl.dtype)
        return (zl * a).sum(0) / a.sum(0)

    @torch.no_grad()
    def _sample_posterior_z(self, xs, mask=None, generator: torch.Generator | None = None):
        _, avail = self._check_inputs(xs, mask)
        zl, zs, _, _ = self._encode(xs, avail)
        z = self._draw(zl, zs, zl.shape, generator)
        return z.transpose(0, 1), avail  # [B, M, d], [B, M]

    @torch.no_grad()
    def predict_clusters(
        self, xs, mask=None, *, seed: int = 0, batch_size: int = 4096, at_means: bool = False
    ) -> ClusterPrediction:
        """Cluster assignments: z_m ~ q(z|x_m) per modality, the argmax of q(c|z_m), then the majority vote over
        the available modalities (a tie goes to the smallest cluster index). This sampled assignment is the
        official one (``predict_clusters`` of the official code and MultiVae). ``at_means=True``: q(c|z) at the
        posterior means z_m = E[q(z|x_m)] instead of samples (a diagnostic, not the paper's rule: it removes the
        posterior noise from the assignment)."""
        check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
        if not isinstance(at_means, bool):
            raise InputError(f"at_means must be True or False, got {describe(at_means)}")
        g = torch.Generator().manual_seed(seed)
        B, _ = self._check_inputs(xs, mask)
        out_c, out_v, out_q = [], [], []
        for s in range(0, B, batch_size):
            sl = [None if x is None else x[s : s + batch_size] for x in xs]
            ms = None if mask is None else torch.as_tensor(mask)[s : s + batch_size]
            if at_means:
                _, avail = self._check_inputs(sl, ms)
                z = self._encode(sl, avail)[0].transpose(0, 1)  # posterior means [b, M, d]
            else:
                z, avail = self._sample_posterior_z(sl, ms, g)
            q = self.cluster_posterior(z)  # [b, M, C]
            votes = q.argmax(-1)
            out_c.append(majority_vote(votes, self.n_clusters_max, avail))
            out_v.append(torch.where(avail, votes, torch.full_like(votes, -1)))
            out_q.append(q)
        return ClusterPrediction(
            clusters=torch.cat(out_c).cpu().numpy(),
            per_modality=torch.cat(out_v).cpu().numpy(),
            q_c=torch.cat(out_q).cpu().numpy(),
        )

    @torch.no_grad()
    def _selection_step(self, z, avail, active, rule: str):
        """h(k) at the current ``active`` set, the majority-vote assignments and each cluster's pruning score
        (lower = pruned first) under ``rule``."""
        C = self.n_clusters_max
        a = avail.to(z.dtype)
        mu, scale = self.cluster_means, self.cluster_scale()
        if rule == "official":
            ent, ll, q = official_selection_terms(z, self.cluster_logits, active, mu, scale, self.latent)
        else:
            if rule == "multivae":
                pi = torch.softmax(self.cluster_logits.masked_fill(~active, float("-inf")), -1)
                log_pi = torch.log(pi + Q_EPS)
            else:
                log_pi = self.log_pi(active)
            lpc, lpzc = cluster_log_joint(z, log_pi, mu, scale, self.latent)
            q = torch.softmax(lpc + lpzc, dim=-1)  # [B, M, C]
            n_eff = (q > 0).sum(-1).clamp_min(2) if rule == "multivae" else int(active.sum())
            ent = normalised_entropy(q, n_eff)
            ll = cluster_marginal_log_likelihood(z, log_pi, mu, scale, self.latent)  # log sum_c pi p(z|c) / d
        # Eq. (h(K)): h = mean_x [ beta (1/M) sum_m H(q(c|z_m)) / log K - (1/M) sum_m ll(z_m) ]
        per_row = ((self.beta * ent - ll) * a).sum(-1) / a.sum(-1)
        h = float(per_row.mean())
        votes = majority_vote(q.argmax(-1), C, avail)
        if rule == "official":
            # the probability mass of a cluster: sum over the rows it wins of max_c (mean over modalities of q)
            qm = (q * a.unsqueeze(-1)).sum(1) / a.sum(1, keepdim=True)  # [B, C]
            score = torch.zeros(C, dtype=torch.float64, device=z.device)
            score.index_add_(0, votes, qm.max(-1).values.to(torch.float64))
        else:
            score = torch.bincount(votes, minlength=C).to(torch.float64)  # majority-vote assignments
        return h, score

    @torch.no_grad()
    def select_num_clusters(
        self, xs, mask=None, *, apply: bool = False, rule: str = "official", seed: int = 0
    ) -> ClusterSelection:
        """Post-hoc selection of the number of clusters on held-out tuples ``xs`` (the official code uses a
        validation split): from the active clusters down to 2, score h(k), then prune the weakest active cluster;
        k* = argmin h. The model changes only with ``apply=True`` (it then keeps the clusters active at k*).

        ``rule="official"`` (default; ``prune_polyMNIST.py``): log(pi + 1e-20), q(c|z) + 1e-20, the entropy divided
        by log K_max, the likelihood term sum_c q (log p(z|c) + log pi - log q) / d; the cluster pruned next has the
        least probability mass (sum over the tuples it wins of the largest modality-averaged q; ties: the larger
        index); a tie in h keeps the larger k. ``rule="active"``: the entropy divided by log k (the active count),
        log pi = -inf for pruned clusters, pruning by fewest majority-vote assignments (ties: the smaller index),
        ties in h to the smaller k. ``rule="multivae"``: as "active" but with MultiVae's divisor
        log(count_nonzero q(c|z)) and log(pi + 1e-20)."""
        import time

        check_choice(rule, "rule", SELECTION_RULES)
        t0 = time.perf_counter()
        if self.n_active < 2:
            raise InputError(
                f"cluster selection needs at least 2 active clusters, the model has {self.n_active}"
            )
        z, avail = self._sample_posterior_z(xs, mask, torch.Generator().manual_seed(seed))  # sampled once
        C = self.n_clusters_max
        h = [math.inf] * (C + 1)
        snapshots: dict[int, torch.Tensor] = {}
        active = self.active.clone()
        removed: list[int] = []
        while True:
            k = int(active.sum())
            h[k], score = self._selection_step(z, avail, active, rule)
            snapshots[k] = active.clone()
            if k == 2:
                break
            score[~active] = math.inf
            if not bool(torch.isfinite(score[active]).any()) or not math.isfinite(h[k]):
                raise InputError(
                    "the cluster scores are not finite: the posterior of this data is degenerate (inputs far "
                    "outside the training range?)"
                )
            lowest = torch.nonzero(score == score.min()).flatten()
            worst = int(lowest[-1] if rule == "official" else lowest[0])
            active[worst] = False
            removed.append(worst)
        hh = np.asarray(h)
        if not np.isfinite(hh).any():
            raise InputError("the cluster entropies are not finite: the posterior of this data is degenerate")
        ties = np.flatnonzero(hh == hh.min())
        k_star = int(ties[-1] if rule == "official" else ties[0])
        if apply:
            self.active.copy_(snapshots[k_star])
        return ClusterSelection(
            h=h,
            k_star=k_star,
            active=snapshots[k_star].cpu().numpy(),
            removed=removed,
            seconds=time.perf_counter() - t0,
            rule=rule,
        )

    # ---------------------------------------------------------------- generation
    @torch.no_grad()
    def sample(
        self, n: int, *, cluster: int | None = None, seed: int | None = None, return_latents: bool = False
    ):
        """Unconditional generation: c ~ Cat(pi) (or the given ``cluster``), z ~ p(z|c), w_m ~ p(w) (``joint_prior``)
        or r_m(w) (``single_prior``); returns the decoded means, a list of M tensors [n, *shape_m]."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**7:
            raise InputError(f"n must be a positive integer, got {n!r}")
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        dev = self.cluster_means.device
        if cluster is None:
            c = torch.multinomial(self.log_pi().exp().cpu(), n, replacement=True, generator=g).to(dev)
        else:
            if (
                isinstance(cluster, bool)
                or not isinstance(cluster, int)
                or not 0 <= cluster < self.n_clusters_max
            ):
                raise InputError(f"cluster must be an integer in [0, {self.n_clusters_max}), got {cluster!r}")
            if not bool(self.active[cluster]):
                raise InputError(
                    f"cluster {cluster} is deactivated (active: {self.active.nonzero().flatten().tolist()})"
                )
            c = torch.full((n,), cluster, dtype=torch.long, device=dev)
        z = self._draw(self.cluster_means[c], self.cluster_scale()[c], (n, self.latent_dim), g)
        outs, ws = [], []
        for m in range(self.n_modalities):
            raw = (
                self.w_prior_raw_scale
                if self.generation_prior == "joint_prior"
                else self.aux_prior_raw_scale[m]
            )
            w = self._draw(torch.zeros((), device=dev), self.scale_of(raw), (n, self.modality_latent_dim), g)
            ws.append(w)
            outs.append(self.mean_of(self._decode(m, torch.cat([z, w], -1))))
        return (outs, c, z, ws) if return_latents else outs

    @torch.no_grad()
    def cross_generate(
        self,
        x: torch.Tensor,
        source: int,
        *,
        seed: int | None = None,
        w_prior: str = "fixed",
        return_latents: bool = False,
    ):
        """Conditional generation from one modality: z ~ q(z|x_source); w_source ~ q(w|x_source), and for the
        other modalities w_n ~ p(w) = Laplace(0, 1), the fixed prior (``w_prior="fixed"``, the official test-time
        generation) or w_n ~ r_n(w), the learned auxiliary prior (``w_prior="auxiliary"``, as in training's
        cross-reconstructions). Returns the decoded means of all M modalities (and, with ``return_latents``, z and
        the list of w_n)."""
        if isinstance(source, bool) or not isinstance(source, int) or not 0 <= source < self.n_modalities:
            raise InputError(f"source must be a modality index in [0, {self.n_modalities}), got {source!r}")
        if w_prior not in ("fixed", "auxiliary"):
            raise InputError(f"w_prior must be 'fixed' or 'auxiliary', got {w_prior!r}")
        xs = [None] * self.n_modalities
        xs[source] = x
        B, avail = self._check_inputs(xs, None)
        zl, zs, wl, ws = self._encode(xs, avail)
        g = torch.Generator().manual_seed(seed) if seed is not None else None
        z = self._draw(zl[source], zs[source], zl[source].shape, g)
        fixed = self.scale_of(self.w_prior_raw_scale)
        aux = self.scale_of(self.aux_prior_raw_scale)
        outs, w_all = [], []
        for n in range(self.n_modalities):
            if n == source:
                w = self._draw(wl[source], ws[source], wl[source].shape, g)
            else:
                scale = fixed if w_prior == "fixed" else aux[n]
                w = self._draw(torch.zeros((), device=z.device), scale, (B, self.modality_latent_dim), g)
            w_all.append(w)
            outs.append(self.mean_of(self._decode(n, torch.cat([z, w], -1))))
        return (outs, z, w_all) if return_latents else outs

    @torch.no_grad()
    def reconstruct(self, xs, mask=None) -> list[torch.Tensor]:
        """Self-reconstructions at the posterior means, one [B, *shape_m] per available modality (None otherwise)."""
        _, avail = self._check_inputs(xs, mask)
        zl, _, wl, _ = self._encode(xs, avail)
        return [
            None if xs[m] is None else self.mean_of(self._decode(m, torch.cat([zl[m], wl[m]], -1)))
            for m in range(self.n_modalities)
        ]


class MMVAEPlus(CMVAE):
    """MMVAE+ (Palumbo et al., ICLR 2023): the same model and objective with a single cluster at mu = 0, i.e. the
    fixed prior p(z) = Laplace(0, 1). The baseline CMVAE reduces to."""

    _min_clusters = 1

    def __init__(self, encoders, decoders, **kwargs) -> None:
        kwargs.pop("n_clusters_max", None)
        super().__init__(encoders, decoders, n_clusters_max=1, **kwargs)
        with torch.no_grad():
            self.cluster_means.zero_()
        self.cluster_means.requires_grad_(False)
        self.cluster_logits.requires_grad_(False)

    def select_num_clusters(self, *args, **kwargs):  # type: ignore[override]
        raise InputError("MMVAEPlus has one cluster: there is no number of clusters to select")


def build_mlp_model(
    input_dims: Sequence[int],
    *,
    latent_dim: int = 10,
    modality_latent_dim: int = 4,
    hidden: Sequence[int] = (256, 256),
    n_clusters_max: int = 20,
    clustered: bool = True,
    **kwargs,
) -> CMVAE:
    """A CMVAE (or, with ``clustered=False``, MMVAE+) with MLP encoders/decoders for flat modalities of the given
    sizes; the model remembers how it was built, so :func:`save_checkpoint` / :func:`load_checkpoint` work."""
    if isinstance(input_dims, str | bytes) or not isinstance(input_dims, Sequence):
        raise InputError(f"input_dims must be positive sizes, one per modality, got {describe(input_dims)}")
    dims = [check_int(d, "each input dim", minimum=1, maximum=MAX_WIDTH) for d in input_dims]
    if not dims or any(d < 1 for d in dims):
        raise InputError(f"input_dims must be positive sizes, one per modality, got {list(input_dims)!r}")
    for name, v in (("latent_dim", latent_dim), ("modality_latent_dim", modality_latent_dim),
                    ("n_clusters_max", n_clusters_max), *(("hidden width", h) for h in hidden)):  # fmt: skip
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WIDTH:
            raise InputError(f"{name} must be an integer in [1, {MAX_WIDTH}], got {v!r}")
    encs = [MLPEncoder(d, latent_dim, modality_latent_dim, hidden) for d in dims]
    decs = [MLPDecoder(latent_dim + modality_latent_dim, d, hidden) for d in dims]
    common = dict(latent_dim=latent_dim, modality_latent_dim=modality_latent_dim, **kwargs)
    if clustered:
        model: CMVAE = CMVAE(encs, decs, n_clusters_max=n_clusters_max, **common)
    else:
        model = MMVAEPlus(encs, decs, **common)
    model.spec = dict(
        input_dims=dims, latent_dim=latent_dim, modality_latent_dim=modality_latent_dim, hidden=list(hidden),
        n_clusters_max=n_clusters_max, clustered=clustered, **kwargs,
    )  # fmt: skip
    return model
