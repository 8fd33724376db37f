"""Models of the experiments: the digits MLP, and any timm model by name; :class:`SparseModel`, a trained sparse
network with its masks as one model folder (``save_pretrained`` / ``from_pretrained``)."""

from __future__ import annotations

from collections.abc import Mapping
from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_layer_widths
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

__all__ = ["mlp", "small_cnn", "build_model", "SparseModel"]


def mlp(in_features: int = 64, hidden: Sequence[int] = (256, 256), n_classes: int = 10) -> nn.Sequential:
    """``Linear -> ReLU -> ... -> Linear``: the 64-256-256-10 digits MLP by default."""
    check_int(in_features, "in_features", minimum=1, maximum=2**24)
    check_int(n_classes, "n_classes", minimum=1, maximum=2**20)
    check_layer_widths(hidden)
    dims = [in_features, *hidden]
    layers: list[nn.Module] = []
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    layers.append(nn.Linear(dims[-1], n_classes))
    return nn.Sequential(*layers)


def small_cnn(in_channels: int = 1, n_classes: int = 10, image_size: int = 28) -> nn.Sequential:
    """``Conv3x3(16) -> ReLU -> MaxPool2 -> Conv3x3(32) -> ReLU -> MaxPool2 -> Linear(128) -> ReLU -> Linear``:
    the small MNIST CNN of ``srigl reproduce --full``."""
    side = image_size // 4
    return nn.Sequential(
        nn.Conv2d(in_channels, 16, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 3, padding=1),
        nn.ReLU(),
        nn.MaxPool2d(2),
        nn.Flatten(),
        nn.Linear(32 * side * side, 128),
        nn.ReLU(),
        nn.Linear(128, n_classes),
    )


def build_model(
    spec: str, input_shape: Sequence[int], n_classes: int, hidden: Sequence[int] = (256, 256)
) -> nn.Module:
    """``"mlp"`` (on flattened inputs), ``"cnn"`` (:func:`small_cnn`, image inputs ``[C, H, W]``) or
    ``"timm:<name>"`` (e.g. ``timm:resnet18``; built untrained, offline; needs image inputs ``[C, H, W]``)."""
    if not isinstance(spec, str):
        raise InputError(f"spec must be 'mlp', 'cnn' or 'timm:<name>', got {describe(spec)}")
    if isinstance(input_shape, str | bytes) or not isinstance(input_shape, Sequence) or not input_shape:
        raise InputError(f"input_shape must be the per-sample shape, e.g. (64,), got {describe(input_shape)}")
    for s in input_shape:
        check_int(s, "each input_shape entry", minimum=1, maximum=2**24)
    check_int(n_classes, "n_classes", minimum=1, maximum=2**20)
    if spec == "mlp":
        n_in = 1
        for s in input_shape:
            n_in *= int(s)
        return mlp(n_in, hidden, n_classes)
    if spec == "cnn":
        if len(input_shape) != 3 or int(input_shape[1]) % 4 or input_shape[1] != input_shape[2]:
            raise InputError(
                f"model 'cnn' needs square image inputs [C, H, H] with H divisible by 4, got {tuple(input_shape)}"
            )
        return small_cnn(int(input_shape[0]), n_classes, int(input_shape[1]))
    if spec.startswith("timm:"):
        import timm

        name = spec.split(":", 1)[1]
        if name not in timm.list_models():
            raise InputError(f"unknown timm model {name!r}; see timm.list_models() (e.g. timm:resnet18)")
        if len(input_shape) != 3:
            raise InputError(
                f"timm models need image inputs [C, H, W]; the data has shape {tuple(input_shape)} "
                f"per sample (use --model mlp)"
            )
        kw = {"num_classes": n_classes, "in_chans": int(input_shape[0])}
        if "vit" in name or "deit" in name:
            kw["img_size"] = tuple(int(s) for s in input_shape[1:])
            kw["patch_size"] = 2 if int(input_shape[1]) <= 16 else 16
        return timm.create_model(name, pretrained=False, **kw)
    raise InputError(f"model must be 'mlp', 'cnn' or 'timm:<name>' (e.g. timm:resnet18), got {spec!r}")


class SparseModel(PretrainedMixin, nn.Module):
    """A sparse network and its masks, saved and loaded as one model folder.

    ``net`` is :func:`build_model` ``(model, input_shape, n_classes, hidden)``; ``masked`` names the sparse weights
    (parameter names of ``net``), whose boolean masks are buffers ``masks.m0``, ``masks.m1``, ... in that order, so
    ``model.safetensors`` holds the weights and the masks and ``config.json`` what rebuilds them::

        sm = SparseModel.from_trained(result.model, result.sparsifier, model="mlp", input_shape=(64,), n_classes=10)
        sm.save_pretrained("runs/srigl")           # or result.save_pretrained("runs/srigl")
        sm = SparseModel.from_pretrained("runs/srigl")
        fast = condense(sm)                        # the masks come with it

    ``forward`` is ``net``'s (the masked weights are stored as zeros)."""

    def __init__(
        self,
        *,
        model: str = "mlp",
        input_shape: Sequence[int] = (64,),
        n_classes: int = 10,
        hidden: Sequence[int] = (256, 256),
        masked: Sequence[str] = (),
    ) -> None:
        super().__init__()
        self.spec = model
        self.net = build_model(model, tuple(input_shape), n_classes, tuple(hidden))
        params = dict(self.net.named_parameters())
        if isinstance(masked, str | bytes) or not all(isinstance(n, str) for n in masked):
            raise InputError(
                f"masked must be a list of parameter names of the network, got {describe(masked)}"
            )
        unknown = [n for n in masked if n not in params]
        if unknown:
            raise InputError(f"masked names {unknown[:3]} are not parameters of the {model!r} network")
        self.masked = list(masked)
        self.masks = nn.Module()
        for i, name in enumerate(self.masked):
            self.masks.register_buffer(f"m{i}", torch.ones(params[name].shape, dtype=torch.bool))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x)

    def mask_dict(self) -> dict[str, torch.Tensor]:
        """``{weight name in net: bool mask}``: what :func:`~iclr24.srigl.condense` takes."""
        return {name: getattr(self.masks, f"m{i}") for i, name in enumerate(self.masked)}

    def density(self) -> float:
        """Active fraction of the masked weights."""
        masks = list(self.mask_dict().values())
        total = sum(m.numel() for m in masks)
        return sum(int(m.sum()) for m in masks) / total if total else 1.0

    @classmethod
    def from_trained(
        cls,
        net: nn.Module,
        masks: Mapping[str, torch.Tensor] | object,
        *,
        model: str,
        input_shape: Sequence[int],
        n_classes: int,
        hidden: Sequence[int] = (256, 256),
    ) -> SparseModel:
        """Wrap a trained network (a copy of its weights) and its masks (a sparsifier, or ``{name: mask}``); the
        network must be what :func:`build_model` builds for ``(model, input_shape, n_classes, hidden)``. Torch's
        global RNG is left as it was (the fresh network's initialisation draws from a fork of it)."""
        if hasattr(masks, "layers") and hasattr(masks, "state_dict"):  # a Sparsifier
            masks = {layer.name: layer.mask for layer in masks.layers}
        if not isinstance(masks, Mapping):
            raise InputError(f"masks must be a sparsifier or a dict of bool masks, got {describe(masks)}")
        with torch.random.fork_rng(devices=[]):
            sm = cls(model=model, input_shape=list(input_shape), n_classes=n_classes, hidden=list(hidden),
                     masked=list(masks))  # fmt: skip
        try:
            sm.net.load_state_dict(net.state_dict())
        except RuntimeError as e:
            first = str(e).strip().splitlines()[0]
            raise InputError(
                f"the network is not a {model!r} for input {tuple(input_shape)}: {first}"
            ) from None
        for i, (name, m) in enumerate(masks.items()):
            buf = getattr(sm.masks, f"m{i}")
            if tuple(m.shape) != tuple(buf.shape):
                raise InputError(f"mask of {name} has shape {tuple(m.shape)}, the weight {tuple(buf.shape)}")
            buf.copy_(m.detach().to("cpu", torch.bool))
        return sm.to(next(net.parameters()).device) if any(True for _ in net.parameters()) else sm
