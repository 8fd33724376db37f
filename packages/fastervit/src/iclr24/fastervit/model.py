"""The FasterViT network (Hatamizadeh et al., ICLR 2024): conv stem, two conv stages, two stages of Hierarchical
Attention (HAT) blocks (the blocks are in :mod:`.blocks`), with the module and parameter names of the official release so its checkpoints load with
``strict=True``.

Written from the paper and from reading NVlabs/FasterViT; no code is copied. Differences from the official code that
do not change the computation at its own resolutions: fused ``scaled_dot_product_attention``; position biases cached
in inference (keyed on the versions of their MLP weights, so they never go stale); stage geometry computed from the
input at run time, so one model runs at any input size (padding stage maps to whole windows, as the official
``any_res`` models do); carrier tokens regrouped correctly on non-square grids.

timm's model contract: ``torch.jit.script`` compiles the model (Python-only paths sit behind
``torch.jit.is_scripting()``, build-time choices are TorchScript constants), and timm's FX tracer settings trace it
(each stage an FX leaf, the input check a graph node).
"""

from collections.abc import Sequence

import torch
import torch.fx
import torch.nn.functional as F
import torch.utils.checkpoint
from timm.layers import LayerNorm2d
from timm.layers import trunc_normal_
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.pretrained import PretrainedMixin

from .blocks import DERIVED_BUFFERS
from .blocks import FasterViTLayer
from .blocks import PatchEmbed
from .blocks import _check_sizes
from .blocks import _pair
from .blocks import check_images

__all__ = ["FasterViT"]


class FasterViT(PretrainedMixin, nn.Module):
    """FasterViT: stem (H/4) -> 2 conv stages -> 2 HAT stages (downsampling between stages) -> norm, pool, head.

    Defaults are FasterViT-0. ``resolution`` fixes the carrier-token grid the model is built for (its buffers);
    inputs of other sizes run too (geometry recomputed per input). Inputs must have H and W divisible by 32 unless
    ``any_resolution=True`` (then stage maps are zero-padded to whole windows, as in the official ``any_res``).

    ``model.save_pretrained(dir)`` writes a model folder (``model.safetensors`` with the official state-dict keys,
    ``config.json`` with the constructor's arguments, ``provenance.json`` with timm's ``pretrained_cfg``);
    ``FasterViT.from_pretrained(dir)`` builds it back with that ``pretrained_cfg``, so timm's data config and
    ``fastervit validate`` treat it as the variant it was created as. timm also reads the weights alone:
    ``timm.create_model(name, checkpoint_path="dir/model.safetensors", ...)``.
    """

    def __init__(
        self,
        dim: int = 64,
        in_dim: int = 64,
        depths: Sequence[int] = (2, 3, 6, 5),
        window_size: Sequence[int] = (7, 7, 7, 7),
        ct_size: int = 2,
        mlp_ratio: float = 4.0,
        num_heads: Sequence[int] = (2, 4, 8, 16),
        resolution: int | Sequence[int] = 224,
        drop_path_rate: float = 0.2,
        in_chans: int = 3,
        num_classes: int = 1000,
        qkv_bias: bool = True,
        qk_scale: float | None = None,
        drop_rate: float = 0.0,
        attn_drop_rate: float = 0.0,
        layer_scale: float | None = None,
        layer_scale_conv: float | None = None,
        layer_norm_last: bool = False,
        hat: Sequence[bool] | None = (False, False, True, False),
        do_propagation: bool = False,
        global_pool: str = "avg",
        any_resolution: bool = False,
    ) -> None:
        super().__init__()
        n = len(depths)
        if n != 4 or len(num_heads) != 4 or len(window_size) != 4:
            raise InputError(
                f"depths, num_heads and window_size need 4 entries (one per stage), got {list(depths)}, "
                f"{list(num_heads)}, {list(window_size)}"
            )
        hat = [True] * n if hat is None else list(hat)
        if len(hat) != n:
            raise InputError(f"hat needs {n} flags, got {hat}")
        if global_pool not in ("avg", ""):
            raise InputError(f"global_pool must be 'avg' or '', got {global_pool!r}")
        _check_sizes(dim=dim, in_dim=in_dim, in_chans=in_chans)
        check_int(num_classes, "num_classes", minimum=0, maximum=2**20)
        for i in range(n):
            _check_sizes(**{f"depths[{i}]": depths[i], f"num_heads[{i}]": num_heads[i]})
            check_int(window_size[i], f"window_size[{i}]", minimum=1, maximum=64)
        check_float(drop_path_rate, "drop_path_rate", minimum=0.0, maximum=1.0, open_max=True)
        res = _pair(resolution)
        self.resolution = res
        self.in_chans = in_chans
        self.any_resolution = any_resolution
        self.num_classes = num_classes
        self.global_pool = global_pool
        self.drop_rate = drop_rate
        self.num_features = self.head_hidden_size = int(dim * 2 ** (n - 1))
        self.patch_embed = PatchEmbed(in_chans=in_chans, in_dim=in_dim, dim=dim)
        dpr = [float(v) for v in torch.linspace(0, drop_path_rate, sum(depths), device="cpu")]
        self.levels = nn.ModuleList()
        self.feature_info = []
        for i in range(n):
            stage_res = [int(2 ** (-2 - i) * r) for r in res]
            self.levels.append(
                FasterViTLayer(
                    dim=int(dim * 2**i),
                    depth=depths[i],
                    num_heads=num_heads[i],
                    window_size=window_size[i],
                    ct_size=ct_size,
                    mlp_ratio=mlp_ratio,
                    qkv_bias=qkv_bias,
                    qk_scale=qk_scale,
                    conv=i < 2,
                    drop=drop_rate,
                    attn_drop=attn_drop_rate,
                    drop_path=dpr[sum(depths[:i]) : sum(depths[: i + 1])],
                    downsample=i < 3,
                    layer_scale=layer_scale,
                    layer_scale_conv=layer_scale_conv,
                    input_resolution=stage_res,
                    only_local=not hat[i],
                    do_propagation=do_propagation,
                )
            )
            self.feature_info.append(dict(num_chs=int(dim * 2**i), reduction=4 * 2**i, module=f"levels.{i}"))
        self.norm = LayerNorm2d(self.num_features) if layer_norm_last else nn.BatchNorm2d(self.num_features)
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()
        self.grad_checkpointing = False
        self.apply(self._init_weights)

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, nn.Linear):
            trunc_normal_(m.weight, std=0.02)
            if m.bias is not None:
                nn.init.zeros_(m.bias)
        elif isinstance(m, nn.LayerNorm | LayerNorm2d | nn.BatchNorm2d):
            nn.init.ones_(m.weight)
            nn.init.zeros_(m.bias)

    @torch.jit.ignore
    def no_weight_decay_keywords(self) -> set[str]:
        return {"rpb"}

    @torch.jit.unused
    def check_input(self, x: torch.Tensor) -> None:
        """ValueError for a tensor that is not (B, in_chans, H, W) with a usable H, W (see :func:`check_images`)."""
        check_images(x, self.in_chans, self.any_resolution)

    def forward_features(self, x: torch.Tensor) -> torch.Tensor:
        """(B, C, H, W) -> normalised last stage map (B, num_features, H/32, W/32)."""
        x = check_images(x, self.in_chans, self.any_resolution)
        x = self.patch_embed(x)
        for level in self.levels:
            if not torch.jit.is_scripting() and self.grad_checkpointing and torch.is_grad_enabled():
                x = torch.utils.checkpoint.checkpoint(level, x, use_reentrant=False)
            else:
                x = level(x)
        return self.norm(x)

    @torch.jit.ignore
    def set_grad_checkpointing(self, enable: bool = True) -> None:
        """Recompute each stage in the backward pass instead of storing its activations (timm's API)."""
        self.grad_checkpointing = enable

    def forward_head(self, x: torch.Tensor, pre_logits: bool = False) -> torch.Tensor:
        if self.global_pool == "avg":
            x = torch.flatten(self.avgpool(x), 1)
        if self.drop_rate > 0 and self.training:
            x = F.dropout(x, p=self.drop_rate)
        return x if pre_logits else self.head(x)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.forward_head(self.forward_features(x))

    def forward_intermediates(
        self,
        x: torch.Tensor,
        indices: int | Sequence[int] | None = None,
        norm: bool = False,
        stop_early: bool = False,
        output_fmt: str = "NCHW",
        intermediates_only: bool = False,
    ):
        """timm's feature API: the stage maps before each downsampler (strides 4, 8, 16, 32)."""
        from timm.models._features import feature_take_indices

        if output_fmt != "NCHW":
            raise InputError(f"output_fmt must be 'NCHW', got {output_fmt!r}")
        take, max_index = feature_take_indices(len(self.levels), indices)
        self.check_input(x)
        x = self.patch_embed(x)
        feats = []
        last = max_index if stop_early or intermediates_only else len(self.levels) - 1
        for i, level in enumerate(self.levels[: last + 1]):
            if self.grad_checkpointing and torch.is_grad_enabled():
                y = torch.utils.checkpoint.checkpoint(level.forward_blocks, x, use_reentrant=False)
            else:
                y = level.forward_blocks(x)
            if i in take:
                feats.append(self.norm(y) if norm and i == len(self.levels) - 1 else y)
            x = y if level.downsample is None else level.downsample(y)
        if intermediates_only:
            return feats
        return self.norm(x), feats

    def prune_intermediate_layers(
        self, indices: int | Sequence[int] = 1, prune_norm: bool = False, prune_head: bool = True
    ) -> list[int]:
        from timm.models._features import feature_take_indices

        take, max_index = feature_take_indices(len(self.levels), indices)
        self.levels = self.levels[: max_index + 1]
        if max_index < 3:  # the last kept stage's output feeds nothing
            self.levels[-1].downsample = None
        if prune_norm:
            self.norm = nn.Identity()
        if prune_head:
            self.reset_classifier(0, "")
        return take

    @torch.jit.ignore
    def get_classifier(self) -> nn.Module:
        return self.head

    def reset_classifier(self, num_classes: int, global_pool: str | None = None) -> None:
        self.num_classes = num_classes
        if global_pool is not None:
            self.global_pool = global_pool
        self.head = nn.Linear(self.num_features, num_classes) if num_classes > 0 else nn.Identity()

    def pretrained_config(self) -> dict:
        """The constructor's arguments, with the head as it is now (after ``reset_classifier``)."""
        cfg = super().pretrained_config()
        cfg.update(num_classes=int(self.num_classes), global_pool=self.global_pool)
        return cfg

    def save_pretrained(self, folder, *, provenance=None):
        """paperkit's model folder; ``provenance.json`` also records timm's ``pretrained_cfg`` (the variant, its
        input size, crop_pct, interpolation, mean/std) under ``timm_pretrained_cfg``."""
        prov = dict(provenance or {})
        cfg = getattr(self, "pretrained_cfg", None)
        if cfg and "timm_pretrained_cfg" not in prov:
            prov["timm_pretrained_cfg"] = {k: v for k, v in dict(cfg).items() if _is_json_value(v)}
        return super().save_pretrained(folder, provenance=prov)

    @classmethod
    def from_pretrained(cls, folder, *, strict: bool = True, **overrides):
        """Build the model a :meth:`save_pretrained` folder holds (CPU weights), with its timm ``pretrained_cfg``."""
        import json
        from pathlib import Path

        from iclr24.paperkit.pretrained import PROVENANCE_FILE

        model = super().from_pretrained(folder, strict=strict, **overrides)
        prov = json.loads((Path(folder) / PROVENANCE_FILE).read_text(encoding="utf-8"))  # checked on load
        cfg = prov.get("timm_pretrained_cfg") if isinstance(prov, dict) else None
        if isinstance(cfg, dict):
            cfg = {k: tuple(v) if isinstance(v, list) else v for k, v in cfg.items()}
            model.pretrained_cfg = model.default_cfg = cfg
        return model

    def switch_to_deploy(self) -> "FasterViT":
        """Cache every position bias/embedding in its buffer (the official deploy mode); returns self."""
        for m in self.modules():
            if m is not self and hasattr(m, "switch_to_deploy"):
                m.switch_to_deploy()
        return self

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """``nn.Module.load_state_dict``; with ``strict`` a mismatch raises ValueError naming the first bad key.
        Geometry buffers (relative_coords_table, relative_position_index, relative_bias) are recomputed, not
        learned: checkpoints built for another resolution load too."""
        if strict:
            own = self.state_dict()
            learned = lambda k: k.rsplit(".", 1)[-1] not in DERIVED_BUFFERS  # noqa: E731
            for k in sorted(k for k in own if learned(k)):
                if k not in state_dict:
                    raise InputError(
                        f"checkpoint lacks {k!r} (shape {tuple(own[k].shape)}): it was saved from "
                        "another variant or architecture"
                    )
                if tuple(state_dict[k].shape) != tuple(own[k].shape):
                    raise InputError(
                        f"checkpoint key {k!r} has shape {tuple(state_dict[k].shape)}, this model "
                        f"expects {tuple(own[k].shape)}: it was saved from another variant"
                    )
            extra = sorted(k for k in state_dict if k not in own)
            if extra:
                raise InputError(
                    f"checkpoint has {len(extra)} keys this model lacks, first {extra[0]!r}: it was "
                    "saved from another variant or architecture"
                )
        return super().load_state_dict(state_dict, strict=strict, assign=assign)


def _is_json_value(v) -> bool:
    return (
        v is None
        or isinstance(v, (bool, int, float, str))
        or (isinstance(v, (list, tuple)) and all(isinstance(e, (bool, int, float, str)) for e in v))
    )
