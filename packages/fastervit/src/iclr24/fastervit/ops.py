"""Pure tensor functions of FasterViT: window and carrier-token layouts, carrier-token pooling geometry and the
coordinate tables behind the continuous position biases (Sec. 3.2 of the paper, Fig. 4). Every function here is
TorchScript-compilable (the model's forward calls them)."""

from __future__ import annotations

import torch

from iclr24.paperkit.errors import InputError

__all__ = [
    "window_partition",
    "window_reverse",
    "ct_dewindow",
    "ct_window",
    "carrier_token_geometry",
    "pad_to_multiple",
    "log_spaced_relative_coords",
    "relative_position_index",
    "centered_grid_coords",
]


def window_partition(x: torch.Tensor, window_size: int) -> torch.Tensor:
    """Split a feature map into non-overlapping k x k windows (Sec. 3.3, HAT step 1: x_l = Split_{k x k}(x)).

    ``x``: (B, C, H, W) with H, W multiples of k -> (B * H/k * W/k, k*k, C); windows in row-major order per image,
    tokens in row-major order inside a window."""
    if x.dim() != 4:
        raise InputError(f"window_partition expects a feature map (B, C, H, W), got shape {list(x.shape)}")
    b, c, h, w = x.shape
    k = window_size
    if k < 1 or h % k or w % k:
        raise InputError(f"window_size {k} must be >= 1 and divide the map's {h}x{w} (pad it first)")
    x = x.view(b, c, h // k, k, w // k, k)
    return x.permute(0, 2, 4, 3, 5, 1).reshape(-1, k * k, c)


def window_reverse(windows: torch.Tensor, window_size: int, h: int, w: int, b: int) -> torch.Tensor:
    """Inverse of :func:`window_partition`: (B * nW, k*k, C) -> (B, C, H, W)."""
    k = window_size
    if k < 1 or h < 1 or w < 1 or b < 1 or h % k or w % k:
        raise InputError(f"window_reverse needs window_size {k} >= 1 dividing an {h}x{w} map, and b={b} >= 1")
    n_win = b * (h // k) * (w // k)
    if windows.dim() != 3 or windows.shape[0] != n_win or windows.shape[1] != k * k:
        raise InputError(
            f"window_reverse expects windows ({n_win}, {k * k}, C) for b={b} and a {h}x{w} map, "
            f"got shape {list(windows.shape)}"
        )
    c = windows.shape[-1]
    x = windows.view(b, h // k, w // k, k, k, c)
    return x.permute(0, 5, 1, 3, 2, 4).reshape(b, c, h, w)


def _carrier_token_dims(
    ct: torch.Tensor, grid: tuple[int, int], ct_size: int, what: str
) -> tuple[int, int, int, int]:
    """``(B, nWh, nWw, C)`` of carrier tokens ``ct`` (B, nWh*nWw*s*s, C) for a ``grid`` of windows of ``ct_size``
    s; InputError otherwise."""
    gh, gw = grid
    if gh < 1 or gw < 1 or ct_size < 1:
        raise InputError(f"{what}: grid {gh}x{gw} and ct_size {ct_size} must be >= 1")
    n = gh * gw * ct_size * ct_size
    if ct.dim() != 3 or ct.shape[1] != n:
        raise InputError(
            f"{what} expects carrier tokens (B, {n}, C) for a {gh}x{gw} grid of {ct_size}x{ct_size}, "
            f"got shape {list(ct.shape)}"
        )
    return ct.shape[0], gh, gw, ct.shape[2]


def ct_dewindow(ct: torch.Tensor, grid: tuple[int, int], ct_size: int) -> torch.Tensor:
    """Carrier tokens from window-grouped order to raster order of the carrier-token grid.

    ``ct``: (B, nWh*nWw*s*s, C), grouped window by window (each window's s x s tokens together, windows row-major),
    ``grid`` = (nWh, nWw) windows, ``ct_size`` = s -> (B, (nWh*s) * (nWw*s), C) in row-major order of the
    (nWh*s) x (nWw*s) carrier-token image."""
    b, gh, gw, c = _carrier_token_dims(ct, grid, ct_size, "ct_dewindow")
    s = ct_size
    x = ct.view(b, gh, gw, s, s, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, gh * s * gw * s, c)


def ct_window(ct: torch.Tensor, grid: tuple[int, int], ct_size: int) -> torch.Tensor:
    """Inverse of :func:`ct_dewindow`: raster order -> window-grouped order, (B, nW*s*s, C) both."""
    b, gh, gw, c = _carrier_token_dims(ct, grid, ct_size, "ct_window")
    s = ct_size
    x = ct.view(b, gh, s, gw, s, c).permute(0, 1, 3, 2, 4, 5)
    return x.reshape(b, gh * gw * s * s, c)


def carrier_token_geometry(resolution: int, window_size: int, ct_size: int) -> tuple[int, int, int]:
    """Pooling that turns an r x r map into the carrier-token grid (Sec. 3.3, HAT step 2: x_ct = AvgPool(Conv3x3(x));
    TokenInitializer of the official code).

    Returns (o, stride, kernel): o = ct_size * r / k carrier tokens per side, stride = r // o,
    kernel = r - (o - 1) * stride, so the o pooling windows tile the whole map. FasterViT-0 stage 3 at 224:
    r=14, k=7, ct_size=2 -> (4, 3, 5)."""
    if not (1 <= resolution <= 2**16 and 1 <= window_size <= 2**16 and 1 <= ct_size <= 2**16):
        raise InputError(
            f"resolution, window_size and ct_size must be >= 1, got {resolution}, {window_size}, {ct_size}"
        )
    o = int(ct_size * resolution / window_size)
    if o < 1:
        raise InputError(
            f"a {resolution}-pixel map with window {window_size} and ct_size {ct_size} has no carrier token"
        )
    stride = int(resolution / o)
    kernel = resolution - (o - 1) * stride
    return o, stride, kernel


def pad_to_multiple(x: torch.Tensor, multiple: int) -> tuple[torch.Tensor, int, int]:
    """Zero-pad a (B, C, H, W) map on the right and bottom to multiples of ``multiple``; returns (x, pad_h, pad_w)."""
    if x.dim() < 2 or multiple < 1:
        raise InputError(
            f"pad_to_multiple needs a map (..., H, W) and multiple >= 1, got {list(x.shape)}, {multiple}"
        )
    h, w = x.shape[-2:]
    ph = (multiple - h % multiple) % multiple
    pw = (multiple - w % multiple) % multiple
    if ph or pw:
        x = torch.nn.functional.pad(x, (0, pw, 0, ph))
    return x, ph, pw


def log_spaced_relative_coords(size: tuple[int, int], pretrained_size: tuple[int, int]) -> torch.Tensor:
    """Swin-v2 log-spaced relative coordinates, the input of the continuous position-bias MLP (Swin-v2, used by every
    attention of FasterViT).

    For offsets d in [-(h-1), h-1] x [-(w-1), w-1]: d_hat = 8 d / (p - 1), then sign(d_hat) log2(1 + |d_hat|) / 3.
    Returns (1, 2h-1, 2w-1, 2) float32. ``pretrained_size`` p fixes the normalisation (a model built for p x p
    extrapolates to other sizes)."""
    h, w = size
    ph, pw = pretrained_size
    if not (1 <= h <= 1024 and 1 <= w <= 1024 and 1 <= ph <= 1024 and 1 <= pw <= 1024) or h % 1 or w % 1:
        raise InputError(
            f"window sizes must be in [1, 1024], got size {size} and pretrained_size {pretrained_size}"
        )
    rh = torch.arange(-(h - 1), h, dtype=torch.float32)
    rw = torch.arange(-(w - 1), w, dtype=torch.float32)
    table = torch.stack(torch.meshgrid(rh, rw, indexing="ij")).permute(1, 2, 0).contiguous().unsqueeze(0)
    table[..., 0] /= max(ph - 1, 1)
    table[..., 1] /= max(pw - 1, 1)
    table = table * 8
    return torch.sign(table) * torch.log2(table.abs() + 1.0) / 3.0  # / log2(8)


def relative_position_index(size: tuple[int, int]) -> torch.Tensor:
    """Index into the (2h-1)(2w-1) offset table for every pair of tokens of an h x w grid: (h*w, h*w) int64."""
    h, w = size
    if not (h >= 1 and w >= 1 and h * w <= 4096) or h % 1 != 0 or w % 1 != 0:
        raise InputError(f"a window of {h}x{w} tokens: expected h, w >= 1 and h*w <= 4096")
    coords = torch.stack(torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")).flatten(1)
    rel = (coords[:, :, None] - coords[:, None, :]).permute(1, 2, 0).contiguous()
    rel[:, :, 0] += h - 1
    rel[:, :, 1] += w - 1
    rel[:, :, 0] *= 2 * w - 1
    return rel.sum(-1)


def centered_grid_coords(
    size: tuple[int, int], device: torch.device | None = None, dtype: torch.dtype = torch.float32
) -> torch.Tensor:
    """Absolute token coordinates of an h x w grid, centred and scaled, (h*w, 2): ((i - h//2) / (h//2), ...).

    Input of the MLP positional embedding added to window tokens and carrier tokens (PosEmbMLPSwinv1D)."""
    h, w = size
    ch = torch.arange(h, device=device, dtype=dtype) - h // 2
    cw = torch.arange(w, device=device, dtype=dtype) - w // 2
    ch = ch / max(h // 2, 1)
    cw = cw / max(w // 2, 1)
    return torch.stack(torch.meshgrid(ch, cw, indexing="ij")).flatten(1).transpose(0, 1)
