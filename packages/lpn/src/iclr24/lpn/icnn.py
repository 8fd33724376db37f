"""Input-convex potentials psi_theta and learned proximal networks f_theta = grad psi_theta (Sec. 3 of the paper).

The ICNN (Sec. 3 of the paper, "Learned Proximal Networks", in the official code's form). The formula lines below
are labelled ``# Sec. 3 (LPN): ...`` by the paper's section, not by an equation number: the paper's text was not
reachable offline for this reimplementation, so its equation numbering could not be checked, and none is guessed.
The formulas themselves were checked against the official networks (``lpn/networks/lpn_mnist.py``,
``lpn/networks/lpn_128.py``, ``exps/laplacian/network.py``):

    z_1 = g(H_1 y + b_1)
    z_k = g(W_k z_{k-1} + H_k y + b_k),  k = 2..K
    psi(y) = w^T z_K + (affine in y) + alpha * ||y||^2

with W_k >= 0 and w >= 0 (the "W-layers", no bias, clamped to 0 after every optimiser step), unconstrained input-skip
"H-layers" with biases, and g = Softplus(beta) (convex, nondecreasing). Then psi is convex in y, so
f = grad psi is the proximal operator of some (possibly nonconvex) prior R (Gribonval & Nikolova; Sec. 3 of the
paper). ``alpha > 0`` makes psi strongly convex and f injective (f is invertible on its range).

Three architectures follow the official repository: a fully connected net (the 1-D Laplacian toy, and flattened
small images), the 28x28 conv net (MNIST), and the 128x128 patch net (CelebA / CT) applied patch-wise.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

__all__ = [
    "ICNN",
    "MLPLPN",
    "ConvLPN28",
    "PatchLPN128",
    "ARCHITECTURES",
    "build_model",
    "denoise_patchwise",
    "as_image_denoiser",
]


class ICNN(PretrainedMixin, nn.Module):
    """Base class: an input-convex potential ``potential(y) -> (B,)`` whose forward pass is its gradient.

    Subclasses build ``self.lin`` (``lin[0]`` is the first layer on the input, ``lin[1:]`` the non-negative
    W-layers) and ``self.res`` (the input-skip H-layers) and implement :meth:`potential`.

    Every LPN saves and loads as a model folder: ``lpn.save_pretrained(dir)`` (``model.safetensors``,
    ``config.json`` with the constructor's arguments, ``provenance.json``), ``MLPLPN.from_pretrained(dir)`` (or
    :func:`~iclr24.lpn.load_model`, which also reads the training checkpoints).
    """

    lin: nn.ModuleList
    res: nn.ModuleList
    alpha: float
    input_shape: tuple[int, ...]

    # -- the potential and its gradient -------------------------------------------------------------------------
    def potential(self, y: torch.Tensor) -> torch.Tensor:  # pragma: no cover - abstract
        """psi(y) per sample, shape ``(B,)``."""
        raise NotImplementedError

    def scalar(self, y: torch.Tensor) -> torch.Tensor:
        """psi(y) with shape ``(B, 1)`` (the official code's name)."""
        return self.potential(y).unsqueeze(1)

    def forward(self, y: torch.Tensor, create_graph: bool | None = None) -> torch.Tensor:
        """f(y) = grad_y psi(y), same shape as ``y``.

        ``create_graph`` (default: only when gradients are enabled and the module is training or ``y`` itself
        requires grad) keeps the graph of the gradient, needed to train (double backprop) or to differentiate f.
        At inference (``model.eval()``), f is computed without keeping that graph, and ``y`` is never modified.
        """
        self.check_input(y)
        if create_graph is None:
            create_graph = torch.is_grad_enabled() and (self.training or y.requires_grad)
        with torch.enable_grad():
            yy = y if (create_graph and y.requires_grad) else y.detach().requires_grad_(True)
            psi = self.potential(yy).sum()
            # Sec. 3 (LPN): f_theta(y) = grad_y psi_theta(y)
            (grad,) = torch.autograd.grad(psi, yy, create_graph=create_graph)
        return grad if create_graph else grad.detach()

    # -- constraints and initialisation -------------------------------------------------------------------------
    def w_layers(self) -> list[nn.Module]:
        """The layers whose weights must stay non-negative (W_2..W_K and w)."""
        return list(self.lin[1:])

    @torch.no_grad()
    def clamp_weights(self) -> None:
        """Project the W-layers onto W >= 0 (call after every optimiser step; the official ``wclip``)."""
        for layer in self.w_layers():
            layer.weight.clamp_(min=0.0)

    wclip = clamp_weights

    @torch.no_grad()
    def init_weights(self, mean: float = -10.0, std: float = 0.1) -> None:
        """Official initialisation: W-layer weights exp(N(mean, std)) (about 4.5e-5 by default), positive."""
        for layer in self.w_layers():
            layer.weight.normal_(mean, std).exp_()

    def weights_nonnegative(self) -> bool:
        """True when every W-layer weight is >= 0 (psi is then convex)."""
        return all(bool((layer.weight >= 0).all()) for layer in self.w_layers())

    # -- config -------------------------------------------------------------------------------------------------
    def config(self) -> dict[str, Any]:
        """``{"arch": name, **constructor kwargs}``: enough to rebuild the module (saved beside checkpoints)."""
        return {"arch": self.arch, **self._kwargs}

    arch: str = ""
    _kwargs: dict[str, Any]

    def pretrained_config(self) -> dict[str, Any]:
        """The constructor's keyword arguments (what :meth:`config` holds, without ``arch``)."""
        return dict(self._kwargs)

    def check_input(self, y: torch.Tensor) -> None:
        """Raise ValueError when ``y`` does not have shape ``(B, *input_shape)``."""
        if not isinstance(y, torch.Tensor):
            raise InputError(f"{type(self).__name__} expects a torch.Tensor, got {type(y).__name__}")
        if y.dim() != len(self.input_shape) + 1 or tuple(y.shape[1:]) != tuple(self.input_shape):
            raise InputError(
                f"{type(self).__name__} expects input of shape (B, {', '.join(map(str, self.input_shape))}), "
                f"got {tuple(y.shape)}; reshape your batch or build the model for this size"
            )
        if not y.is_floating_point():
            raise InputError(f"{type(self).__name__} expects floating-point input, got {y.dtype}")
        w = next(iter(self.parameters()), None)
        if w is not None and w.dtype != y.dtype:
            raise InputError(
                f"{type(self).__name__} has {w.dtype} weights but the input is {y.dtype}: convert one"
            )

    def extra_repr(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self._kwargs.items())


def _pos(name: str, v: Any, kind: type = int) -> None:
    """A positive size (an int up to 2**16, a layer count up to 1024) or a positive finite number."""
    top = 1024 if name == "layers" else 2**16
    if kind is int:
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= top:
            raise InputError(f"{name} must be an integer in [1, {top}], got {v!r}")
    elif isinstance(v, bool) or not isinstance(v, int | float) or not (0 < v < math.inf):
        raise InputError(f"{name} must be a positive finite number, got {v!r}")


def _nonneg(name: str, v: Any) -> None:
    if isinstance(v, bool) or not isinstance(v, int | float) or not (v >= 0) or math.isinf(v):
        raise InputError(f"{name} must be a finite number >= 0, got {v!r}")


def _checked_config(**kwargs: Any) -> dict[str, Any]:
    """The constructor's keyword arguments, checked in order (``beta`` > 0, ``alpha`` >= 0, every other one a
    positive int) and kept as :meth:`ICNN.config` holds them (``beta`` and ``alpha`` as floats)."""
    out: dict[str, Any] = {}
    for name, v in kwargs.items():
        if name == "alpha":
            _nonneg(name, v)
        else:
            _pos(name, v, float if name == "beta" else int)
        out[name] = float(v) if name in ("alpha", "beta") else v
    return out


class MLPLPN(ICNN):
    """Fully connected LPN (official ``exps/laplacian/network.py``, with the alpha term added).

    Layers: Linear(in -> hidden, no bias) -> ``layers`` x [W: Linear(hidden -> hidden, no bias) + H: Linear(in ->
    hidden)] -> W: Linear(hidden -> 1, no bias) + H: Linear(in -> 1); Softplus(beta) between.
    Input ``(B, in_dim)``. The 1-D Laplacian experiment uses in_dim=1, hidden=50, layers=4, beta=10, alpha=0.
    """

    arch = "mlp"

    def __init__(
        self, *, in_dim: int = 1, hidden: int = 50, layers: int = 4, beta: float = 10.0, alpha: float = 0.0
    ) -> None:
        super().__init__()
        self._kwargs = _checked_config(in_dim=in_dim, hidden=hidden, layers=layers, beta=beta, alpha=alpha)
        self.input_shape = (in_dim,)
        self.lin = nn.ModuleList(
            [nn.Linear(in_dim, hidden, bias=False)]
            + [nn.Linear(hidden, hidden, bias=False) for _ in range(layers)]
            + [nn.Linear(hidden, 1, bias=False)]
        )
        self.res = nn.ModuleList([nn.Linear(in_dim, hidden) for _ in range(layers)] + [nn.Linear(in_dim, 1)])
        self.act = nn.Softplus(beta=beta)
        self.alpha = float(alpha)
        self.init_weights()

    analytic_gradient: bool = True

    def forward(self, y: torch.Tensor, create_graph: bool | None = None) -> torch.Tensor:
        """f(y) = grad psi(y). By default computed by a hand-written backward pass through the MLP (the same
        maths as autograd with fewer graph nodes; about as fast on CPU); ``analytic_gradient = False`` uses autograd."""
        if not self.analytic_gradient:
            return super().forward(y, create_graph)
        self.check_input(y)
        if create_graph is None:
            create_graph = torch.is_grad_enabled() and (self.training or y.requires_grad)
        with torch.set_grad_enabled(create_graph):
            return self._gradient(y)

    def _act_grad(self, a: torch.Tensor) -> torch.Tensor:
        """softplus_beta'(a) = sigmoid(beta a), exactly 1 above torch's linear threshold (as autograd sees it)."""
        ba = self.act.beta * a
        return torch.where(ba > self.act.threshold, torch.ones_like(a), torch.sigmoid(ba))

    def _gradient(self, y: torch.Tensor) -> torch.Tensor:
        # Sec. 3 (LPN): f(y) = grad_y psi(y), by backpropagation through the ICNN written out by hand
        pre = [self.lin[0](y)]  # a_1
        z = self.act(pre[0])
        for w, h in zip(self.lin[1:-1], self.res[:-1]):
            pre.append(w(z) + h(y))  # a_k
            z = self.act(pre[-1])
        # d psi / d y = res_K^T 1 + 2 alpha y + sum_k H_k^T delta_k + W_1^T delta_1 (first layer acts on y)
        grad = self.res[-1].weight.expand(len(y), -1) + 2 * self.alpha * y
        delta = self.lin[-1].weight.expand(len(y), -1)  # d psi / d z_K
        for k in range(len(pre) - 1, 0, -1):
            delta = delta * self._act_grad(pre[k])  # softplus'(a) = sigmoid(beta a)
            grad = grad + delta @ self.res[k - 1].weight
            delta = delta @ self.lin[k].weight  # d psi / d z_{k-1}
        delta = delta * self._act_grad(pre[0])
        return grad + delta @ self.lin[0].weight

    def potential(self, y: torch.Tensor) -> torch.Tensor:
        # Sec. 3 (LPN): z_1 = g(H_1 y)
        z = self.act(self.lin[0](y))
        for w, h in zip(self.lin[1:-1], self.res[:-1]):
            # Sec. 3 (LPN): z_k = g(W_k z_{k-1} + H_k y + b_k), W_k >= 0
            z = self.act(w(z) + h(y))
        # Sec. 3 (LPN): psi(y) = w^T z_K + (affine in y) + alpha ||y||^2, w >= 0
        out = self.lin[-1](z) + self.res[-1](y)
        return out.squeeze(1) + self.alpha * y.pow(2).sum(1)


class ConvLPN28(ICNN):
    """The official 28x28 conv LPN (``lpn/networks/lpn_mnist.py``): hidden 64, beta 10, alpha 0.01.

    Conv3x3 in->hidden (no bias); three W-convs hidden->hidden at strides 2, 1, 2 (28 -> 14 -> 14 -> 7), each plus an
    H-conv of the bilinearly resized input; W: Linear(hidden*49 -> 64) + H: Linear(in*49 -> 64); Softplus;
    W: Linear(64 -> 1). Input ``(B, in_channels, 28, 28)``.
    """

    arch = "conv28"

    def __init__(
        self, *, in_channels: int = 1, hidden: int = 64, beta: float = 10.0, alpha: float = 0.01
    ) -> None:
        super().__init__()
        self._kwargs = _checked_config(in_channels=in_channels, hidden=hidden, beta=beta, alpha=alpha)
        self.input_shape = (in_channels, 28, 28)
        c, h = in_channels, hidden
        self.lin = nn.ModuleList(
            [
                nn.Conv2d(c, h, 3, stride=1, padding=1, bias=False),  # 28
                nn.Conv2d(h, h, 3, stride=2, padding=1, bias=False),  # 14
                nn.Conv2d(h, h, 3, stride=1, padding=1, bias=False),  # 14
                nn.Conv2d(h, h, 3, stride=2, padding=1, bias=False),  # 7
                nn.Linear(h * 49, 64, bias=False),
                nn.Linear(64, 1, bias=False),
            ]
        )
        self.res = nn.ModuleList(
            [
                nn.Conv2d(c, h, 3, stride=2, padding=1),  # on y at 28 -> 14
                nn.Conv2d(c, h, 3, stride=1, padding=1),  # on y at 14 -> 14
                nn.Conv2d(c, h, 3, stride=2, padding=1),  # on y at 14 -> 7
                nn.Linear(c * 49, 64),
            ]
        )
        self.act = nn.Softplus(beta=beta)
        self.alpha = float(alpha)
        self.init_weights()

    def potential(self, y: torch.Tensor) -> torch.Tensor:
        b = y.shape[0]
        # Sec. 3 (LPN): z_1 = g(H_1 y) (a 3x3 conv)
        z = self.act(self.lin[0](y))
        for w, h, size in zip(self.lin[1:4], self.res[:3], (28, 14, 14)):
            y_s = F.interpolate(y, (size, size), mode="bilinear")  # linear in y: keeps convexity
            # Sec. 3 (LPN): z_k = g(W_k z_{k-1} + H_k y + b_k), W_k >= 0 (strided convs)
            z = self.act(w(z) + h(y_s))
        y7 = F.interpolate(y, (7, 7), mode="bilinear").reshape(b, -1)
        z = self.act(self.lin[4](z.reshape(b, -1)) + self.res[3](y7))
        # Sec. 3 (LPN): psi(y) = w^T z_K + alpha ||y||^2, w >= 0
        out = self.lin[5](z).squeeze(1)
        return out + self.alpha * y.pow(2).flatten(1).sum(1)


class PatchLPN128(ICNN):
    """The official 128x128 LPN (``lpn/networks/lpn_128.py``): hidden 256, beta 100, alpha 1e-6.

    Conv3x3 in->hidden (bias); five W-convs at strides 2,1,2,1,2 (to size/8), each plus an H-conv of the resized
    input; W: conv (size/8)x(size/8) hidden -> 64 plus H-conv of the input at size/8; Softplus; mean pool;
    W: Linear(64 -> 1). ``image_size`` (default 128, any multiple of 8) is the patch size. Apply to larger images
    with :func:`denoise_patchwise`. Input ``(B, in_channels, image_size, image_size)``.
    """

    arch = "patch128"

    def __init__(
        self,
        *,
        in_channels: int = 3,
        hidden: int = 256,
        beta: float = 100.0,
        alpha: float = 1e-6,
        image_size: int = 128,
    ) -> None:
        super().__init__()
        self._kwargs = _checked_config(
            in_channels=in_channels, hidden=hidden, beta=beta, alpha=alpha, image_size=image_size
        )
        if image_size % 8:
            raise InputError(f"image_size must be a multiple of 8, got {image_size}")
        self.input_shape = (in_channels, image_size, image_size)
        c, h, k = in_channels, hidden, image_size // 8
        strides = (2, 1, 2, 1, 2)
        self.lin = nn.ModuleList(
            [nn.Conv2d(c, h, 3, stride=1, padding=1, bias=True)]
            + [nn.Conv2d(h, h, 3, stride=s, padding=1, bias=False) for s in strides]
            + [nn.Conv2d(h, 64, k, bias=False), nn.Linear(64, 1)]
        )
        self.res = nn.ModuleList(
            [nn.Conv2d(c, h, 3, stride=s, padding=1) for s in strides] + [nn.Conv2d(c, 64, k)]
        )
        self._sizes = (image_size, image_size // 2, image_size // 2, image_size // 4, image_size // 4)
        self.act = nn.Softplus(beta=beta)
        self.alpha = float(alpha)
        self.init_weights()

    def potential(self, y: torch.Tensor) -> torch.Tensor:
        s = self.input_shape[-1]
        # Sec. 3 (LPN): z_1 = g(H_1 y + b_1)
        z = self.act(self.lin[0](y))
        for w, h, size in zip(self.lin[1:6], self.res[:5], self._sizes):
            y_s = y if size == s else F.interpolate(y, (size, size), mode="bilinear")
            # Sec. 3 (LPN): z_k = g(W_k z_{k-1} + H_k y + b_k), W_k >= 0
            z = self.act(w(z) + h(y_s))
        y8 = F.interpolate(y, (s // 8, s // 8), mode="bilinear")
        z = self.act(self.lin[6](z) + self.res[5](y8)).mean(dim=(2, 3))  # (B, 64)
        # Sec. 3 (LPN): psi(y) = w^T mean-pool(z_K) + b + alpha ||y||^2, w >= 0
        out = self.lin[7](z).squeeze(1)
        return out + self.alpha * y.pow(2).flatten(1).sum(1)


ARCHITECTURES: dict[str, type[ICNN]] = {"mlp": MLPLPN, "conv28": ConvLPN28, "patch128": PatchLPN128}


def build_model(arch: str, **kwargs: Any) -> ICNN:
    """Build an LPN by architecture name (``mlp``, ``conv28``, ``patch128``) and keyword arguments."""
    if arch not in ARCHITECTURES:
        raise InputError(f"unknown architecture {arch!r}; choose one of {', '.join(ARCHITECTURES)}")
    try:
        return ARCHITECTURES[arch](**kwargs)
    except TypeError as e:
        raise InputError(f"bad arguments for architecture {arch!r}: {e}") from None


def denoise_patchwise(
    model: nn.Module, image: torch.Tensor, patch: int = 128, stride: int = 64, batch_size: int = 16
) -> torch.Tensor:
    """Apply a patch model to an image ``(C, H, W)`` or ``(B, C, H, W)`` with H, W >= patch: overlapping patches
    (``patch``, ``stride``; the last row/column of patches is aligned to the border) are denoised and averaged
    (the official ``lpn_denoise_patch``)."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a patch LPN (an nn.Module), got {describe(model)}")
    check_tensor(image, "image", ndim=(3, 4), kind="float", finite=True)
    for name, v in (("patch", patch), ("stride", stride), ("batch_size", batch_size)):
        check_int(v, name, minimum=1, maximum=2**16)
    w = next(iter(model.parameters()), None)
    if w is not None and w.dtype != image.dtype:
        raise InputError(f"the model has {w.dtype} weights but the image is {image.dtype}: convert one")
    single = image.dim() == 3
    x = image.unsqueeze(0) if single else image
    if x.dim() != 4:
        raise InputError(f"image must be (C, H, W) or (B, C, H, W), got shape {tuple(image.shape)}")
    if stride <= 0 or patch <= 0:
        raise InputError(f"patch and stride must be positive, got patch={patch}, stride={stride}")
    _, _, hh, ww = x.shape
    if hh < patch or ww < patch:
        raise InputError(f"image is {hh}x{ww}, smaller than the patch size {patch}; resize or pad it first")

    def starts(n: int) -> list[int]:
        s = list(range(0, n - patch + 1, stride))
        if s[-1] != n - patch:
            s.append(n - patch)
        return s

    coords = [(i, j) for i in starts(hh) for j in starts(ww)]
    out = torch.zeros_like(x)
    count = torch.zeros_like(x[:, :1])
    for b in range(x.shape[0]):
        for k in range(0, len(coords), batch_size):
            cs = coords[k : k + batch_size]
            patches = torch.stack([x[b, :, i : i + patch, j : j + patch] for i, j in cs])
            den = model(patches)
            for (i, j), p in zip(cs, den):
                out[b, :, i : i + patch, j : j + patch] += p.detach()
                count[b, :, i : i + patch, j : j + patch] += 1
    out = out / count
    return out[0] if single else out


def as_image_denoiser(model: ICNN, patch_stride: int | None = None):
    """A callable ``(B, C, H, W) -> (B, C, H, W)`` applying ``model`` to whole images: flattened for ``mlp``
    (C*H*W must equal in_dim), directly for ``conv28`` (28x28), patch-wise for ``patch128`` (H, W >= patch)."""
    if not isinstance(model, ICNN):
        raise InputError(f"expected an LPN (ICNN subclass), got {type(model).__name__}")

    def apply(x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4:
            raise InputError(f"expected images (B, C, H, W), got shape {tuple(x.shape)}")
        if isinstance(model, MLPLPN):
            d = model.input_shape[0]
            if x[0].numel() != d:
                raise InputError(
                    f"this mlp model takes {d} values per image, got an image of shape "
                    f"{tuple(x.shape[1:])} ({x[0].numel()} values)"
                )
            return model(x.reshape(len(x), d)).reshape(x.shape)
        if isinstance(model, PatchLPN128) and tuple(x.shape[1:]) != tuple(model.input_shape):
            c, p = model.input_shape[0], model.input_shape[-1]
            if x.shape[1] != c:
                raise InputError(f"this model takes {c}-channel images, got {x.shape[1]} channels")
            return denoise_patchwise(model, x, patch=p, stride=patch_stride or p // 2)
        return model(x)

    return apply
