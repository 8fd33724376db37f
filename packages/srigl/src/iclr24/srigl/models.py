"""Models of the experiments: the digits MLP, and any timm model by name."""

from __future__ import annotations

from collections.abc import Sequence

from torch import nn

from iclr24.paperkit.errors import InputError, check_int, describe

__all__ = ["mlp", "small_cnn", "build_model"]


def mlp(in_features: int = 64, hidden: Sequence[int] = (256, 256), n_classes: int = 10) -> nn.Sequential:
    """``Linear -> ReLU -> ... -> Linear``: the 64-256-256-10 digits MLP by default."""
    check_int(in_features, "in_features", minimum=1, maximum=2**24)
    check_int(n_classes, "n_classes", minimum=1, maximum=2**20)
    if isinstance(hidden, str | bytes) or not isinstance(hidden, Sequence):
        raise InputError(f"hidden must be a sequence of layer widths, got {describe(hidden)}")
    for h in hidden:
        check_int(h, "each hidden width", minimum=1, maximum=2**17)
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
