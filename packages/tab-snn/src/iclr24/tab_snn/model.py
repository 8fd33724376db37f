"""Spiking networks built from a linear/conv layer -> temporal norm -> LIF: an MLP, VGG-9 and ResNet-19.

``save_pretrained(dir)`` / ``<Class>.from_pretrained(dir)`` write and read a model folder (model.safetensors with the
weights and the norms' running statistics, config.json, provenance.json). All networks take ``[N, T, ...]`` (a static ``[N, ...]`` input is direct-encoded, i.e. repeated T times, as the
official ``input_expand``) and return per-step logits ``[N, T, classes]``; the prediction is their mean over t
(official ``main.py``: ``CE(outputs.mean(1), labels)``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_layer_widths
from iclr24.paperkit.pretrained import PretrainedMixin

from .neurons import LIF
from .neurons import direct_encoding
from .norms import NORMS
from .norms import make_norm

__all__ = ["SeqToANN", "SpikingMLP", "SpikingResNet19", "SpikingVGG9", "build_model"]


class SeqToANN(nn.Module):
    """Apply a stateless module to every step: fold ``[N, T, ...]`` into ``[N*T, ...]`` and back."""

    def __init__(self, *modules: nn.Module) -> None:
        super().__init__()
        self.module = modules[0] if len(modules) == 1 else nn.Sequential(*modules)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        N, T = x.shape[:2]
        y = self.module(x.flatten(0, 1))
        return y.view(N, T, *y.shape[1:])


def _check_common(T: int, norm: str) -> None:
    if not isinstance(T, int) or isinstance(T, bool) or not 1 <= T <= 4096:
        raise InputError(f"T (number of time steps) must be an int >= 1 (at most 4096), got {T!r}")
    if not isinstance(norm, str) or norm.lower() not in NORMS:
        raise InputError(f"unknown norm {norm!r}; expected one of {', '.join(NORMS)}")


def _check_conv_args(
    T: object,
    norm: object,
    num_classes: object,
    in_channels: object,
    input_size: object,
    width: object,
    dropout: object,
) -> None:
    """The checks of the two conv nets (VGG-9 and ResNet-19 both shrink the image side by 8)."""
    _check_common(T, norm)
    check_int(num_classes, "num_classes", minimum=1, maximum=2**20)
    check_int(in_channels, "in_channels", minimum=1, maximum=2**12)
    check_int(input_size, "input_size", minimum=8, maximum=2**12)
    check_float(width, "width", minimum=0, maximum=64, open_min=True)
    check_float(dropout, "dropout", minimum=0, maximum=1, open_max=True)
    if input_size % 8 != 0 or input_size < 8:
        raise InputError(f"input_size must be a multiple of 8 (the net shrinks it by 8), got {input_size}")
    if not width > 0:
        raise InputError(f"width must be > 0, got {width}")


class _SpikingNet(nn.Module):
    T: int
    static_dims: int  # number of dims of one static sample (1 for vectors, 3 for images)

    def _expand(self, x: torch.Tensor) -> torch.Tensor:
        if not isinstance(x, torch.Tensor):
            raise InputError(f"{type(self).__name__} expects a torch.Tensor, got {type(x).__name__}")
        if not x.is_floating_point():
            raise InputError(f"{type(self).__name__} expects floating-point input, got {x.dtype}")
        w = next(iter(self.parameters()), None)
        if w is not None and w.dtype != x.dtype:
            raise InputError(
                f"{type(self).__name__} has {w.dtype} weights but the input is {x.dtype}: convert one"
            )
        want = (
            (self.in_features,)
            if hasattr(self, "in_features")
            else (
                (self.in_channels, self.input_size, self.input_size) if hasattr(self, "in_channels") else None
            )
        )
        if want is not None and x.dim() >= len(want) and tuple(x.shape[-len(want) :]) != want:
            raise InputError(
                f"{type(self).__name__} takes samples of shape {list(want)} (static, or per step), "
                f"got input of shape {tuple(x.shape)}"
            )
        if x.dim() == self.static_dims + 1:
            return direct_encoding(x, self.T)
        if x.dim() == self.static_dims + 2:
            if x.shape[1] != self.T:
                raise InputError(
                    f"{type(self).__name__}: input {tuple(x.shape)} read as [N, T, ...] has {x.shape[1]} steps, "
                    f"but the model was built with T={self.T}"
                )
            return x
        raise InputError(
            f"{type(self).__name__} expects [N, T, ...] with {self.static_dims + 2} dims or a static "
            f"[N, ...] with {self.static_dims + 1} dims, got shape {tuple(x.shape)}"
        )


class SpikingMLP(PretrainedMixin, _SpikingNet):
    """``Linear(no bias) -> Norm -> LIF`` per hidden layer, then ``Linear -> classes`` per step.

    The CPU experiments of this package use ``hidden=(128, 128)``.
    """

    def __init__(
        self,
        in_features: int,
        num_classes: int,
        T: int,
        *,
        hidden: Sequence[int] = (128, 128),
        norm: str = "tab",
        tau: float = 0.9,
        v_th: float = 1.0,
        gamma: float = 1.0,
    ) -> None:
        super().__init__()
        _check_common(T, norm)
        check_int(in_features, "in_features", minimum=1, maximum=2**20)
        check_int(num_classes, "num_classes", minimum=1, maximum=2**20)
        check_layer_widths(hidden)
        self.in_features = in_features
        if in_features < 1 or num_classes < 1 or any(h < 1 for h in hidden):
            raise InputError(
                f"in_features, num_classes and hidden sizes must be >= 1, got {in_features}, {num_classes}, "
                f"{tuple(hidden)}"
            )
        self.T, self.static_dims, self.norm = T, 1, norm.lower()
        layers: list[nn.Module] = []
        d = in_features
        for h in hidden:
            layers += [SeqToANN(nn.Linear(d, h, bias=False)), make_norm(norm, h, T, layout="NT")]
            layers.append(LIF(tau, v_th, gamma=gamma))
            d = h
        self.features = nn.Sequential(*layers)
        self.head = SeqToANN(nn.Linear(d, num_classes))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.features(self._expand(x)))


def _conv_norm(cin: int, cout: int, T: int, norm: str, *, stride: int = 1, k: int = 3, alpha: float = 1.0):
    return nn.Sequential(
        SeqToANN(nn.Conv2d(cin, cout, k, stride, k // 2, bias=False)),
        make_norm(norm, cout, T, layout="NT", alpha=alpha),
    )


def _fc_head(
    channels: int, input_size: int, hidden: int, num_classes: int, dropout: float
) -> tuple[SeqToANN, SeqToANN]:
    """The classifier of the conv nets on the flattened ``channels x (input_size/8)^2`` features:
    Dropout + FC ``hidden``, then Dropout + FC classes."""
    flat = channels * (input_size // 8) ** 2
    fc1 = SeqToANN(nn.Dropout(dropout), nn.Linear(flat, hidden))
    fc2 = SeqToANN(nn.Dropout(dropout), nn.Linear(hidden, num_classes))
    return fc1, fc2


def _init_convs(model: nn.Module) -> None:
    for m in model.modules():
        if isinstance(m, nn.Conv2d):
            nn.init.kaiming_normal_(m.weight, mode="fan_out", nonlinearity="relu")


class SpikingVGG9(PretrainedMixin, _SpikingNet):
    """The paper's VGG-9 (official ``model.py:VGG9``): conv3x3 -> norm -> LIF for
    [64, 64, AP2, 128, 128, AP2, 256, 256, 256, AP2], then Dropout 0.25 + FC 1024, Dropout 0.25 + FC classes.

    ``width`` scales every channel count (1.0 = the paper's); ``input_size`` is the image side (32 for CIFAR,
    48 for DVS-CIFAR10 frames).
    """

    plan = (64, 64, "A", 128, 128, "A", 256, 256, 256, "A")

    def __init__(
        self,
        num_classes: int = 10,
        T: int = 4,
        *,
        in_channels: int = 3,
        input_size: int = 32,
        norm: str = "tab",
        tau: float = 0.9,
        v_th: float = 1.0,
        gamma: float = 1.0,
        width: float = 1.0,
        dropout: float = 0.25,
    ) -> None:
        super().__init__()
        _check_conv_args(T, norm, num_classes, in_channels, input_size, width, dropout)
        self.in_channels, self.input_size = in_channels, input_size
        self.T, self.static_dims, self.norm = T, 3, norm.lower()
        layers: list[nn.Module] = []
        c = in_channels
        for item in self.plan:
            if item == "A":
                layers.append(SeqToANN(nn.AvgPool2d(2, 2)))
                continue
            cout = max(1, round(item * width))
            layers += [*_conv_norm(c, cout, T, norm), LIF(tau, v_th, gamma=gamma)]
            c = cout
        self.features = nn.Sequential(*layers)
        self.fc1, self.fc2 = _fc_head(c, input_size, max(1, round(1024 * width)), num_classes, dropout)
        _init_convs(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.features(self._expand(x))
        return self.fc2(self.fc1(torch.flatten(x, 2)))


class _BasicBlock(nn.Module):
    """conv-norm-LIF-conv-norm (+ shortcut) -> LIF; the norms before the addition get tdBN's alpha = 1/sqrt(2)."""

    def __init__(
        self, cin: int, cout: int, stride: int, T: int, norm: str, tau: float, v_th: float, gamma: float
    ):
        super().__init__()
        a = 2**-0.5
        self.conv1 = _conv_norm(cin, cout, T, norm, stride=stride)
        self.lif1 = LIF(tau, v_th, gamma=gamma)
        self.conv2 = _conv_norm(cout, cout, T, norm, alpha=a)
        self.shortcut = (
            _conv_norm(cin, cout, T, norm, stride=stride, k=1, alpha=a)
            if stride != 1 or cin != cout
            else nn.Identity()
        )
        self.lif2 = LIF(tau, v_th, gamma=gamma)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.lif2(self.conv2(self.lif1(self.conv1(x))) + self.shortcut(x))


class SpikingResNet19(PretrainedMixin, _SpikingNet):
    """ResNet-19 as used by TET/TEBN/TAB: conv 128, blocks [3, 3, 2] at 128/256/512 channels (strides 1, 2, 2),
    AvgPool2 -> FC 256 -> FC classes (the official ``model.py:ResNet`` layout, which itself does not run).
    """

    def __init__(
        self,
        num_classes: int = 10,
        T: int = 4,
        *,
        in_channels: int = 3,
        input_size: int = 32,
        norm: str = "tab",
        tau: float = 0.9,
        v_th: float = 1.0,
        gamma: float = 1.0,
        width: float = 1.0,
        blocks: Sequence[int] = (3, 3, 2),
        dropout: float = 0.25,
    ) -> None:
        super().__init__()
        _check_conv_args(T, norm, num_classes, in_channels, input_size, width, dropout)
        self.in_channels, self.input_size = in_channels, input_size
        self.T, self.static_dims, self.norm = T, 3, norm.lower()
        chans = [max(1, round(c * width)) for c in (128, 256, 512)]
        self.stem = nn.Sequential(*_conv_norm(in_channels, chans[0], T, norm), LIF(tau, v_th, gamma=gamma))
        layers: list[nn.Module] = []
        c = chans[0]
        for i, (cout, n) in enumerate(zip(chans, blocks, strict=True)):
            for j in range(n):
                stride = 2 if (i > 0 and j == 0) else 1
                layers.append(_BasicBlock(c, cout, stride, T, norm, tau, v_th, gamma))
                c = cout
        self.layers = nn.Sequential(*layers)
        self.pool = SeqToANN(nn.AvgPool2d(2))
        self.fc1, self.fc2 = _fc_head(c, input_size, max(1, round(256 * width)), num_classes, dropout)
        _init_convs(self)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.pool(self.layers(self.stem(self._expand(x))))
        return self.fc2(self.fc1(torch.flatten(x, 2)))


def build_model(arch: str, **kwargs) -> nn.Module:
    """``arch`` in ``mlp | vgg9 | resnet19``; keyword arguments go to the class."""
    table = {"mlp": SpikingMLP, "vgg9": SpikingVGG9, "resnet19": SpikingResNet19}
    if arch not in table:
        raise InputError(f"unknown architecture {arch!r}; expected one of {', '.join(table)}")
    return table[arch](**kwargs)
