"""An optional fused C++ kernel for the condensed matmul (built on first use with ``torch.utils.cpp_extension``;
needs a C++ compiler and ninja). One pass over the ``n x k`` values: gather, multiply, add, with ``int16`` or
``int32`` indices and rows split across threads by ``at::parallel_for``. Everything works without it."""

from __future__ import annotations

import os
import threading
import warnings

import torch

__all__ = ["load_kernel", "kernel_available", "fused_condensed_linear"]

_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>

template <typename I>
static void run(const float* __restrict x, const float* __restrict v, const I* __restrict idx,
                const float* __restrict bias, float* __restrict y, int64_t B, int64_t in, int64_t n,
                int64_t k) {
  at::parallel_for(0, n, 32, [&](int64_t s, int64_t e) {
    for (int64_t b = 0; b < B; ++b) {
      const float* xb = x + b * in;
      float* yb = y + b * n;
      for (int64_t i = s; i < e; ++i) {
        const float* vi = v + i * k;
        const I* ii = idx + i * k;
        float acc = 0.f;
#pragma omp simd reduction(+ : acc)
        for (int64_t j = 0; j < k; ++j) acc += vi[j] * xb[ii[j]];
        yb[i] = acc + (bias ? bias[i] : 0.f);
      }
    }
  });
}

torch::Tensor condensed_linear(torch::Tensor x, torch::Tensor values, torch::Tensor idx,
                               c10::optional<torch::Tensor> bias) {
  TORCH_CHECK(x.dim() == 2 && x.scalar_type() == at::kFloat, "x must be float32 [B, in]");
  TORCH_CHECK(values.dim() == 2 && values.scalar_type() == at::kFloat, "values must be float32 [n, k]");
  x = x.contiguous(); values = values.contiguous(); idx = idx.contiguous();
  const int64_t B = x.size(0), in = x.size(1), n = values.size(0), k = values.size(1);
  auto y = torch::empty({B, n}, x.options());
  const float* bp = nullptr;
  torch::Tensor bc;
  if (bias.has_value() && bias->defined()) { bc = bias->contiguous(); bp = bc.data_ptr<float>(); }
  if (idx.scalar_type() == at::kShort)
    run<int16_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int16_t>(), bp,
                 y.data_ptr<float>(), B, in, n, k);
  else if (idx.scalar_type() == at::kInt)
    run<int32_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int32_t>(), bp,
                 y.data_ptr<float>(), B, in, n, k);
  else TORCH_CHECK(false, "indices must be int16 or int32");
  return y;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("condensed_linear", &condensed_linear); }
"""

_lock = threading.Lock()
_module = None
_failed: str | None = None


def load_kernel(verbose: bool = False):
    """Build (once, cached by torch in ``~/.cache/torch_extensions``) and return the extension, or ``None`` with
    a warning when no compiler is available. ``SRIGL_NO_KERNEL=1`` disables it."""
    global _module, _failed
    if os.environ.get("SRIGL_NO_KERNEL"):
        return None
    with _lock:
        if _module is not None or _failed is not None:
            return _module
        try:
            from torch.utils.cpp_extension import load_inline

            _module = load_inline(
                name="srigl_condensed_v1",
                cpp_sources=[_SOURCE],
                functions=None,
                extra_cflags=["-O3", "-march=native", "-fopenmp-simd", "-ffast-math"],
                verbose=verbose,
            )
        except Exception as e:  # noqa: BLE001 - any build failure means: fall back to the torch variants
            _failed = f"{type(e).__name__}: {str(e)[:300]}"
            warnings.warn(
                f"srigl: the fused C++ kernel could not be built ({_failed}); using the pure torch "
                f"condensed variants",
                stacklevel=2,
            )
    return _module


def kernel_available() -> bool:
    return load_kernel() is not None


def fused_condensed_linear(
    x: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``y[b, i] = sum_j values[i, j] * x[b, indices[i, j]] + bias[i]`` by the fused kernel (float32 CPU).

    x ``[B, in]``, values/indices ``[n, k]`` (indices int16 or int32). Raises ``RuntimeError`` if unavailable."""
    mod = load_kernel()
    if mod is None:
        raise RuntimeError(f"the fused C++ kernel is unavailable ({_failed or 'disabled'})")
    return mod.condensed_linear(x, values, indices, bias)
