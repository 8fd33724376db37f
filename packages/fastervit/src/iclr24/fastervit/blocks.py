"""FasterViT's building blocks (Hatamizadeh et al., ICLR 2024): the position biases, attention, the Hierarchical
Attention (HAT) block, carrier-token initialiser, conv block, downsampler, stem and one stage
(:class:`FasterViTLayer`), with the module and parameter names of the official release; :mod:`.model` assembles
them into :class:`~.model.FasterViT`. The input checks the blocks and the model share live here too.

Written from the paper and from reading NVlabs/FasterViT; no code is copied (see :mod:`.model` for the
differences from the official code and the TorchScript / FX contract the blocks keep).
"""

import functools
import warnings
from collections import OrderedDict
from collections.abc import Sequence

import torch
import torch.fx
import torch.nn.functional as F
import torch.utils.checkpoint
from timm.layers import DropPath
from timm.layers import LayerNorm2d
from timm.layers import register_notrace_function
from timm.layers import register_notrace_module
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int

from .ops import carrier_token_geometry
from .ops import centered_grid_coords
from .ops import ct_dewindow
from .ops import ct_window
from .ops import log_spaced_relative_coords
from .ops import pad_to_multiple
from .ops import relative_position_index
from .ops import window_partition
from .ops import window_reverse

__all__ = [
    "RelativePositionBias",
    "TokenPositionEmbedding",
    "Mlp",
    "WindowAttention",
    "HAT",
    "TokenInitializer",
    "ConvBlock",
    "Downsample",
    "PatchEmbed",
    "FasterViTLayer",
    "DERIVED_BUFFERS",
    "NonSquareCarrierGridWarning",
    "check_images",
    "check_map",
    "check_tokens",
]

# Buffers that are functions of the geometry (or caches of the weights): recomputed, never learned. A checkpoint
# may carry them at another resolution; loading keeps the model's own.
DERIVED_BUFFERS = ("relative_coords_table", "relative_position_index", "relative_bias")


class NonSquareCarrierGridWarning(UserWarning):
    """A HAT stage ran on a non-square grid of windows, where this implementation and the official ``any_res``
    code regroup carrier tokens differently (so official weights give different logits from the official code)."""


def _pair(v: int | Sequence[int]) -> tuple[int, int]:
    if isinstance(v, int) and not isinstance(v, bool):
        return (v, v)
    if not isinstance(v, Sequence) or len(v) != 2:
        raise InputError(f"expected an int or a pair (H, W), got {v!r}")
    return (check_int(v[0], "height"), check_int(v[1], "width"))


def _versions(module: nn.Module) -> tuple[int, ...]:
    return tuple(p._version for p in module.parameters())


@register_notrace_function  # a leaf call in timm's FX graphs: the traced model still checks real inputs
def check_images(x: torch.Tensor, in_chans: int, any_resolution: bool) -> torch.Tensor:
    """``x`` unchanged if it is a (B, in_chans, H, W) batch FasterViT can run (H, W multiples of the stride 32, or
    at least 32 for ``any_resolution`` models); ValueError saying what was expected and what came otherwise.

    TorchScript-compilable. Under FX symbolic tracing (a ``Proxy`` in place of the tensor) it checks nothing; with
    timm's tracer settings (``timm.layers.get_notrace_functions()``) it becomes a node of the graph instead, so the
    traced module checks the tensors it is given."""
    if not torch.jit.is_scripting():
        if isinstance(x, torch.fx.Proxy):
            return x
        if not isinstance(x, torch.Tensor):
            raise InputError(f"expected images (B, {in_chans}, H, W), got {type(x).__name__}")
    if x.dim() != 4:
        raise InputError(f"expected images (B, {in_chans}, H, W), got shape {list(x.shape)}")
    if x.shape[1] != in_chans:
        raise InputError(
            f"expected {in_chans} input channels, got {x.shape[1]} (shape {list(x.shape)}); "
            f"build the model with in_chans={x.shape[1]} or convert the images"
        )
    h = x.shape[2]
    w = x.shape[3]
    if any_resolution:
        if min(h, w) < 32:
            raise InputError(f"images must be at least 32x32, got {h}x{w}")
    elif h % 32 or w % 32:
        raise InputError(
            f"image size {h}x{w} is not divisible by the network stride 32 (stem /4, three "
            "downsamplers /2): resize or crop to a multiple of 32, or use a *_any_res model"
        )
    return x


def _check_sizes(**sizes: object) -> None:
    """Constructor sizes: each an int in [1, 2**16]; one InputError naming the first bad one, before any layer is
    allocated."""
    for name, v in sizes.items():
        check_int(v, name, minimum=1, maximum=2**16)


def _check_rate(value: object, name: str) -> None:
    check_float(value, name, minimum=0.0, maximum=1.0, open_max=True)


def _traced_or_not_a_tensor(x: torch.Tensor, what: str, expects: str) -> bool:
    """True for an fx Proxy (it has no shape yet: not checked); InputError when ``x`` is no tensor at all."""
    if not torch.jit.is_scripting():
        if isinstance(x, torch.fx.Proxy):
            return True
        if not isinstance(x, torch.Tensor):
            raise InputError(f"{what} expects {expects}, got {type(x).__name__}")
    return False


def _check_float_input(x: torch.Tensor, ref: torch.dtype, what: str, expects: str) -> None:
    """Floating-point input, float64 only to a float64 module (or the reverse would fail deep inside torch: say so
    at the boundary)."""
    if not x.is_floating_point():
        raise InputError(f"{what} expects {expects}, got dtype {x.dtype}")
    if (x.dtype == torch.float64) != (ref == torch.float64):
        raise InputError(f"{what} holds {ref} weights but got a {x.dtype} input: convert one to the other")


def check_tokens(x: torch.Tensor, dim: int, what: str, ref: torch.dtype = torch.float32) -> None:
    """A (B, N, dim) token tensor for ``what``; InputError otherwise (TorchScript-compilable)."""
    if _traced_or_not_a_tensor(x, what, f"tokens (B, N, {dim})"):
        return
    if x.dim() != 3 or x.shape[2] != dim or x.shape[0] == 0 or x.shape[1] == 0:
        raise InputError(f"{what} expects tokens (B, N, {dim}) with B, N >= 1, got shape {list(x.shape)}")
    _check_float_input(x, ref, what, "floating-point tokens")


def check_map(x: torch.Tensor, dim: int, what: str, ref: torch.dtype = torch.float32) -> None:
    """A (B, dim, H, W) feature map for ``what``; InputError otherwise (TorchScript-compilable)."""
    if _traced_or_not_a_tensor(x, what, f"a feature map (B, {dim}, H, W)"):
        return
    if x.dim() != 4 or x.shape[1] != dim or x.shape[0] == 0 or x.shape[2] == 0 or x.shape[3] == 0:
        raise InputError(f"{what} expects a feature map (B, {dim}, H, W), got shape {list(x.shape)}")
    _check_float_input(x, ref, what, "a floating-point feature map")


class _DerivedBufferLoading(nn.Module):
    """Loading keeps this module's own geometry buffers when a checkpoint has them at another size or lacks them."""

    def _load_from_state_dict(
        self, state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
    ):
        for name in DERIVED_BUFFERS:
            key = prefix + name
            own = self._buffers.get(name)
            if own is None:
                continue
            if key not in state_dict or tuple(state_dict[key].shape) != tuple(own.shape):
                state_dict[key] = own.detach().clone()
        super()._load_from_state_dict(
            state_dict, prefix, local_metadata, strict, missing_keys, unexpected_keys, error_msgs
        )


class RelativePositionBias(_DerivedBufferLoading):
    """Swin-v2 continuous relative position bias of one attention (``PosEmbMLPSwinv2D`` in the official code).

    B = 16 * sigmoid(MLP_{2->512->heads}(log-spaced offsets)) for the h x w tokens of a window, zero-padded in front
    for the extra (carrier) tokens that precede them in the sequence: (1, heads, N, N)."""

    def __init__(self, window_size: int | Sequence[int], num_heads: int, seq_length: int) -> None:
        super().__init__()
        self.window_size = _pair(window_size)
        _check_sizes(window_height=self.window_size[0], window_width=self.window_size[1], num_heads=num_heads)
        check_int(seq_length, "seq_length", minimum=self.window_size[0] * self.window_size[1], maximum=2**14)
        self.num_heads = num_heads
        self.cpb_mlp = nn.Sequential(
            nn.Linear(2, 512, bias=True), nn.ReLU(inplace=True), nn.Linear(512, num_heads, bias=False)
        )
        self.register_buffer(
            "relative_coords_table", log_spaced_relative_coords(self.window_size, self.window_size)
        )
        self.register_buffer("relative_position_index", relative_position_index(self.window_size))
        self.register_buffer("relative_bias", torch.zeros(1, num_heads, seq_length, seq_length))
        self.seq_length = seq_length
        self.deploy = False
        self._cache: tuple | None = None

    def _compute(self, n_tokens: int, grid: tuple[int, int]) -> torch.Tensor:
        if grid[0] == self.window_size[0] and grid[1] == self.window_size[1]:
            table, index = self.relative_coords_table, self.relative_position_index
        else:  # another grid (dynamic resolution): same MLP, offsets normalised by the built size
            dev = self.relative_coords_table.device
            table = log_spaced_relative_coords(grid, self.window_size).to(dev)
            index = relative_position_index(grid).to(dev)
        n_local = grid[0] * grid[1]
        bias = self.cpb_mlp(table).view(-1, self.num_heads)
        bias = bias[index.view(-1)].view(n_local, n_local, -1).permute(2, 0, 1)
        bias = 16 * torch.sigmoid(bias)
        extra = n_tokens - n_local  # carrier tokens come first; they get no relative bias
        if extra < 0:
            raise InputError(f"a sequence of {n_tokens} tokens is shorter than its {grid} window")
        if extra:
            bias = F.pad(bias, (extra, 0, extra, 0))
        return bias.unsqueeze(0).contiguous()

    def bias(self, n_tokens: int, grid: tuple[int, int] | None = None) -> torch.Tensor:
        """The additive attention bias (1, heads, n_tokens, n_tokens) for a window of ``grid`` tokens."""
        g = self.window_size if grid is None else grid
        built = g[0] == self.window_size[0] and g[1] == self.window_size[1]
        if self.deploy and built and self.relative_bias.shape[-1] == n_tokens:
            return self.relative_bias
        if torch.jit.is_scripting() or torch.is_grad_enabled():
            return self._compute(n_tokens, g)
        return self._cached(n_tokens, g)

    @torch.jit.unused
    def _cached(self, n_tokens: int, grid: tuple[int, int]) -> torch.Tensor:
        """Inference cache (eager only), keyed on the versions of the MLP weights so it never goes stale."""
        key = (n_tokens, grid, self.relative_coords_table.device, _versions(self.cpb_mlp))
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._compute(n_tokens, grid))
        return self._cache[1]

    def switch_to_deploy(self) -> None:
        """Store the bias of the built geometry in the ``relative_bias`` buffer and use it from now on."""
        with torch.no_grad():
            self.relative_bias = self._compute(self.seq_length, self.window_size).clone()
        self.deploy = True


class TokenPositionEmbedding(_DerivedBufferLoading):
    """Absolute positional embedding added to tokens of an h x w grid: MLP_{2->512->dim}(centred coordinates)
    (``PosEmbMLPSwinv1D``, used for window tokens and for carrier tokens)."""

    def __init__(self, dim: int, grid: int | Sequence[int], seq_length: int | None = None) -> None:
        super().__init__()
        self.grid = _pair(grid)
        _check_sizes(dim=dim, grid_height=self.grid[0], grid_width=self.grid[1])
        if seq_length is not None:
            check_int(seq_length, "seq_length", minimum=1, maximum=2**16)
        self.cpb_mlp = nn.Sequential(nn.Linear(2, 512, bias=True), nn.ReLU(), nn.Linear(512, dim, bias=False))
        n = seq_length if seq_length is not None else self.grid[0] * self.grid[1]
        self.register_buffer("relative_bias", torch.zeros(1, n, dim))
        self.deploy = False
        self._cache: tuple | None = None

    def _compute(self, grid: tuple[int, int], dtype: torch.dtype) -> torch.Tensor:
        dev = self.cpb_mlp[0].weight.device
        return self.cpb_mlp(centered_grid_coords(grid, device=dev, dtype=dtype)).unsqueeze(0)

    def embedding(
        self, grid: tuple[int, int] | None = None, dtype: torch.dtype = torch.float32
    ) -> torch.Tensor:
        """(1, h*w, dim) embedding of the grid."""
        g = self.grid if grid is None else grid
        built = g[0] == self.grid[0] and g[1] == self.grid[1]
        if self.deploy and built and self.relative_bias.shape[1] == g[0] * g[1]:
            return self.relative_bias
        if torch.jit.is_scripting() or torch.is_grad_enabled():
            return self._compute(g, dtype)
        return self._cached(g, dtype)

    @torch.jit.unused
    def _cached(self, grid: tuple[int, int], dtype: torch.dtype) -> torch.Tensor:
        key = (grid, dtype, self.cpb_mlp[0].weight.device, _versions(self.cpb_mlp))
        if self._cache is None or self._cache[0] != key:
            self._cache = (key, self._compute(grid, dtype))
        return self._cache[1]

    def forward(self, x: torch.Tensor, grid: tuple[int, int] | None = None) -> torch.Tensor:
        return x + self.embedding(grid, self.cpb_mlp[0].weight.dtype).to(x.dtype)

    def switch_to_deploy(self) -> None:
        with torch.no_grad():
            self.relative_bias = self._compute(self.grid, self.cpb_mlp[0].weight.dtype).clone()
        self.deploy = True


class Mlp(nn.Module):
    """MLP_{d -> r d -> d} with GELU."""

    def __init__(
        self,
        in_features: int,
        hidden_features: int | None = None,
        out_features: int | None = None,
        act_layer: type[nn.Module] = nn.GELU,
        drop: float = 0.0,
    ) -> None:
        super().__init__()
        hidden_features = hidden_features or in_features
        out_features = out_features or in_features
        self.fc1 = nn.Linear(in_features, hidden_features)
        self.act = act_layer()
        self.fc2 = nn.Linear(hidden_features, out_features)
        self.drop = nn.Dropout(drop)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.drop(self.fc2(self.drop(self.act(self.fc1(x)))))


class WindowAttention(nn.Module):
    """Multi-head self-attention over a (windowed) token sequence with the continuous relative position bias:
    softmax(q k^T / sqrt(d_h) + B) v (fused ``scaled_dot_product_attention``)."""

    def __init__(
        self,
        dim: int,
        num_heads: int = 8,
        qkv_bias: bool = True,
        qk_scale: float | None = None,
        attn_drop: float = 0.0,
        proj_drop: float = 0.0,
        resolution: int | Sequence[int] = 7,
        seq_length: int = 49,
    ) -> None:
        super().__init__()
        _check_sizes(dim=dim, num_heads=num_heads)
        _check_rate(attn_drop, "attn_drop")
        _check_rate(proj_drop, "proj_drop")
        if dim % num_heads:
            raise InputError(f"dim {dim} must be divisible by num_heads {num_heads}")
        self.num_heads = num_heads
        self.head_dim = dim // num_heads
        self.scale = qk_scale or self.head_dim**-0.5
        self.qkv = nn.Linear(dim, dim * 3, bias=qkv_bias)
        self.attn_drop = attn_drop
        self.proj = nn.Linear(dim, dim)
        self.proj_drop = nn.Dropout(proj_drop)
        self.pos_emb_funct = RelativePositionBias(resolution, num_heads, seq_length)
        self.resolution = _pair(resolution)

    def forward(self, x: torch.Tensor, grid: tuple[int, int] | None = None) -> torch.Tensor:
        """``x``: (B, N, C), the last h*w tokens forming the ``grid`` (default: the built window)."""
        check_tokens(x, self.num_heads * self.head_dim, "WindowAttention", self.qkv.weight.dtype)
        b, n, c = x.shape
        q, k, v = self.qkv(x).reshape(b, n, 3, self.num_heads, self.head_dim).permute(2, 0, 3, 1, 4).unbind(0)
        bias = self.pos_emb_funct.bias(n, grid).to(q.dtype)
        x = F.scaled_dot_product_attention(
            q, k, v, attn_mask=bias, scale=self.scale, dropout_p=self.attn_drop if self.training else 0.0
        )
        return self.proj_drop(self.proj(x.transpose(1, 2).reshape(b, n, c)))


class HAT(nn.Module):
    """Hierarchical attention block (Sec. 3.3 of the paper; plug-and-play: see :class:`FasterViTLayer`).

    Window tokens x_l: (B * nW, k*k, C); carrier tokens x_ct: (B, nW * s*s, C), grouped window by window. With
    carrier tokens (``sr_ratio`` > 1 windows per side when built):

    1. x_ct <- x_ct + PE(x_ct); x_ct <- x_ct + g1 MHSA(LN(x_ct)); x_ct <- x_ct + g2 MLP(LN(x_ct))   (global, per image)
    2. x_w = Concat(x_ct of the window, x_l + PE(x_l))
    3. x_w <- x_w + g3 MHSA(LN(x_w)); x_w <- x_w + g4 MLP(LN(x_w))                              (local, per window)
    4. split x_w into x_ct, x_l; in the last block of a stage with ``do_propagation``:
       x_l <- x_l + g1 Upsample_{s -> k}(x_ct)
    """

    __constants__ = ["hat"]  # TorchScript compiles only the branch this block was built with

    def __init__(
        self,
        dim: int,
        num_heads: int,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        qk_scale: float | None = None,
        drop: float = 0.0,
        attn_drop: float = 0.0,
        drop_path: float = 0.0,
        act_layer: type[nn.Module] = nn.GELU,
        norm_layer: type[nn.Module] = nn.LayerNorm,
        sr_ratio: int | Sequence[int] = 1,
        window_size: int = 7,
        last: bool = False,
        layer_scale: float | None = None,
        ct_size: int = 1,
        do_propagation: bool = False,
    ) -> None:
        super().__init__()
        self.sr_ratio = _pair(sr_ratio)
        _check_sizes(dim=dim, num_heads=num_heads, window_size=window_size, sr_ratio=max(self.sr_ratio))
        check_int(ct_size, "ct_size", minimum=0, maximum=64)
        check_float(mlp_ratio, "mlp_ratio", minimum=0, maximum=64, open_min=True)
        for name, rate in (("drop", drop), ("attn_drop", attn_drop), ("drop_path", drop_path)):
            _check_rate(rate, name)
        self.window_size = window_size
        self.cr_window = ct_size
        self.hat = max(self.sr_ratio) > 1 and ct_size > 0
        ct_per_window = ct_size**2 if self.hat else 0
        ct_grid = (ct_size * self.sr_ratio[0], ct_size * self.sr_ratio[1])
        ct_total = ct_per_window * self.sr_ratio[0] * self.sr_ratio[1]
        self.pos_embed = TokenPositionEmbedding(dim, window_size)
        self.norm1 = norm_layer(dim)
        # the window attention and the HAT's carrier-token attention share every setting but their token grid
        attention = functools.partial(
            WindowAttention,
            dim,
            num_heads=num_heads,
            qkv_bias=qkv_bias,
            qk_scale=qk_scale,
            attn_drop=attn_drop,
            proj_drop=drop,
        )
        self.attn = attention(resolution=window_size, seq_length=window_size**2 + ct_per_window)
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
        self.norm2 = norm_layer(dim)
        hidden = int(dim * mlp_ratio)
        self.mlp = Mlp(dim, hidden, act_layer=act_layer, drop=drop)
        use_ls = isinstance(layer_scale, int | float) and not isinstance(layer_scale, bool)
        self.gamma3 = nn.Parameter(layer_scale * torch.ones(dim)) if use_ls else 1.0
        self.gamma4 = nn.Parameter(layer_scale * torch.ones(dim)) if use_ls else 1.0
        if self.hat:
            self.hat_norm1 = norm_layer(dim)
            self.hat_norm2 = norm_layer(dim)
            # the official code sizes this bias for an int(sqrt(n_ct)) square grid; identical on square grids
            side = int(ct_total**0.5)
            self.hat_attn = attention(resolution=side, seq_length=ct_total)
            self.hat_mlp = Mlp(dim, hidden, act_layer=act_layer, drop=drop)
            self.hat_drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()
            self.hat_pos_embed = TokenPositionEmbedding(dim, ct_grid, seq_length=ct_total)
            self.gamma1 = nn.Parameter(layer_scale * torch.ones(dim)) if use_ls else 1.0
            self.gamma2 = nn.Parameter(layer_scale * torch.ones(dim)) if use_ls else 1.0
        self.last = last
        self.do_propagation = do_propagation

    def forward(
        self, x: torch.Tensor, carrier_tokens: torch.Tensor | None = None, grid: tuple[int, int] | None = None
    ) -> tuple[torch.Tensor, torch.Tensor | None]:
        """``x``: (B*nW, k*k, C); ``carrier_tokens``: (B, nW*s*s, C) or None; ``grid``: (nWh, nWw) windows per image
        (default: the built ``sr_ratio``). Returns the updated (x, carrier_tokens)."""
        k, s = self.window_size, self.cr_window
        check_tokens(x, self.attn.num_heads * self.attn.head_dim, "HAT", self.attn.qkv.weight.dtype)
        if x.dim() != 3 or x.shape[1] != k * k:
            raise InputError(f"HAT expects window tokens (B*nW, {k * k}, C), got shape {list(x.shape)}")
        if grid is None:
            g = self.sr_ratio
        else:
            g = grid
            if not torch.jit.is_scripting():
                g = _pair(grid)
        x = self.pos_embed(x, (k, k))
        ct_out = carrier_tokens
        if self.hat:
            if carrier_tokens is None:
                raise InputError(
                    "this HAT block was built with carrier tokens (sr_ratio > 1): pass carrier_tokens "
                    "from a TokenInitializer, or build it with sr_ratio=1 for plain window attention"
                )
            b, n_ct, c = carrier_tokens.shape
            n_win = g[0] * g[1]
            if n_ct != n_win * s * s or x.shape[0] != b * n_win:
                raise InputError(
                    f"carrier tokens of shape {list(carrier_tokens.shape)} do not match {n_win} windows of {s}x{s} "
                    f"tokens per image and window tokens of shape {list(x.shape)}"
                )
            ct_grid = (g[0] * s, g[1] * s)
            # HAT step 1: global attention among one image's carrier tokens (raster order for the position terms)
            ct = self.hat_pos_embed(ct_dewindow(carrier_tokens, g, s), ct_grid)
            # Eq. (Sec. 3.3, HAT 1a): x_ct = x_ct + gamma_1 * MHSA(LN(x_ct))
            ct = ct + self.hat_drop_path(self.gamma1 * self.hat_attn(self.hat_norm1(ct), ct_grid))
            # Eq. (Sec. 3.3, HAT 1b): x_ct = x_ct + gamma_2 * MLP_{d->4d->d}(LN(x_ct))
            ct = ct + self.hat_drop_path(self.gamma2 * self.hat_mlp(self.hat_norm2(ct)))
            # HAT step 2: each window attends to its own carrier tokens and local tokens
            ct = ct_window(ct, g, s).reshape(b * n_win, s * s, c)
            # Eq. (Sec. 3.3, HAT 2): x_w = Concat(x_l, x_ct), per window
            x = torch.cat((ct, x), dim=1)
        # Eq. (Sec. 3.3, HAT 3a): x_w = x_w + gamma_3 * MHSA(LN(x_w))
        x = x + self.drop_path(self.gamma3 * self.attn(self.norm1(x), (k, k)))
        # Eq. (Sec. 3.3, HAT 3b): x_w = x_w + gamma_4 * MLP_{d->4d->d}(LN(x_w))
        x = x + self.drop_path(self.gamma4 * self.mlp(self.norm2(x)))
        if self.hat:
            # Eq. (Sec. 3.3, HAT 4a): x_l, x_ct = Split(x_w)
            ctr, x = x.split([s * s, k * k], dim=1)
            ct_out = ctr.reshape(b, n_ct, c)
            if self.last and self.do_propagation:
                # HAT step 4: propagate carrier tokens back to the feature map (nearest upsampling s -> k)
                # Eq. (Sec. 3.3, HAT 4b): x = Upsample_{n^2 L -> H^2}(x_ct) + Merge_{n^2 k^2 -> H^2}(x_l)
                img = ctr.transpose(1, 2).reshape(-1, c, s, s).float()
                up = F.interpolate(img, size=(k, k), mode="nearest").flatten(2).transpose(1, 2).to(x.dtype)
                x = x + self.gamma1 * up
        return x, ct_out


class TokenInitializer(nn.Module):
    """Carrier-token initialisation, once per stage: x_ct = AvgPool(DWConv3x3(x)) -> (B, nW * s*s, C) grouped by
    window. The pooling tiles the (window-padded) map: see :func:`~iclr24.fastervit.ops.carrier_token_geometry`."""

    def __init__(
        self, dim: int, input_resolution: int | Sequence[int], window_size: int, ct_size: int = 1
    ) -> None:
        super().__init__()
        res = _pair(input_resolution)
        _check_sizes(
            dim=dim, input_height=res[0], input_width=res[1], window_size=window_size, ct_size=ct_size
        )
        oh, sh, kh = carrier_token_geometry(res[0], window_size, ct_size)
        ow, sw, kw = carrier_token_geometry(res[1], window_size, ct_size)
        self.pos_embed = nn.Conv2d(dim, dim, 3, padding=1, groups=dim)
        # the official module registers the same conv twice (two state-dict keys, one parameter)
        self.to_global_feature = nn.Sequential(
            OrderedDict(pos=self.pos_embed, pool=nn.AvgPool2d(kernel_size=(kh, kw), stride=(sh, sw)))
        )
        self.window_size = window_size
        self.ct_size = ct_size

    def geometry(self, h: int, w: int) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
        """((o_h, stride_h, kernel_h), (o_w, stride_w, kernel_w)) for an h x w map."""
        return (
            carrier_token_geometry(h, self.window_size, self.ct_size),
            carrier_token_geometry(w, self.window_size, self.ct_size),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_map(x, self.pos_embed.in_channels, "TokenInitializer", self.pos_embed.weight.dtype)
        b, c, h, w = x.shape
        (oh, sh, kh), (ow, sw, kw) = self.geometry(h, w)
        # Eq. (Sec. 3.3, CT init): x_c = Conv_{3x3}(x); x_ct = AvgPool_{H^2 -> n^2 L}(x_c)
        x = F.avg_pool2d(self.pos_embed(x), kernel_size=(kh, kw), stride=(sh, sw))
        s = self.ct_size
        x = x.view(b, c, oh // s, s, ow // s, s).permute(0, 2, 4, 3, 5, 1)
        return x.reshape(b, oh * ow, c)


class ConvBlock(nn.Module):
    """Residual conv block of stages 1-2: x + DropPath(BN(Conv3x3(GELU(BN(Conv3x3(x))))))."""

    def __init__(
        self, dim: int, drop_path: float = 0.0, layer_scale: float | None = None, kernel_size: int = 3
    ) -> None:
        super().__init__()
        _check_sizes(dim=dim, kernel_size=kernel_size)
        _check_rate(drop_path, "drop_path")
        self.conv1 = nn.Conv2d(dim, dim, kernel_size, stride=1, padding=kernel_size // 2)
        self.norm1 = nn.BatchNorm2d(dim, eps=1e-5)
        self.act1 = nn.GELU()
        self.conv2 = nn.Conv2d(dim, dim, kernel_size, stride=1, padding=kernel_size // 2)
        self.norm2 = nn.BatchNorm2d(dim, eps=1e-5)
        self.layer_scale = isinstance(layer_scale, int | float) and not isinstance(layer_scale, bool)
        # no `gamma` parameter without layer scale (the official state-dict layout); None keeps it scriptable
        self.gamma = nn.Parameter(layer_scale * torch.ones(dim)) if self.layer_scale else None
        self.drop_path = DropPath(drop_path) if drop_path > 0.0 else nn.Identity()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_map(x, self.conv1.in_channels, "ConvBlock", self.conv1.weight.dtype)
        # Eq. (Sec. 3.3, conv block): x_hat = GELU(BN(Conv_{3x3}(x))); x = BN(Conv_{3x3}(x_hat)) + x
        y = self.norm2(self.conv2(self.act1(self.norm1(self.conv1(x)))))
        if self.gamma is not None:
            y = y * self.gamma.view(1, -1, 1, 1)
        return x + self.drop_path(y)


class Downsample(nn.Module):
    """LayerNorm2d -> Conv3x3 stride 2 (dim -> 2 dim, no bias)."""

    def __init__(self, dim: int, keep_dim: bool = False) -> None:
        super().__init__()
        _check_sizes(dim=dim)
        self.dim = dim
        self.norm = LayerNorm2d(dim)
        self.reduction = nn.Sequential(nn.Conv2d(dim, dim if keep_dim else 2 * dim, 3, 2, 1, bias=False))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_map(x, self.dim, "Downsample", self.reduction[0].weight.dtype)
        return self.reduction(self.norm(x))


class PatchEmbed(nn.Module):
    """Stem: two Conv3x3 stride 2 + BN(eps 1e-4) + ReLU, in_chans -> in_dim -> dim, output at H/4."""

    def __init__(self, in_chans: int = 3, in_dim: int = 64, dim: int = 96) -> None:
        super().__init__()
        _check_sizes(in_chans=in_chans, in_dim=in_dim, dim=dim)
        self.in_chans = in_chans
        self.proj = nn.Identity()
        self.conv_down = nn.Sequential(
            nn.Conv2d(in_chans, in_dim, 3, 2, 1, bias=False),
            nn.BatchNorm2d(in_dim, eps=1e-4),
            nn.ReLU(),
            nn.Conv2d(in_dim, dim, 3, 2, 1, bias=False),
            nn.BatchNorm2d(dim, eps=1e-4),
            nn.ReLU(),
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        check_map(x, self.in_chans, "PatchEmbed", self.conv_down[0].weight.dtype)
        return self.conv_down(self.proj(x))


@register_notrace_module  # a leaf of timm's FX graphs: its geometry follows the input size at run time
class FasterViTLayer(nn.Module):
    """One stage: conv blocks, or HAT blocks over k x k windows with carrier tokens; then an optional downsampler.

    Usable on its own as a plug-and-play HAT stage: ``FasterViTLayer(dim=96, depth=2, input_resolution=56,
    num_heads=3, window_size=7, ct_size=2, downsample=False)`` maps (B, 96, H, W) -> (B, 96, H, W) for any H, W
    (the map is zero-padded to whole windows and cropped back). ``only_local=True`` gives plain window attention.
    """

    __constants__ = ["conv", "do_gt"]  # TorchScript compiles only the branch this stage was built with

    def __init__(
        self,
        dim: int,
        depth: int,
        input_resolution: int | Sequence[int],
        num_heads: int,
        window_size: int,
        ct_size: int = 1,
        conv: bool = False,
        downsample: bool = True,
        mlp_ratio: float = 4.0,
        qkv_bias: bool = True,
        qk_scale: float | None = None,
        drop: float = 0.0,
        attn_drop: float = 0.0,
        drop_path: float | Sequence[float] = 0.0,
        layer_scale: float | None = None,
        layer_scale_conv: float | None = None,
        only_local: bool = False,
        hierarchy: bool = True,
        do_propagation: bool = False,
    ) -> None:
        super().__init__()
        check_int(depth, "depth", minimum=1, maximum=1024)
        check_int(window_size, "window_size", minimum=1, maximum=64)
        _check_sizes(dim=dim, num_heads=num_heads)
        self.dim = dim
        dpr = list(drop_path) if isinstance(drop_path, Sequence) else [float(drop_path)] * depth
        if len(dpr) != depth:
            raise InputError(f"drop_path has {len(dpr)} rates for {depth} blocks")
        self.conv = conv
        self.transformer_block = not conv
        self.window_size = window_size
        res = _pair(input_resolution)
        padded = tuple(r + (window_size - r % window_size) % window_size for r in res)
        if conv:
            self.blocks = nn.ModuleList(
                [ConvBlock(dim, drop_path=dpr[i], layer_scale=layer_scale_conv) for i in range(depth)]
            )
            self.do_gt = False
        else:
            sr = (1, 1) if only_local else (padded[0] // window_size, padded[1] // window_size)
            self.blocks = nn.ModuleList(
                [
                    HAT(
                        dim,
                        num_heads=num_heads,
                        mlp_ratio=mlp_ratio,
                        qkv_bias=qkv_bias,
                        qk_scale=qk_scale,
                        drop=drop,
                        attn_drop=attn_drop,
                        drop_path=dpr[i],
                        sr_ratio=sr,
                        window_size=window_size,
                        last=i == depth - 1,
                        layer_scale=layer_scale,
                        ct_size=ct_size,
                        do_propagation=do_propagation,
                    )
                    for i in range(depth)
                ]
            )
            self.do_gt = self.blocks[0].hat and hierarchy
            if self.do_gt:
                self.global_tokenizer = TokenInitializer(dim, padded, window_size, ct_size=ct_size)
        self.downsample = Downsample(dim) if downsample else None
        self._warned_nonsquare = False

    def forward_blocks(self, x: torch.Tensor) -> torch.Tensor:
        """The stage's blocks, without the downsampler: (B, C, H, W) -> (B, C, H, W)."""
        check_map(x, self.dim, "FasterViTLayer", x.dtype)  # its blocks check the dtype
        if self.conv:
            for blk in self.blocks:
                x = blk(x)
            return x
        b, c, h, w = x.shape
        k = self.window_size
        x, _, _ = pad_to_multiple(x, k)
        hp, wp = x.shape[2], x.shape[3]
        grid = (hp // k, wp // k)
        ct: torch.Tensor | None = None
        if self.do_gt:
            ct = self.global_tokenizer(x)
            if grid[0] != grid[1] and not torch.jit.is_scripting():
                self._warn_nonsquare(grid)
        # Eq. (Sec. 3.3, windows): x_l = Split_{H^2 -> n^2 k^2}(x), n^2 = H^2 / k^2 windows of k x k tokens
        x = window_partition(x, k)
        for blk in self.blocks:
            x, ct = blk(x, ct, grid)
        # Eq. (Sec. 3.3, HAT 4b): Merge_{n^2 k^2 -> H^2}(x_l) (the carrier tokens were added in the last block)
        x = window_reverse(x, k, hp, wp, b)
        if hp != h or wp != w:
            x = x[:, :, :h, :w].contiguous()
        return x

    @torch.jit.unused
    def _warn_nonsquare(self, grid: tuple[int, int]) -> None:
        if self._warned_nonsquare:
            return
        self._warned_nonsquare = True
        warnings.warn(
            f"carrier tokens on a non-square {grid[0]}x{grid[1]} grid of windows: regrouped window by window "
            "in raster order here, while the official faster_vit_any_res code swaps the grid axes, so "
            "official weights give different logits from the official code on this input (identical on "
            "square grids). Silence with warnings.simplefilter('ignore', NonSquareCarrierGridWarning).",
            NonSquareCarrierGridWarning,
            stacklevel=4,
        )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.forward_blocks(x)
        if self.downsample is not None:
            x = self.downsample(x)
        return x
