"""``FreeFormInjectiveFlow``: any encoder/decoder pair trained as an injective flow (paper Sec. 4).

The per-sample loss (official ``fff/loss.py: fff_loss`` and ``fff/base.py``), with the SoftFlow-style noise
``x~ = x + sigma eps`` of ``fff/base.py: dequantize``:

    L(x) = beta ||x~ - g(f(x~))||^2  -  log p_Z(f(x~))  -  S(x~)                     Eq. (E6)

``S`` is the Hutchinson surrogate of :func:`~.estimator.volume_change_surrogate` (``log_det="surrogate"``) or the
exact ``1/2 log det(J_f J_f^T)`` with a differentiable Jacobian (``log_det="exact"``, the cost reference).
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

from .estimator import GRADIENT_SIDES
from .estimator import JACOBIAN_POINTS
from .estimator import _check_net_input
from .estimator import _net_errors
from .estimator import encoder_jacobian
from .estimator import exact_log_prob
from .estimator import log_det_gram
from .estimator import standard_normal_log_prob
from .estimator import volume_change_surrogate

__all__ = ["FreeFormInjectiveFlow", "FIFModel", "fif_loss", "LOG_DET_MODES"]

LOG_DET_MODES = ("surrogate", "exact", "none")


def _check_nonneg(name: str, v: object) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not math.isfinite(v) or v < 0:
        raise InputError(f"{name} must be a finite number >= 0, got {v!r}")
    return float(v)


def _check_batch(x: object, data_dim: int) -> torch.Tensor:
    if not isinstance(x, torch.Tensor):
        raise InputError(f"x must be a torch.Tensor of shape (batch, {data_dim}), got {type(x).__name__}")
    if not x.dtype.is_floating_point:
        raise InputError(f"x must be a floating-point tensor, got dtype {x.dtype}")
    if x.ndim != 2 or x.shape[1] != data_dim:
        raise InputError(f"x must have shape (batch, {data_dim}), got {tuple(x.shape)}")
    if x.shape[0] == 0:
        raise InputError("x is an empty batch (0 rows)")
    return x


def fif_loss(
    x: torch.Tensor,
    encode: Callable[[torch.Tensor], torch.Tensor],
    decode: Callable[[torch.Tensor], torch.Tensor],
    beta: float = 10.0,
    noise: float = 0.0,
    hutchinson_samples: int = 1,
    gradient_side: str = "encoder",
    log_det: str = "surrogate",
    generator: torch.Generator | None = None,
    jacobian_at: str = "data",
) -> dict[str, torch.Tensor]:
    """Per-sample FIF loss terms for a batch ``x`` (B, D); ``out["loss"].mean()`` is the batch loss.

    Returns ``loss``, ``nll`` (the surrogate NLL ``-log p_Z(z) - S``; its value is not a likelihood),
    ``noisy_reconstruction`` (against ``x~``, the trained term), ``reconstruction`` (against the clean ``x``),
    ``z`` and ``x1``. ``jacobian_at``: ``"data"`` (the stable objective, default) or ``"reconstruction"`` (the
    naive objective of the paper's ablation; see :func:`~.estimator.volume_change_surrogate`).
    """
    _check_net_input(x, encode, "x")
    if not callable(decode):
        raise InputError(f"decode must be a callable (the decoder), got {describe(decode)}")
    beta = _check_nonneg("beta", beta)
    noise = _check_nonneg("noise", noise)
    check_choice(log_det, "log_det", LOG_DET_MODES)
    with _net_errors("fif_loss"):
        return _fif_loss(x, encode, decode, beta, noise, hutchinson_samples, gradient_side, log_det, generator,
                         jacobian_at)  # fmt: skip


def _fif_loss(
    x, encode, decode, beta, noise, hutchinson_samples, gradient_side, log_det, generator, jacobian_at
):
    # SoftFlow noise (fff/base.py: dequantize): x~ = x + sigma eps
    x_noisy = (
        x + noise * torch.randn(x.shape, generator=generator, dtype=x.dtype).to(x.device) if noise > 0 else x
    )
    if log_det == "surrogate":
        out = volume_change_surrogate(
            x_noisy, encode, decode, hutchinson_samples, gradient_side, generator, jacobian_at=jacobian_at
        )
        z, x1, volume_change = out.z, out.x1, out.surrogate
    elif log_det == "exact":
        # exact-ML reference: 1/2 log det(J_f J_f^T) with a differentiable Jacobian (d backward passes)
        z, jf = encoder_jacobian(x_noisy, encode, create_graph=True)
        volume_change = log_det_gram(jf)
        x1 = decode(z)
    else:  # "none": the plain autoencoder baseline
        z = encode(x_noisy)
        x1 = decode(z)
        volume_change = torch.zeros(x.shape[0], dtype=x.dtype, device=x.device)
    noisy_rec = ((x_noisy - x1) ** 2).flatten(1).sum(1)
    clean_rec = ((x - x1) ** 2).flatten(1).sum(1)
    if log_det == "none":
        nll = torch.zeros_like(noisy_rec)
    else:
        # Eq. (E6): NLL surrogate = -log p_Z(f(x~)) - S(x~)
        nll = -standard_normal_log_prob(z) - volume_change
    # Eq. (E6): L = beta ||x~ - g(f(x~))||^2 + NLL surrogate
    loss = beta * noisy_rec + nll
    return {
        "loss": loss,
        "nll": nll,
        "noisy_reconstruction": noisy_rec,
        "reconstruction": clean_rec,
        "z": z,
        "x1": x1,
    }


class FreeFormInjectiveFlow(PretrainedMixin, nn.Module):
    """An injective flow from a free-form encoder ``f: R^D -> R^d`` and decoder ``g: R^d -> R^D`` (``d < D``).

    Built over your own ``nn.Module`` pair it saves with :func:`~.training.save_checkpoint`; built over the
    package's own pairs (:class:`FIFModel`) it also saves as a model folder (``save_pretrained`` /
    ``FIFModel.from_pretrained``).

    Args:
        encoder, decoder: ``nn.Module``s mapping (B, D) -> (B, d) and (B, d) -> (B, D); checked at construction.
        data_dim, latent_dim: ``D`` and ``d``; ``latent_dim < data_dim`` is required.
        beta: weight of the noisy reconstruction term (official ``loss_weights.noisy_reconstruction``; toy 10).
        noise: SoftFlow noise std sigma added to the data in training (official ``noise``; tabular 0.01).
        hutchinson_samples: K orthogonal probes (official 1).
        gradient_side: ``"encoder"`` (official code, default) or ``"decoder"`` (paper Sec. 4.1 derivation).
        log_det: ``"surrogate"`` (FIF), ``"exact"`` (exact-ML reference) or ``"none"`` (plain autoencoder).
        jacobian_at: ``"data"`` (the stable objective: ``J_f`` at the noisy data point, official) or
            ``"reconstruction"`` (the naive objective of the paper's ablation: ``J_f`` at ``g(f(x))``).
    """

    def __init__(
        self,
        encoder: nn.Module,
        decoder: nn.Module,
        *,
        data_dim: int,
        latent_dim: int,
        beta: float = 10.0,
        noise: float = 0.01,
        hutchinson_samples: int = 1,
        gradient_side: str = "encoder",
        log_det: str = "surrogate",
        jacobian_at: str = "data",
    ):
        super().__init__()
        for name, v in (("data_dim", data_dim), ("latent_dim", latent_dim)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise InputError(f"{name} must be an int >= 1, got {v!r}")
        if latent_dim >= data_dim:
            raise InputError(
                f"an injective flow needs latent_dim < data_dim, got latent_dim={latent_dim} >= data_dim={data_dim}"
            )
        if not isinstance(encoder, nn.Module) or not isinstance(decoder, nn.Module):
            raise InputError(
                f"encoder and decoder must be torch.nn.Module, got {type(encoder).__name__} and {type(decoder).__name__}"
            )
        check_choice(gradient_side, "gradient_side", GRADIENT_SIDES)
        check_choice(log_det, "log_det", LOG_DET_MODES)
        check_choice(jacobian_at, "jacobian_at", JACOBIAN_POINTS)
        if (
            isinstance(hutchinson_samples, bool)
            or not isinstance(hutchinson_samples, int)
            or hutchinson_samples < 1
        ):
            raise InputError(f"hutchinson_samples must be an int >= 1, got {hutchinson_samples!r}")
        if hutchinson_samples > latent_dim:
            raise InputError(
                f"hutchinson_samples must be <= latent_dim={latent_dim}, got {hutchinson_samples}"
            )
        self.encoder = encoder
        self.decoder = decoder
        self.data_dim = data_dim
        self.latent_dim = latent_dim
        self.beta = _check_nonneg("beta", beta)
        self.noise = _check_nonneg("noise", noise)
        self.hutchinson_samples = hutchinson_samples
        self.gradient_side = gradient_side
        self.log_det = log_det
        self.jacobian_at = jacobian_at
        self._check_shapes()

    def _check_shapes(self) -> None:
        p = next(self.parameters(), None)
        dtype = p.dtype if p is not None else torch.float32
        with torch.no_grad():
            try:
                z = self.encoder(torch.zeros(2, self.data_dim, dtype=dtype))
            except Exception as e:  # noqa: BLE001 - report any shape failure as a user error
                raise InputError(f"the encoder cannot take a batch of shape (2, {self.data_dim}): {e}") from e
            if not isinstance(z, torch.Tensor) or tuple(z.shape) != (2, self.latent_dim):
                got = tuple(z.shape) if isinstance(z, torch.Tensor) else type(z).__name__
                raise InputError(
                    f"the encoder maps (2, {self.data_dim}) to {got}, expected (2, {self.latent_dim}) (latent_dim)"
                )
            try:
                x1 = self.decoder(torch.zeros(2, self.latent_dim, dtype=dtype))
            except Exception as e:  # noqa: BLE001
                raise InputError(
                    f"the decoder cannot take a batch of shape (2, {self.latent_dim}): {e}"
                ) from e
            if not isinstance(x1, torch.Tensor) or tuple(x1.shape) != (2, self.data_dim):
                got = tuple(x1.shape) if isinstance(x1, torch.Tensor) else type(x1).__name__
                raise InputError(
                    f"the decoder maps (2, {self.latent_dim}) to {got}, expected (2, {self.data_dim}) (data_dim)"
                )

    def encode(self, x: torch.Tensor) -> torch.Tensor:
        """``z = f(x)``, shape (B, d)."""
        return self.encoder(_check_net_input(_check_batch(x, self.data_dim), self.encoder, "x"))

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """``x = g(z)``, shape (B, D)."""
        return self.decoder(_check_net_input(_check_batch(z, self.latent_dim), self.decoder, "z"))

    def reconstruct(self, x: torch.Tensor) -> torch.Tensor:
        """``g(f(x))``: the projection of ``x`` onto the learned manifold."""
        return self.decoder(self.encode(x))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.reconstruct(x)

    def loss_terms(
        self, x: torch.Tensor, generator: torch.Generator | None = None
    ) -> dict[str, torch.Tensor]:
        """Per-sample loss terms of Eq. (E6) (see :func:`fif_loss`)."""
        return fif_loss(
            _check_batch(x, self.data_dim),
            self.encoder,
            self.decoder,
            beta=self.beta,
            noise=self.noise,
            hutchinson_samples=self.hutchinson_samples,
            gradient_side=self.gradient_side,
            log_det=self.log_det,
            generator=generator,
            jacobian_at=self.jacobian_at,
        )

    def loss(self, x: torch.Tensor, generator: torch.Generator | None = None) -> torch.Tensor:
        """The batch loss (mean over samples of Eq. E6). NaN/inf input is an InputError, not a NaN loss."""
        check_tensor(_check_batch(x, self.data_dim), "x", kind="float", finite=True)
        out = self.loss_terms(x, generator)["loss"].mean()
        if not bool(torch.isfinite(out.detach())):
            raise InputError("the loss overflows at this input (values far outside the data's range?)")
        return out

    @torch.no_grad()
    def sample(
        self, n: int, latent_scale: float = 1.0, generator: torch.Generator | None = None
    ) -> torch.Tensor:
        """``x = g(z)``, ``z ~ N(0, latent_scale^2 I_d)`` (official ``sample``), shape (n, D)."""
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**7:
            raise InputError(f"n must be an int in [1, 10**7], got {n!r}")
        latent_scale = _check_nonneg("latent_scale", latent_scale)
        p = next(self.parameters())
        z = torch.randn(n, self.latent_dim, generator=generator, dtype=p.dtype).to(p.device) * latent_scale
        return self.decoder(z)

    def exact_log_prob(self, x: torch.Tensor, jacobian_target: str = "decoder") -> dict[str, torch.Tensor]:
        """Exact ``log p(x)`` of the projection ``g(f(x))`` on the learned manifold (d Jacobian passes)."""
        return exact_log_prob(_check_batch(x, self.data_dim), self.encoder, self.decoder, jacobian_target)

    def exact_nll(self, x: torch.Tensor, jacobian_target: str = "decoder") -> torch.Tensor:
        """Per-sample exact negative log-likelihood (B,)."""
        return -self.exact_log_prob(x, jacobian_target)["log_prob"]

    def pretrained_config(self) -> dict:
        """A model folder needs a model its ``config.json`` rebuilds; your own encoder/decoder modules are not
        JSON: refused with what to do instead."""
        raise InputError(
            f"save_pretrained needs a model that config.json can rebuild; this flow runs your own "
            f"{type(self.encoder).__name__}/{type(self.decoder).__name__}: build it as FIFModel(...) (the package's "
            "resnet or conv pair), or save it with save_checkpoint and rebuild the nets yourself"
        )

    def architecture(self) -> dict:
        """A signature of the architecture (parameter names and shapes) stored in checkpoints."""
        return {
            "encoder": type(self.encoder).__name__,
            "decoder": type(self.decoder).__name__,
            "data_dim": self.data_dim,
            "latent_dim": self.latent_dim,
            "params": {k: list(v.shape) for k, v in self.state_dict().items()},
        }


class FIFModel(FreeFormInjectiveFlow):
    """A free-form injective flow over the package's own encoder/decoder pair, built from plain arguments, so it saves
    and loads as a model folder (``save_pretrained`` / ``FIFModel.from_pretrained``): ``net="resnet"``:
    :func:`~.nets.resnet_pair` ``(data_dim, latent_dim, n_blocks, widths)`` (toy and tabular data); ``net="conv"``:
    :func:`~.nets.conv_pair` ``(image_shape, latent_dim, ch_factor, hidden)`` (flat images, ``data_dim = C*H*W``).
    The other arguments are :class:`FreeFormInjectiveFlow`'s. ``fif train`` builds this model."""

    def __init__(
        self,
        *,
        data_dim: int,
        latent_dim: int,
        net: str = "resnet",
        n_blocks: int = 4,
        widths: tuple[int, ...] = (256, 256),
        image_shape: tuple[int, int, int] | None = None,
        ch_factor: int = 16,
        hidden: int = 256,
        beta: float = 10.0,
        noise: float = 0.01,
        hutchinson_samples: int = 1,
        gradient_side: str = "encoder",
        log_det: str = "surrogate",
        jacobian_at: str = "data",
    ):
        from .nets import conv_pair
        from .nets import resnet_pair

        if net == "resnet":
            enc, dec = resnet_pair(data_dim, latent_dim, n_blocks, list(widths))
        elif net == "conv":
            if image_shape is None or isinstance(image_shape, str) or len(image_shape) != 3:
                raise InputError(f"net='conv' needs image_shape=(C, H, W), got {image_shape!r}")
            if math.prod(image_shape) != data_dim:
                raise InputError(
                    f"image_shape {tuple(image_shape)} has {math.prod(image_shape)} pixels, not data_dim={data_dim}"
                )
            enc, dec = conv_pair(list(image_shape), latent_dim, ch_factor=ch_factor, hidden=hidden)
        else:
            raise InputError(f"net must be 'resnet' or 'conv', got {net!r}")
        super().__init__(
            enc, dec, data_dim=data_dim, latent_dim=latent_dim, beta=beta, noise=noise,
            hutchinson_samples=hutchinson_samples, gradient_side=gradient_side, log_det=log_det,
            jacobian_at=jacobian_at,
        )  # fmt: skip

    def pretrained_config(self) -> dict:
        """The constructor's arguments (JSON), as recorded when the model was built."""
        return PretrainedMixin.pretrained_config(self)
