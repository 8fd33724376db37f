"""The SHOT-style split every SFDA codebase uses: feature extractor ``F`` -> bottleneck ``B`` -> classifier ``C``.

``B`` = Linear(d -> A) + BatchNorm1d (SHOT's ``feat_bootleneck`` type "bn"; its dropout is unused), ``C`` = a
weight-normalised Linear(A -> C) (``feat_classifier`` type "wn"). ``z = B(F(x))`` is the bottleneck feature that the
banks, the covariances and the implicit augmentation work on; the classifier's effective weight
``w = g * v / |v|`` enters IFA.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn
from torch.nn.utils import parametrizations

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin

__all__ = [
    "SFDAModel",
    "Bottleneck",
    "weight_norm_classifier",
    "digits_backbone",
    "digits_model",
    "pointnet_backbone",
    "pointnet_model",
    "split_timm",
    "check_timm_name",
    "load_shot_checkpoint",
]


class Bottleneck(nn.Sequential):
    """Linear(in_dim -> bottleneck_dim) + BatchNorm1d (SHOT's bottleneck)."""

    def __init__(self, in_dim: int, bottleneck_dim: int = 256):
        super().__init__(nn.Linear(in_dim, bottleneck_dim), nn.BatchNorm1d(bottleneck_dim))
        self.in_dim, self.bottleneck_dim = in_dim, bottleneck_dim


def weight_norm_classifier(bottleneck_dim: int, num_classes: int) -> nn.Linear:
    """A weight-normalised Linear(bottleneck_dim -> num_classes); ``.weight`` is the effective ``g v / |v|``."""
    return parametrizations.weight_norm(nn.Linear(bottleneck_dim, num_classes), dim=0)


class SFDAModel(PretrainedMixin, nn.Module):
    """``logits = classifier(bottleneck(features(x)))`` with each part reachable by name.

    ``classifier`` must be linear in ``z`` (an ``nn.Linear``, weight-normalised or not): IFA needs its weight rows.

    Built from your own modules, ``SFDAModel(features, bottleneck, classifier)``; or by architecture name,
    ``SFDAModel(arch="digits" | "pointnet" | "timm:<name>", num_classes=..., bottleneck_dim=..., **arch_kwargs)``,
    which is what :func:`digits_model`, :func:`pointnet_model` and :func:`split_timm` (given a name) build, and what
    ``save_pretrained(folder)`` records in ``config.json`` so that ``SFDAModel.from_pretrained(folder)`` rebuilds
    it (a model of your own modules saves its ``state_dict`` instead). ``class_names`` and ``image_size`` (the side
    the image views crop to) travel with the model when set.
    """

    def __init__(
        self,
        features: nn.Module | None = None,
        bottleneck: nn.Module | None = None,
        classifier: nn.Module | None = None,
        *,
        arch: str | None = None,
        class_names: list[str] | None = None,
        image_size: int | None = None,
        **arch_kwargs,
    ):
        super().__init__()
        self.arch_config: dict | None = None
        if arch is not None:
            if features is not None or bottleneck is not None or classifier is not None:
                raise InputError("give either the three modules or arch=..., not both")
            built = _build_arch(arch, **arch_kwargs)
            features, bottleneck, classifier = built.features, built.bottleneck, built.classifier
            self.arch_config = built.arch_config
        elif arch_kwargs:
            raise InputError(
                f"{sorted(arch_kwargs)} are arguments of an architecture: give arch=... with them"
            )
        elif features is None or bottleneck is None or classifier is None:
            raise InputError("SFDAModel needs features, bottleneck and classifier modules (or arch=...)")
        if class_names is not None and (
            not isinstance(class_names, list | tuple) or not all(isinstance(c, str) for c in class_names)
        ):
            raise InputError(f"class_names must be a list of strings, got {describe(class_names)}")
        if image_size is not None:
            check_int(image_size, "image_size", minimum=1, maximum=2**16)
        self.class_names = None if class_names is None else list(class_names)
        self.image_size = image_size
        weight = getattr(classifier, "weight", None)
        if not isinstance(weight, torch.Tensor) or weight.ndim != 2:
            raise InputError(
                f"the classifier must be a linear layer with a 2-D .weight [C, A], got {type(classifier).__name__}"
            )
        self.features, self.bottleneck, self.classifier = features, bottleneck, classifier
        if self.class_names is not None and len(self.class_names) != self.num_classes:
            raise InputError(
                f"{len(self.class_names)} class_names for a classifier of {self.num_classes} classes"
            )

    def pretrained_config(self) -> dict:
        """What ``config.json`` records: the architecture and its arguments (see the class docstring)."""
        if self.arch_config is None:
            raise InputError(
                "this SFDAModel was built from your own modules, so no config can rebuild it: build it with "
                "digits_model / pointnet_model / split_timm(<timm name>) (or SFDAModel(arch=...)) to save it as a "
                "model folder, or save its state_dict yourself"
            )
        cfg = dict(self.arch_config)
        if self.class_names is not None:
            cfg["class_names"] = list(self.class_names)
        if self.image_size is not None:
            cfg["image_size"] = int(self.image_size)
        return cfg

    @classmethod
    def from_pretrained(cls, folder, *, strict: bool = True, **overrides) -> SFDAModel:
        """The model ``save_pretrained`` wrote into ``folder``, in eval mode, on the CPU."""
        return super().from_pretrained(folder, strict=strict, **overrides).eval()

    @property
    def num_classes(self) -> int:
        return int(self.classifier.weight.shape[0])

    @property
    def bottleneck_dim(self) -> int:
        return int(self.classifier.weight.shape[1])

    def classifier_weight(self) -> torch.Tensor:
        """The effective weight rows ``w`` [C, A] (``g v / |v|`` for a weight-normalised layer)."""
        return self.classifier.weight

    def embed(self, x: torch.Tensor) -> torch.Tensor:
        """``z = B(F(x))`` [N, A]."""
        if not isinstance(x, torch.Tensor) or not x.is_floating_point() or x.dim() < 2:
            raise InputError(f"the model takes a floating batch [N, ...], got {describe(x)}")
        w = next(iter(self.features.parameters()), None)
        if w is not None and w.dtype != x.dtype:
            raise InputError(f"the model's weights are {w.dtype}, the input is {x.dtype}: convert one")
        try:
            f = self.features(x)
        except RuntimeError as e:
            if isinstance(e, torch.OutOfMemoryError):
                raise
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise InputError(
                f"the feature extractor cannot take a batch of shape {tuple(x.shape)} ({first})"
            ) from None
        if f.ndim != 2:
            f = torch.flatten(f, 1)
        return self.bottleneck(f)

    def forward_with_features(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        z = self.embed(x)
        if z.ndim != 2 or z.shape[1] != self.bottleneck_dim:
            raise InputError(
                f"the bottleneck gives features of shape {tuple(z.shape)} but the classifier expects "
                f"[N, {self.bottleneck_dim}]: the bottleneck output and the classifier input do not compose"
            )
        return z, self.classifier(z)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_with_features(x)[1]


def digits_backbone(in_channels: int = 1, width: int = 32) -> nn.Sequential:
    """Conv(1->32)+BN+ReLU -> Conv(32->64)+BN+ReLU -> AdaptiveAvgPool(2) -> flatten: a 4*2*width = 256-d feature
    for 8x8 (or larger) images."""
    return nn.Sequential(
        nn.Conv2d(in_channels, width, 3, padding=1),
        nn.BatchNorm2d(width),
        nn.ReLU(),
        nn.Conv2d(width, 2 * width, 3, padding=1),
        nn.BatchNorm2d(2 * width),
        nn.ReLU(),
        nn.AdaptiveAvgPool2d(2),
        nn.Flatten(),
    )


MAX_WIDTH = 2**17  # widths, bottlenecks and class counts: refused past this before any layer is allocated


def digits_model(
    num_classes: int = 10, bottleneck_dim: int = 64, in_channels: int = 1, width: int = 32
) -> SFDAModel:
    """The small CNN of the CPU reproduction: 256-d features, an ``A``-d bottleneck, a weight-norm classifier."""
    for name, v in (("num_classes", num_classes), ("bottleneck_dim", bottleneck_dim), ("width", width)):
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_WIDTH:
            raise InputError(f"{name} must be a positive int (at most {MAX_WIDTH}), got {v!r}")
    model = SFDAModel(
        digits_backbone(in_channels, width),
        Bottleneck(8 * width, bottleneck_dim),
        weight_norm_classifier(bottleneck_dim, num_classes),
    )
    model.arch_config = dict(arch="digits", num_classes=num_classes, bottleneck_dim=bottleneck_dim,
                             in_channels=in_channels, width=width)  # fmt: skip
    return model


def check_timm_name(name: str, flag: str = "model") -> str:
    """``name`` if timm can build it (an architecture name, optionally with a ``.tag``), else a one-line
    ``ValueError`` with the closest names timm knows (checked before any model or data is built)."""
    import difflib

    import timm

    if not isinstance(name, str) or not name:
        raise InputError(f"{flag}: expected a timm model name such as resnet18, got {name!r}")
    if not timm.is_model(name):
        close = difflib.get_close_matches(name.split(".")[0], timm.list_models(), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(close)}?" if close else "; timm.list_models() lists them"
        raise InputError(f"{flag}{name}: timm has no model of that name{hint}")
    return name


def split_timm(
    model: nn.Module | str, num_classes: int, bottleneck_dim: int = 256, **create_kwargs
) -> SFDAModel:
    """Turn a timm model (or a timm model name, built with ``pretrained=False`` unless ``create_kwargs`` say
    otherwise) into the F/B/C split: its head is removed (``reset_classifier(0)``), so ``F(x)`` is the pooled
    ``num_features``-d feature; ``B`` and ``C`` are new. Train them with :func:`iclr24.sfda2.train_source`."""
    check_int(num_classes, "num_classes", minimum=1, maximum=MAX_WIDTH)
    check_int(bottleneck_dim, "bottleneck_dim", minimum=1, maximum=MAX_WIDTH)
    name, kwargs = None, {}
    if isinstance(model, str):
        import timm

        check_timm_name(model, flag="timm model ")
        name, kwargs = model, {k: v for k, v in create_kwargs.items() if k != "pretrained"}
        create_kwargs.setdefault("pretrained", False)
        model = timm.create_model(model, **create_kwargs)
    elif isinstance(getattr(model, "pretrained_cfg", None), dict):  # a timm model: its architecture's name
        name = model.pretrained_cfg.get("architecture")
    if not hasattr(model, "reset_classifier") or not hasattr(model, "num_features"):
        raise InputError(
            f"expected a timm model (with reset_classifier and num_features), got {type(model).__name__}"
        )
    model.reset_classifier(0)
    # the pooled output's width: models with a pre-logits head (MobileNetV3, ...) widen num_features to
    # head_hidden_size, which timm sets on every model it builds (equal to num_features where there is none)
    d = int(getattr(model, "head_hidden_size", None) or model.num_features)
    out = SFDAModel(model, Bottleneck(d, bottleneck_dim), weight_norm_classifier(bottleneck_dim, num_classes))
    if isinstance(name, str):  # rebuilt by from_pretrained without pretrained weights: the folder holds them
        spec = dict(arch=f"timm:{name}", num_classes=num_classes, bottleneck_dim=bottleneck_dim, **kwargs)
        try:
            out.arch_config = json.loads(json.dumps(spec))
        except (TypeError, ValueError):  # create_kwargs that are not JSON: saved as a state_dict only
            pass
    return out


def pointnet_backbone(width: int = 64) -> nn.Sequential:
    """A small PointNet feature extractor for ``(N, 3, P)`` clouds: shared MLP 3 -> w -> 2w -> 4w (Conv1d + BN +
    ReLU) and a max over points, giving a ``4w``-d feature (PointDA-10's baselines use PointNet)."""
    layers: list[nn.Module] = []
    dims = [3, width, 2 * width, 4 * width]
    for a, b in zip(dims[:-1], dims[1:]):
        layers += [nn.Conv1d(a, b, 1), nn.BatchNorm1d(b), nn.ReLU()]
    return nn.Sequential(*layers, nn.AdaptiveMaxPool1d(1), nn.Flatten())


def pointnet_model(num_classes: int = 10, bottleneck_dim: int = 256, width: int = 64) -> SFDAModel:
    """PointNet -> bottleneck -> weight-norm classifier, for point-cloud folders (:func:`point_cloud_folder`)."""
    for name, v in (("num_classes", num_classes), ("bottleneck_dim", bottleneck_dim), ("width", width)):
        check_int(v, name, minimum=1, maximum=MAX_WIDTH)
    model = SFDAModel(
        pointnet_backbone(width),
        Bottleneck(4 * width, bottleneck_dim),
        weight_norm_classifier(bottleneck_dim, num_classes),
    )
    model.arch_config = dict(
        arch="pointnet", num_classes=num_classes, bottleneck_dim=bottleneck_dim, width=width
    )
    return model


def _build_arch(arch: str, **kwargs) -> SFDAModel:
    """The model of an architecture name (``digits``, ``pointnet``, ``timm:<name>``) and its arguments."""
    if not isinstance(arch, str):
        raise InputError(f"arch must be 'digits', 'pointnet' or 'timm:<name>', got {describe(arch)}")
    factories = {"digits": digits_model, "pointnet": pointnet_model}
    try:
        if arch in factories:
            return factories[arch](**kwargs)
        if arch.startswith("timm:") and len(arch) > 5:
            return split_timm(arch[5:], **kwargs)
    except TypeError as e:
        raise InputError(f"arch={arch!r}: {e}") from None
    raise InputError(f"arch must be 'digits', 'pointnet' or 'timm:<name>', got {arch!r}")


def load_shot_checkpoint(folder: str | os.PathLike, model: SFDAModel, prefix: str = "source") -> SFDAModel:
    """Load SHOT/SF(DA)^2-format source weights (``<folder>/<prefix>_F.pt``, ``_B.pt``, ``_C.pt``, as written by the
    official ``src_pretrain.py`` and SHOT's released checkpoints) into ``model`` (e.g. ``split_timm("resnet101",
    12)``). F's keys are torchvision ResNet names (timm ResNets share them); B's are ``bottleneck.*`` and ``bn.*``; C's
    are ``fc.weight_g``, ``fc.weight_v``, ``fc.bias`` (old-style weight norm). Read with ``weights_only=True``."""
    folder = Path(folder)
    parts = {}
    for part in ("F", "B", "C"):
        path = folder / f"{prefix}_{part}.pt"
        if not path.is_file():
            raise InputFileError(
                f"missing {path}: expected {prefix}_F.pt, {prefix}_B.pt and {prefix}_C.pt from the official "
                "src_pretrain.py (or SHOT's released source models)"
            )
        try:
            parts[part] = torch.load(path, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - a truncated or foreign file is the user's
            raise InputError(f"{path}: not a readable state dict: {type(e).__name__}: {e}") from None
    b_map = {"bottleneck.": "0.", "bn.": "1."}
    bsd = {}
    for k, v in parts["B"].items():
        for old, new in b_map.items():
            if k.startswith(old):
                bsd[new + k[len(old) :]] = v
    c = parts["C"]
    if "fc.weight_v" not in c:
        raise InputError(
            f"{folder / (prefix + '_C.pt')}: expected weight-norm keys fc.weight_g/fc.weight_v/fc.bias"
        )
    csd = {
        "parametrizations.weight.original0": c["fc.weight_g"],
        "parametrizations.weight.original1": c["fc.weight_v"],
        "bias": c["fc.bias"],
    }
    C, A = c["fc.weight_v"].shape
    if (C, A) != (model.num_classes, model.bottleneck_dim):
        raise InputError(
            f"the checkpoint's classifier is {C} classes x {A} bottleneck but the model has "
            f"{model.num_classes} x {model.bottleneck_dim}"
        )
    fsd = {k: v for k, v in parts["F"].items() if not k.startswith("fc.")}
    for name, module, sd in (
        ("F", model.features, fsd),
        ("B", model.bottleneck, bsd),
        ("C", model.classifier, csd),
    ):
        try:
            module.load_state_dict(sd)
        except RuntimeError as e:
            raise InputError(
                f"{prefix}_{name}.pt does not fit the model's {name} part: {str(e)[:300]}"
            ) from None
    return model
