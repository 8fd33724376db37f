"""The condensed inference layer of SRigL (Sec. 4.3 of Lasby et al., "condensed representation").

A constant fan-in layer ``W [out, in]`` with ``k`` non-zeros in each active row is stored as
``values [n, k]`` and ``indices [n, k]`` (the column of each non-zero), ``n`` = active neurons, and computes

    y[b, i] = sum_j values[i, j] * x[b, indices[i, j]] + bias[i]          (condensed matmul, Eq. in Sec. 4.3)

Ablated neurons (rows without weights) are dropped; :func:`~.convert.condense` also drops the matching input columns of the
next ``nn.Linear`` and folds their constant output ``act(bias)`` into that layer's bias, so the condensed model
computes exactly what the masked dense model computes. A constant fan-in ``nn.Conv2d`` condenses the same way over
its ``in * kh * kw`` input taps (:class:`CondensedConv2d`: gather the ``k`` active taps of each output channel from
the unfolded input).

``variant="auto"`` (the default of :func:`~.convert.condense`) chooses per layer and per call by a fixed rule drawn from the
measured crossovers of ``srigl bench`` (:func:`auto_variant`), and keeps the masked dense product where condensing
would be slower; ``model.condense_plan`` says what was chosen and :func:`~.convert.describe` lists every layer's variant. The
fast path is the numba kernel (:mod:`.nbkernels`: numba ships its own LLVM, so no C++ compiler is needed); without
numba, a C++ kernel already built by torch's extension builder; without either, the pure-torch gather or the masked
dense product, with one warning that names the variant.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe as _describe

from .kernels import fused_condensed_cols
from .kernels import fused_condensed_linear

__all__ = [
    "CondensedLinear",
    "CondensedConv2d",
    "condensed_linear",
    "auto_variant",
    "VARIANTS",
    "ELEMENTWISE_MODULES",
    "AUTO_ONLINE_ROWS",
]

VARIANTS = ("gather", "gather_kmajor", "embedding_bag", "fused", "numba", "dense", "auto")

# The auto rule (auto_variant), from the 3072->768 one-thread rows of `srigl bench --full` (docs/bench_full.md):
# at batch 1 the fused AVX2 int16 kernel beats dense F.linear at every density <= 0.2 (2.5x at 0.2) and the eager
# gather only at density <= 0.05 (1.1x; 0.6-0.7x at 0.1-0.2); at batch 256 the kernel breaks even at 0.1 (1.02x)
# and wins at 0.05 (1.75x), the gather only at 0.01 (1.9x). Batches between were not measured: from
# AUTO_ONLINE_ROWS rows up the batch-256 thresholds apply (conservative: dense sooner).
AUTO_ONLINE_ROWS = 4
_AUTO_THRESHOLDS = {  # (variant, online max density, batched max density)
    "fused": (0.2, 0.1),  # from 4 rows: the tokens loop order (kernels.py), see below
    "numba": (0.2, 0.05),
    "gather": (0.05, 0.01),
}
# The numba kernel's many-rows loop order (an AXPY over the rows per non-zero) measured 1.2-2.0x dense F.linear
# on the 3072->768 layer at 10 % and 8-64 rows but 0.7-1.45x at 197 rows (ViT-Tiny's tokens), and a uniform-90 %
# ViT-Tiny condensed with numba at <= 0.1 ran 0.76x its masked model (2026-12-02, load ~5): so from
# AUTO_ONLINE_ROWS rows on numba runs only at <= 0.05, and from AUTO_MAX_ROWS rows (slower than MKL's GEMM at
# ~10k rows) never.
AUTO_MAX_ROWS = 4096
# The C++ kernel's many-rows loop order (``tokens``: 64-row tiles transposed into cache, partial sums in vector
# registers) measured 1.2-6x dense F.linear at 10 % from 4 to 4096 rows on 192->768, 1536->384 and 3072->768 layers,
# 0.6-1.6x at 20 % and 0.55-1.0x at 30 % (one thread, interleaved medians, load ~4, 2026-12-02): so the fused kernel
# runs from AUTO_ONLINE_ROWS rows at <= 0.1, at every row count; it is auto's first choice when it is built.

# Modules that act elementwise, so an ablated neuron's constant output passes through them unchanged in shape.
ELEMENTWISE_MODULES = (
    nn.ReLU,
    nn.ReLU6,
    nn.GELU,
    nn.SiLU,
    nn.Tanh,
    nn.Sigmoid,
    nn.LeakyReLU,
    nn.ELU,
    nn.Hardswish,
    nn.Mish,
    nn.Softplus,
    nn.Identity,
    nn.Dropout,
)

_MAX_CHUNK_ELEMENTS = 1 << 22  # gathered floats per chunk (16 MiB in float32): bounds memory at large batch


def condensed_linear(
    x: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    bias: torch.Tensor | None = None,
    variant: str = "gather",
    kernel_mode: str = "auto",
) -> torch.Tensor:
    """The condensed matmul on a 2-D input.

    x: ``[B, in]``; values, indices: ``[n, k]`` (``gather``, ``embedding_bag``) or ``[k, n]``
    (``gather_kmajor``); bias: ``[n]``. ``fused`` runs the C++ kernel of :mod:`.kernels`, ``numba`` the numba kernels of :mod:`.nbkernels` (both
    int16/int32 indices, inference only: no autograd). Returns ``[B, n]`` with ``y[b, i] = sum_j values[i,j] x[b, idx[i,j]] + b[i]``.
    Shapes, dtypes and index ranges are checked (InputError); the layers call the unchecked kernel.
    """
    if variant not in VARIANTS[:4] + ("fused", "numba"):
        raise InputError(f"variant must be one of {VARIANTS[:4]} here, got {variant!r}")
    check_tensor(x, "x", ndim=2)
    check_tensor(values, "values", ndim=2)
    check_tensor(indices, "indices", shape=tuple(values.shape), kind="int")
    n = values.shape[1] if variant == "gather_kmajor" else values.shape[0]
    if bias is not None:
        check_tensor(bias, "bias", shape=(n,))
    if x.dtype != values.dtype:
        raise InputError(f"x is {x.dtype} but values are {values.dtype}: convert one")
    if int(indices.min()) < 0 or int(indices.max()) >= x.shape[1]:
        raise InputError(
            f"indices must lie in [0, {x.shape[1]}) (the input width), got [{int(indices.min())}, {int(indices.max())}]"
        )
    return _condensed_linear(x, values, indices, bias, variant, kernel_mode)


def _condensed_linear(
    x: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    bias: torch.Tensor | None = None,
    variant: str = "gather",
    kernel_mode: str = "auto",
) -> torch.Tensor:
    if variant == "gather":
        n, k = values.shape
        # Sec. 4 (SRigL), condensed representation: y_i = sum_{j<k} W_c[i, j] * x[idx[i, j]] + b_i
        g = x.index_select(1, indices.reshape(-1)).view(x.shape[0], n, k)  # [B, n, k]
        y = (g * values).sum(-1)
    elif variant == "gather_kmajor":
        k, n = values.shape
        g = x.index_select(1, indices.reshape(-1)).view(x.shape[0], k, n)  # [B, k, n]: n contiguous
        y = (g * values).sum(1)
    elif variant == "fused":  # the optional C++ kernel (kernels.py): one pass, int16/int32 indices
        return fused_condensed_linear(x.contiguous(), values, indices, bias, mode=kernel_mode)
    elif variant == "numba":  # the numba kernels (nbkernels.py): rows or cols loop order by the row count
        from .nbkernels import numba_condensed_linear

        return numba_condensed_linear(x, values, indices, bias)
    elif variant == "embedding_bag":
        # x^T is the embedding table [in, B]; each neuron is a bag of its k inputs weighted by its values.
        y = F.embedding_bag(indices, x.t().contiguous(), per_sample_weights=values, mode="sum").t()
    else:
        raise InputError(f"variant must be one of {VARIANTS[:4]} here, got {variant!r}")
    return y + bias if bias is not None else y


def auto_variant(density: float, rows: int, fused_available: bool, numba_available: bool = False) -> str:
    """The rule of ``variant="auto"``: ``"numba"``, ``"fused"``, ``"gather"`` or ``"dense"`` for a layer of
    ``density = k / fan_in`` applied to ``rows`` input rows (batch x tokens, or batch x output pixels for a
    convolution). The first available kernel decides: the built C++ kernel iff ``density <= 0.2`` (rows <
    AUTO_ONLINE_ROWS) or ``<= 0.1`` (more rows); else numba iff ``density <= 0.2`` / ``<= 0.05`` (fewer than
    AUTO_MAX_ROWS rows); else the torch gather iff ``density <= 0.05`` / ``<= 0.01``; otherwise masked dense."""
    check_float(density, "density", minimum=0, maximum=1)
    check_int(rows, "rows", minimum=0)
    online = rows < AUTO_ONLINE_ROWS
    for v in ("fused", "numba", "gather"):
        if (v == "fused" and not fused_available) or (v == "numba" and not numba_available):
            continue
        if v == "numba" and rows >= AUTO_MAX_ROWS:
            return "dense"
        lim_online, lim_batched = _AUTO_THRESHOLDS[v]
        return v if density <= (lim_online if online else lim_batched) else "dense"
    return "dense"


def _fused_built() -> bool:
    from .kernels import kernel_built

    return kernel_built()


def _numba_ok() -> bool:
    from .nbkernels import numba_available

    return numba_available()


_warned_slow = False


def _warn_slow_once(variant: str) -> None:
    global _warned_slow
    if not _warned_slow:
        from .nbkernels import warn_unavailable

        _warned_slow = True
        warn_unavailable(variant)


class CondensedLinear(nn.Module):
    """A constant fan-in linear layer in condensed form: gather the ``k`` inputs of each active neuron, multiply,
    add. Built with :meth:`from_linear` (or :func:`condense` for a whole model).

    Attributes: ``in_features``, ``out_features`` (= active neurons kept), ``k`` (fan-in), ``rows`` (indices of the
    kept neurons in the original layer), ``variant``.
    """

    def __init__(
        self,
        values: torch.Tensor,
        indices: torch.Tensor,
        bias: torch.Tensor | None,
        in_features: int,
        rows: torch.Tensor,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
        max_chunk_elements: int = _MAX_CHUNK_ELEMENTS,
        kernel_mode: str = "auto",
    ) -> None:
        super().__init__()
        self.kernel_mode = kernel_mode
        check_tensor(values, "values", ndim=2, allow_empty=True)
        check_tensor(indices, "indices", ndim=2, kind="int", allow_empty=True)
        check_int(in_features, "in_features", minimum=1, maximum=2**40)
        check_tensor(rows, "rows", ndim=1, kind="int", allow_empty=True)
        if bias is not None:
            check_tensor(bias, "bias", ndim=1, allow_empty=True)
        if variant not in VARIANTS:
            raise InputError(f"variant must be one of {VARIANTS}, got {variant!r}")
        if values.shape != indices.shape or values.dim() != 2:
            raise InputError(
                f"values and indices must both be [n, k], got {tuple(values.shape)} and "
                f"{tuple(indices.shape)}"
            )
        self.numba_ok = variant == "numba" or (variant == "auto" and _numba_ok())
        self.fused_ok = variant == "fused" or (variant == "auto" and _fused_built())
        kernel = variant in ("fused", "numba") or (variant == "auto" and (self.fused_ok or self.numba_ok))
        if kernel and (variant != "auto" or in_features <= 32767):
            if index_dtype not in (torch.int16, torch.int32):
                index_dtype = torch.int16 if in_features <= 32767 else torch.int32
            if index_dtype == torch.int16 and in_features > 32767:
                raise InputError(f"int16 indices address at most 32767 inputs, the layer has {in_features}")
        elif variant in ("auto", "dense"):
            index_dtype = torch.int32 if in_features < 2**31 else torch.int64
        elif index_dtype not in (torch.int32, torch.int64):
            raise InputError(
                f"index_dtype must be torch.int32 or torch.int64 (int16 only with variant='fused' or 'numba'), "
                f"got {index_dtype}"
            )
        self.in_features = int(in_features)
        self.out_features, self.k = values.shape
        self.variant = variant
        self.max_chunk_elements = int(max_chunk_elements)
        if variant == "embedding_bag" and index_dtype == torch.int32:
            index_dtype = torch.int64  # embedding_bag wants int64 bags without offsets on some builds
        vals, idx = (values.t(), indices.t()) if variant == "gather_kmajor" else (values, indices)
        self.values = nn.Parameter(vals.contiguous().clone())
        self.register_buffer("indices", idx.to(index_dtype).contiguous().clone())
        self.bias = nn.Parameter(bias.detach().clone()) if bias is not None else None
        self.register_buffer("rows", rows.to(torch.int64).clone())
        self._dense_cache: tuple[int, torch.Tensor] | None = None

    @property
    def density(self) -> float:
        """``k / in_features``: the fraction of the inputs each kept neuron reads."""
        return self.k / max(1, self.in_features)

    def choose(self, rows: int) -> str:
        """The implementation a call with ``rows`` input rows runs (``variant``, or the :func:`auto_variant` rule)."""
        if self.variant != "auto":
            return self.variant
        # auto_variant depends on rows only through these two thresholds: remembered per (kernels, threshold)
        key = (self.fused_ok, self.numba_ok, (rows >= AUTO_ONLINE_ROWS) + (rows >= AUTO_MAX_ROWS))
        memo = self.__dict__.setdefault("_choices", {})
        v = memo.get(key)
        if v is None:
            v = memo[key] = auto_variant(self.density, rows, self.fused_ok, self.numba_ok)
            if (
                not (self.fused_ok or self.numba_ok)
                and auto_variant(self.density, rows, True, True) != "dense"
            ):
                _warn_slow_once(v)  # a compiled kernel would have run here
        return v

    def dense_weight(self) -> torch.Tensor:
        """The kept rows as a dense ``[out_features, in_features]`` weight, cached (rebuilt after an in-place
        change of ``values``)."""
        ver = self.values._version
        if self._dense_cache is None or self._dense_cache[0] != ver:
            self._dense_cache = (ver, self.to_dense_weight())
        return self._dense_cache[1]

    @classmethod
    @torch.no_grad()
    def from_linear(
        cls,
        linear: nn.Linear,
        mask: torch.Tensor | None = None,
        drop_inactive: bool = True,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
    ) -> CondensedLinear:
        """Condense a (masked) ``nn.Linear``. ``mask`` (bool, ``linear.weight``'s shape) defaults to
        ``weight != 0``. With ``drop_inactive`` the rows without any connection (ablated neurons) are dropped, so
        the output has ``rows.numel()`` features; otherwise every row is kept (empty rows output their bias)."""
        if not isinstance(linear, nn.Linear):
            raise InputError(f"from_linear expects an nn.Linear, got {type(linear).__name__}")
        return cls.from_weight(
            linear.weight,
            linear.bias,
            mask,
            drop_inactive=drop_inactive,
            variant=variant,
            index_dtype=index_dtype,
        )

    @classmethod
    @torch.no_grad()
    def from_weight(
        cls,
        weight: torch.Tensor,
        bias: torch.Tensor | None = None,
        mask: torch.Tensor | None = None,
        *,
        drop_inactive: bool = True,
        rows: torch.Tensor | None = None,
        variant: str = "gather",
        index_dtype: torch.dtype = torch.int64,
    ) -> CondensedLinear:
        """Condense a weight ``[out, in]`` (+ bias ``[out]``). Rows with fewer non-zeros than the widest row are
        padded with zero-valued entries, so any sparse layer converts exactly; constant fan-in needs no padding."""
        weight = weight.detach()
        if weight.dim() != 2:
            raise InputError(f"weight must be [out, in], got shape {tuple(weight.shape)}")
        if mask is None:
            mask = weight != 0
        mask = mask.to(torch.bool)
        if mask.shape != weight.shape:
            raise InputError(
                f"mask shape {tuple(mask.shape)} does not match weight shape {tuple(weight.shape)}"
            )
        if rows is None:
            # Active neurons have at least one connection: (mask).any(1). (The official code tests W.sum(1) != 0,
            # which drops rows whose weights happen to cancel.)
            rows = mask.any(dim=1).nonzero().flatten() if drop_inactive else torch.arange(weight.shape[0])
        rows = rows.to(weight.device)
        m = mask[rows]
        w = (weight * mask)[rows]
        k = max(1, int(m.sum(dim=1).max())) if m.numel() else 1
        # The k active columns of each row first (stable, ascending column order), padding after them.
        order = (~m).to(torch.uint8).argsort(dim=1, stable=True)[:, :k]
        values = w.gather(1, order)  # padding positions hold masked-out (zero) weights
        b = bias.detach()[rows] if bias is not None else None
        return cls(values, order, b, weight.shape[1], rows, variant=variant, index_dtype=index_dtype)

    def to_dense_weight(self) -> torch.Tensor:
        """The equivalent dense weight ``[out_features, in_features]``."""
        vals, idx = (
            (self.values.t(), self.indices.t())
            if self.variant == "gather_kmajor"
            else (self.values, self.indices)
        )
        w = torch.zeros(self.out_features, self.in_features, dtype=vals.dtype, device=vals.device)
        return w.scatter_add(1, idx.long(), vals.detach())

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.shape[-1] != self.in_features:
            raise InputError(f"expected input with last dim {self.in_features}, got shape {tuple(x.shape)}")
        # [rows, in]: no reshapes, and the C++ kernel called with the least Python in between (at batch 1 the
        # Python path was 38 us of a 95 us cache-cold call)
        if x.dim() == 2:
            v = self.choose(x.shape[0])
            if v == "fused":
                p = self._parameters  # not self.values: nn.Module.__getattr__ costs microseconds cache-cold
                idx = self._buffers["indices"]
                return fused_condensed_linear(x, p["values"], idx, p.get("bias"), self.kernel_mode)
            return self.forward_variant(x, v)
        lead = x.shape[:-1]
        x2 = x.reshape(-1, self.in_features)
        return self.forward_variant(x2, self.choose(x2.shape[0])).reshape(*lead, self.out_features)

    def forward_variant(self, x2: torch.Tensor, v: str) -> torch.Tensor:
        """``[rows, in_features] -> [rows, out_features]`` with implementation ``v`` (see :meth:`choose`)."""
        if v == "dense":
            return F.linear(x2, self.dense_weight(), self.bias)
        chunk = max(1, self.max_chunk_elements // max(1, self.out_features * self.k))
        if v == "numba":  # the layer's tensors as numpy views, checked once (the call costs the kernel only)
            return self._numba()(x2)
        if v == "fused" or x2.shape[0] <= chunk:
            return _condensed_linear(x2, self.values, self.indices, self.bias, v, self.kernel_mode)
        # bounded memory: the gather materialises [B, n, k]
        return torch.cat(
            [
                _condensed_linear(c, self.values, self.indices, self.bias, v, self.kernel_mode)
                for c in x2.split(chunk)
            ]
        )

    def _numba(self):
        """The numba kernels' prepared views of this layer's tensors, rebuilt when one of them changed."""
        from .nbkernels import prepare

        b = self.bias
        key = (self.values.data_ptr(), self.values._version, self.indices.data_ptr(), self.indices._version,
               None if b is None else (b.data_ptr(), b._version))  # fmt: skip
        p = self.__dict__.get("_numba_prepared")
        if p is None or p.key != key:
            p = prepare(self.values, self.indices, b, key)
            self.__dict__["_numba_prepared"] = p
        return p

    def runs(self) -> str:
        """What a call runs, in words: the variant, or auto's choice at 1 row, at ``AUTO_ONLINE_ROWS`` rows and at
        ``AUTO_MAX_ROWS`` rows (e.g. ``"auto (1 row: numba, 4+ rows: numba, 4096+ rows: dense)"``); the C++
        kernel with its loop (``fused/avx512_gather``, ``fused/tokens``: :func:`.kernels.fused_condensed_linear`)."""
        if self.variant != "auto":
            return self._named(self.variant, 1)
        rows = (1, AUTO_ONLINE_ROWS, AUTO_MAX_ROWS)
        a, b, c = (self._named(self.choose(r), r) for r in rows)
        return f"auto (1 row: {a}, {AUTO_ONLINE_ROWS}+ rows: {b}, {AUTO_MAX_ROWS}+ rows: {c})"

    def _named(self, v: str, rows: int) -> str:
        if v != "fused":
            return v
        from .kernels import TOKENS_MIN_ROWS
        from .kernels import kernel_built
        from .kernels import row_mode

        mode = self.kernel_mode
        if mode == "auto":
            mode = "tokens" if rows >= TOKENS_MIN_ROWS else (row_mode() if kernel_built() else "not built")
        return f"fused/{mode}"

    def extra_repr(self) -> str:
        v = self.runs() if self.variant in ("auto", "fused") else repr(self.variant)
        return (
            f"in_features={self.in_features}, out_features={self.out_features}, k={self.k}, "
            f"bias={self.bias is not None}, variant={v}"
        )


class CondensedConv2d(nn.Module):
    """A constant fan-in ``nn.Conv2d`` (``groups=1``, zero padding) in condensed form: each output channel gathers
    its ``k`` active taps (channel, dy, dx) of the unfolded input and multiply-adds them with its values.

    ``y[b, o, p] = sum_j values[o, j] * unfold(x)[b, indices[o, j], p] + bias[o]``; every output channel is kept
    (an ablated channel outputs its bias), so the output shape is the convolution's. ``linear`` holds the
    condensed ``[out, in*kh*kw]`` weight; with ``variant="dense"`` (or when ``auto`` picks it) the call is
    ``F.conv2d`` with the masked weight."""

    def __init__(
        self, linear: CondensedLinear, in_channels: int, kernel_size, stride, padding, dilation
    ) -> None:
        super().__init__()
        if not isinstance(linear, CondensedLinear):
            raise InputError(f"linear must be a CondensedLinear, got {_describe(linear)}")
        check_int(in_channels, "in_channels", minimum=1, maximum=2**20)
        geometry = {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation}
        for name, v in geometry.items():
            if not isinstance(v, tuple | list) or len(v) != 2:
                raise InputError(f"{name} must be a pair (h, w), got {v!r}")
            for d in v:
                check_int(d, name, minimum=0 if name == "padding" else 1, maximum=2**16)
        if linear.in_features != in_channels * kernel_size[0] * kernel_size[1]:
            raise InputError(
                f"linear reads {linear.in_features} inputs, not in_channels * kh * kw = "
                f"{in_channels * kernel_size[0] * kernel_size[1]}"
            )
        self.linear = linear
        self.in_channels = int(in_channels)
        self.out_channels = linear.out_features
        self.kernel_size = tuple(kernel_size)
        self.stride = tuple(stride)
        self.padding = tuple(padding)
        self.dilation = tuple(dilation)

    @property
    def variant(self) -> str:
        return self.linear.variant

    @property
    def k(self) -> int:
        return self.linear.k

    @classmethod
    @torch.no_grad()
    def from_conv(
        cls, conv: nn.Conv2d, mask: torch.Tensor | None = None, variant: str = "auto"
    ) -> CondensedConv2d:
        """Condense a (masked) ``nn.Conv2d``; ``mask`` (bool, the weight's shape) defaults to ``weight != 0``."""
        if not isinstance(conv, nn.Conv2d):
            raise InputError(f"from_conv expects an nn.Conv2d, got {type(conv).__name__}")
        if conv.groups != 1 or conv.padding_mode != "zeros" or isinstance(conv.padding, str):
            raise InputError(
                f"only groups=1 convolutions with numeric zero padding condense (got groups={conv.groups}, "
                f"padding={conv.padding!r}, padding_mode={conv.padding_mode!r}); keep this layer masked dense"
            )
        w = conv.weight.detach()
        m = (w != 0) if mask is None else mask.to(torch.bool)
        if m.shape != w.shape:
            raise InputError(f"mask shape {tuple(m.shape)} does not match weight shape {tuple(w.shape)}")
        out = w.shape[0]
        lin = CondensedLinear.from_weight(
            w.reshape(out, -1), conv.bias, m.reshape(out, -1), drop_inactive=False, variant=variant
        )
        return cls(lin, conv.in_channels, conv.kernel_size, conv.stride, conv.padding, conv.dilation)

    def rows_for(self, x: torch.Tensor) -> int:
        """Rows of the implicit matmul: batch x output pixels."""
        h, w = x.shape[-2:]
        ho, wo = (
            (s + 2 * p - d * (k - 1) - 1) // st + 1
            for s, p, d, k, st in zip(
                (h, w), self.padding, self.dilation, self.kernel_size, self.stride, strict=True
            )
        )
        return x.shape[0] * ho * wo

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 4 or x.shape[1] != self.in_channels:
            raise InputError(f"expected input [B, {self.in_channels}, H, W], got shape {tuple(x.shape)}")
        v = self.linear.choose(self.rows_for(x))
        if v == "dense":
            w = self.linear.dense_weight().view(self.out_channels, self.in_channels, *self.kernel_size)
            return F.conv2d(x, w, self.linear.bias, self.stride, self.padding, self.dilation)
        b, _, h, w_ = x.shape
        cols = F.unfold(x, self.kernel_size, self.dilation, self.padding, self.stride)  # [B, C*kh*kw, L]
        n_pix = cols.shape[-1]
        ho = (h + 2 * self.padding[0] - self.dilation[0] * (self.kernel_size[0] - 1) - 1) // self.stride[
            0
        ] + 1
        if (
            v == "fused" and self.linear.kernel_mode == "auto"
        ):  # the C++ cols entry: [B, in, L] -> [B, out, L]
            lin = self.linear
            y = fused_condensed_cols(cols, lin.values, lin.indices, lin.bias)
            return y.view(b, self.out_channels, ho, -1)
        if v == "numba":  # unfold's [B, in, L] is the cols kernel's layout; [B, out, L] the convolution's
            from .nbkernels import numba_condensed_cols

            lin = self.linear
            y = numba_condensed_cols(cols, lin.values, lin.indices, lin.bias)
            return y.view(b, self.out_channels, ho, -1)
        x2 = cols.transpose(1, 2).reshape(b * n_pix, -1)
        y = self.linear.forward_variant(x2, v)  # [B*L, out]
        return y.view(b, n_pix, self.out_channels).transpose(1, 2).reshape(b, self.out_channels, ho, -1)

    def extra_repr(self) -> str:
        v = self.linear.runs() if self.variant in ("auto", "fused") else repr(self.variant)
        return (
            f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}, "
            f"padding={self.padding}, k={self.k}, variant={v}"
        )
