"""An optional fused C++ kernel for the condensed matmul (built on first use with ``torch.utils.cpp_extension``;
needs a C++ compiler and ninja). One pass over the ``n x k`` values: gather, multiply, add, with ``int16`` or
``int32`` indices and rows split across threads by ``at::parallel_for`` (OpenMP, torch's intra-op threads). Everything works without it."""

from __future__ import annotations

import os
import sys
import threading
import warnings

import torch

from iclr24.paperkit.errors import InputError

__all__ = [
    "build_kernel",
    "kernel_status",
    "load_kernel",
    "kernel_available",
    "kernel_built",
    "fused_condensed_linear",
    "KERNEL_MODES",
    "TOKENS_MIN_ROWS",
    "row_mode",
    "fused_condensed_cols",
]

_SOURCE = r"""
#include <torch/extension.h>
#include <ATen/Parallel.h>
#include <ATen/EmptyTensor.h>
#include <algorithm>
#include <cstring>
#include <vector>
#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#define SRIGL_AVX2 1
#endif

// The last k % 16 non-zeros of a row, one compiled body shared by the vector row kernels (identical rounding).
template <typename I>
__attribute__((noinline)) static float tail(float acc, const float* xb, const float* vi, const I* ii, int64_t j,
                                            int64_t k) {
  for (; j < k; ++j) acc += vi[j] * xb[ii[j]];
  return acc;
}

// Software prefetch of the row after next (pv: its values, pi: its indices) into L1, spread over the row's loop:
// the lines of non-zeros [j, j + N) per step, the rest once the loop is done. The layer is cache-cold between
// calls in a model; a burst of ~30 prefetches at the start of each row (the previous version) stalled on the
// line-fill buffers (measured 57 -> 55 us cache-cold, 47 -> 46 us warm at batch 1, 3072 -> 768, 90 %).
template <typename I, int N>
static inline void ahead(const char* pv, const char* pi, int64_t j) {
  for (int o = 0; o < N * 4; o += 64) __builtin_prefetch(pv + 4 * j + o, 0, 3);
  for (int o = 0; o < N * int(sizeof(I)); o += 64) __builtin_prefetch(pi + sizeof(I) * j + o, 0, 3);
}
template <typename I>
static inline void ahead_rest(const char* pv, const char* pi, int64_t j, int64_t k) {
  for (int64_t o = 4 * j; o < 4 * k; o += 64) __builtin_prefetch(pv + o, 0, 3);
  for (int64_t o = int64_t(sizeof(I)) * j; o < int64_t(sizeof(I)) * k; o += 64) __builtin_prefetch(pi + o, 0, 3);
}

// Plain loop: the compiler vectorises it (hardware gathers where it chooses to).
template <typename I>
static inline float row_plain(const float* __restrict xb, const float* __restrict vi, const I* __restrict ii,
                              int64_t k, const char* pv, const char* pi) {
  ahead_rest<I>(pv, pi, 0, k);
  float acc = 0.f;
#pragma omp simd reduction(+ : acc)
  for (int64_t j = 0; j < k; ++j) acc += vi[j] * xb[ii[j]];
  return acc;
}

#ifdef SRIGL_AVX2
static inline float hsum(__m256 v) {
  __m128 lo = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  return _mm_cvtss_f32(lo);
}
// Scalar loads of x assembled into a vector (hardware gathers are slow on many CPUs), FMA with 8 values.
template <typename I>
static inline float row_avx(const float* __restrict xb, const float* __restrict vi, const I* __restrict ii,
                            int64_t k, const char* pv, const char* pi) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    ahead<I, 16>(pv, pi, j);
    __m256 g0 = _mm256_set_ps(xb[ii[j + 7]], xb[ii[j + 6]], xb[ii[j + 5]], xb[ii[j + 4]], xb[ii[j + 3]],
                              xb[ii[j + 2]], xb[ii[j + 1]], xb[ii[j]]);
    __m256 g1 = _mm256_set_ps(xb[ii[j + 15]], xb[ii[j + 14]], xb[ii[j + 13]], xb[ii[j + 12]], xb[ii[j + 11]],
                              xb[ii[j + 10]], xb[ii[j + 9]], xb[ii[j + 8]]);
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(vi + j), g0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(vi + j + 8), g1, a1);
  }
  ahead_rest<I>(pv, pi, j, k);
  return tail(hsum(_mm256_add_ps(a0, a1)), xb, vi, ii, j, k);
}
// int16 indices read 4 at a time as one 64-bit word (fewer loads), two accumulators.
static inline float row_avx_packed(const float* __restrict xb, const float* __restrict vi,
                                   const int16_t* __restrict ii, int64_t k, const char* pv, const char* pi) {
  __m256 a0 = _mm256_setzero_ps(), a1 = _mm256_setzero_ps();
  int64_t j = 0;
  for (; j + 16 <= k; j += 16) {
    ahead<int16_t, 16>(pv, pi, j);
    uint64_t q[4];
    std::memcpy(q, ii + j, 32);
#define X(w, s) xb[(uint16_t)(q[w] >> (s))]
    __m256 g0 = _mm256_set_ps(X(1, 48), X(1, 32), X(1, 16), X(1, 0), X(0, 48), X(0, 32), X(0, 16), X(0, 0));
    __m256 g1 = _mm256_set_ps(X(3, 48), X(3, 32), X(3, 16), X(3, 0), X(2, 48), X(2, 32), X(2, 16), X(2, 0));
#undef X
    a0 = _mm256_fmadd_ps(_mm256_loadu_ps(vi + j), g0, a0);
    a1 = _mm256_fmadd_ps(_mm256_loadu_ps(vi + j + 8), g1, a1);
  }
  ahead_rest<int16_t>(pv, pi, j, k);
  return tail(hsum(_mm256_add_ps(a0, a1)), xb, vi, ii, j, k);
}
#endif

#if defined(__AVX512F__) && defined(SRIGL_AVX2)
#define SRIGL_AVX512 1
// AVX-512 hardware gathers, 32 non-zeros per step into ONE 16-lane accumulator: lane l sums the non-zeros
// j = l (mod 16) in the order of j, the same split as row_avx's two 8-lane accumulators, with the same final
// reduction (lane l + lane l+8, then hsum) and the same tail, so the two row kernels give bit-identical results.
template <typename I>
static inline __m512i load16(const I* p) {
  if (sizeof(I) == 2) return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  return _mm512_loadu_si512(p);
}
template <typename I>
static inline float row_gather(const float* __restrict xb, const float* __restrict vi, const I* __restrict ii,
                               int64_t k, const char* pv, const char* pi) {
  __m512 a = _mm512_setzero_ps();
  int64_t j = 0;
  for (; j + 32 <= k; j += 32) {
    ahead<I, 32>(pv, pi, j);
    const __m512 g0 = _mm512_i32gather_ps(load16(ii + j), xb, 4);
    const __m512 g1 = _mm512_i32gather_ps(load16(ii + j + 16), xb, 4);
    a = _mm512_fmadd_ps(_mm512_loadu_ps(vi + j), g0, a);
    a = _mm512_fmadd_ps(_mm512_loadu_ps(vi + j + 16), g1, a);
  }
  ahead_rest<I>(pv, pi, j, k);
  for (; j + 16 <= k; j += 16) a = _mm512_fmadd_ps(_mm512_loadu_ps(vi + j), _mm512_i32gather_ps(load16(ii + j), xb, 4), a);
  const __m256 h = _mm256_add_ps(_mm512_castps512_ps256(a), _mm512_extractf32x8_ps(a, 1));
  return tail(hsum(h), xb, vi, ii, j, k);
}
#endif

template <typename I>
static void run(const float* x, const float* v, const I* idx, const float* bias, float* y, int64_t B, int64_t in,
                int64_t n, int64_t k, int64_t mode) {
  // at least ~32k multiply-adds per task, so small layers are not split across threads
  const int64_t grain = std::max<int64_t>(1, 32768 / std::max<int64_t>(1, k * B));
  at::parallel_for(0, n, grain, [&](int64_t s, int64_t e) {
    for (int64_t b = 0; b < B; ++b) {
      const float* xb = x + b * in;
      float* yb = y + b * n;
      for (int64_t i = s; i < e; ++i) {
        const float* vi = v + i * k;
        const I* ii = idx + i * k;
        const int64_t ahead_row = i + 2 < e ? 2 : 0;  // the row after next (the last two rows: their own, a no-op)
        const char* pv = reinterpret_cast<const char*>(vi + ahead_row * k);
        const char* pi = reinterpret_cast<const char*>(ii + ahead_row * k);
        float acc;
#ifdef SRIGL_AVX512
        if (mode == 4) acc = row_gather(xb, vi, ii, k, pv, pi);
        else
#endif
#ifdef SRIGL_AVX2
        if ((mode == 2 || mode == 4) && sizeof(I) == 2) acc = row_avx_packed(xb, vi, (const int16_t*)ii, k, pv, pi);
        else if (mode >= 1) acc = row_avx(xb, vi, ii, k, pv, pi);
        else acc = row_plain(xb, vi, ii, k, pv, pi);
#else
        acc = row_plain(xb, vi, ii, k, pv, pi);
#endif
        yb[i] = acc + (bias ? bias[i] : 0.f);
      }
    }
  });
}

// Many rows (a ViT's tokens, a batch): a tile of T rows of x is transposed into xt [in, T] (L1/L2-resident), then
// every non-zero of neuron i is an AXPY over the tile's rows, y_t[i, :] += values[i, j] * xt[indices[i, j], :],
// with the T partial sums in vector registers (no gather at all); the [n, T] result is transposed back into y.
typedef float vf16 __attribute__((vector_size(64)));
typedef float vf16u __attribute__((vector_size(64), aligned(4)));
constexpr int64_t kLanes = 16, kTile = 64;

template <int U, typename I>
static inline void tokens_tile(const float* __restrict xt, const float* __restrict vi, const I* __restrict ii,
                               int64_t k, float* __restrict out) {
  vf16 a[U];
  for (int u = 0; u < U; ++u) a[u] = vf16{};
  for (int64_t j = 0; j < k; ++j) {  // Sec. 4.3: y_i = sum_j W_c[i, j] * x[idx[i, j]], for kTile rows at once
    const float w = vi[j];
    const float* p = xt + static_cast<int64_t>(ii[j]) * kTile;
    for (int u = 0; u < U; ++u) a[u] += w * *reinterpret_cast<const vf16u*>(p + u * kLanes);
  }
  for (int u = 0; u < U; ++u) *reinterpret_cast<vf16u*>(out + u * kLanes) = a[u];
}

#ifdef SRIGL_AVX2
static inline void transpose8(const float* s, int64_t ss, float* d, int64_t ds, const float* add) {
  // 8x8 block in registers; add (or nullptr): 8 values added to every stored row (the source rows' bias)
  __m256 r[8], t[8], u[8];
  for (int q = 0; q < 8; ++q) r[q] = _mm256_loadu_ps(s + q * ss);
  for (int q = 0; q < 4; ++q) {
    t[2 * q] = _mm256_unpacklo_ps(r[2 * q], r[2 * q + 1]);
    t[2 * q + 1] = _mm256_unpackhi_ps(r[2 * q], r[2 * q + 1]);
  }
  for (int h = 0; h < 2; ++h) {
    u[4 * h] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0x44);
    u[4 * h + 1] = _mm256_shuffle_ps(t[4 * h], t[4 * h + 2], 0xEE);
    u[4 * h + 2] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0x44);
    u[4 * h + 3] = _mm256_shuffle_ps(t[4 * h + 1], t[4 * h + 3], 0xEE);
  }
  const __m256 b = add ? _mm256_loadu_ps(add) : _mm256_setzero_ps();
  for (int q = 0; q < 4; ++q) {
    _mm256_storeu_ps(d + q * ds, _mm256_add_ps(b, _mm256_permute2f128_ps(u[q], u[q + 4], 0x20)));
    _mm256_storeu_ps(d + (q + 4) * ds, _mm256_add_ps(b, _mm256_permute2f128_ps(u[q], u[q + 4], 0x31)));
  }
}
#endif

// s [a, b] (row stride ss) -> d [b, a] (row stride ds), plus add[i] (if given) on everything from source row i
static void transpose(const float* s, int64_t ss, float* d, int64_t ds, int64_t a, int64_t b,
                      const float* add = nullptr) {
  int64_t a8 = 0;
#ifdef SRIGL_AVX2
  a8 = a - a % 8;
  const int64_t b8 = b - b % 8;
  for (int64_t i = 0; i < a8; i += 8) {
    for (int64_t j = 0; j < b8; j += 8) transpose8(s + i * ss + j, ss, d + j * ds + i, ds, add ? add + i : nullptr);
    for (int64_t j = b8; j < b; ++j)
      for (int64_t q = i; q < i + 8; ++q) d[j * ds + q] = s[q * ss + j] + (add ? add[q] : 0.f);
  }
#endif
  for (int64_t i = a8; i < a; ++i)
    for (int64_t j = 0; j < b; ++j) d[j * ds + i] = s[i * ss + j] + (add ? add[i] : 0.f);
}

template <typename I>
static void run_tokens(const float* x, const float* v, const I* idx, const float* bias, float* y, int64_t R,
                       int64_t in, int64_t n, int64_t k) {
  const int64_t tiles = (R + kTile - 1) / kTile;
  at::parallel_for(0, tiles, 1, [&](int64_t s, int64_t e) {
    std::vector<float> xt(in * kTile, 0.f), yt(n * kTile);
    for (int64_t t = s; t < e; ++t) {
      const int64_t r0 = t * kTile, m = std::min(kTile, R - r0), U = (m + kLanes - 1) / kLanes;
      transpose(x + r0 * in, in, xt.data(), kTile, m, in);
      for (int64_t i = 0; i < n; ++i) {
        const float* vi = v + i * k;
        const I* ii = idx + i * k;
        float* o = yt.data() + i * kTile;
        if (U == 4) tokens_tile<4>(xt.data(), vi, ii, k, o);
        else if (U == 3) tokens_tile<3>(xt.data(), vi, ii, k, o);
        else if (U == 2) tokens_tile<2>(xt.data(), vi, ii, k, o);
        else tokens_tile<1>(xt.data(), vi, ii, k, o);
      }
      transpose(yt.data(), kTile, y + r0 * n, n, n, m, bias);
    }
  });
}

// A convolution's unfolded input x [B, in, L] (L output pixels) is already the transposed layout the tokens loop
// builds: each non-zero is an AXPY over 64 pixels read straight from x (row stride L), and the result goes straight
// into y [B, n, L], the convolution's layout: no transposes. The sums of tokens_tile (equal to its results up to
// float rounding: -ffast-math lets the compiler reassociate each loop on its own).
template <int U, typename I>
static inline void cols_tile(const float* __restrict xs, int64_t ld, const float* __restrict vi,
                             const I* __restrict ii, int64_t k, float bias, float* __restrict out) {
  vf16 a[U];
  for (int u = 0; u < U; ++u) a[u] = vf16{};
  for (int64_t j = 0; j < k; ++j) {  // Sec. 4.3: y_i = sum_j W_c[i, j] * x[idx[i, j]], for 64 pixels at once
    const float w = vi[j];
    const float* p = xs + static_cast<int64_t>(ii[j]) * ld;
    for (int u = 0; u < U; ++u) a[u] += w * *reinterpret_cast<const vf16u*>(p + u * kLanes);
  }
  for (int u = 0; u < U; ++u) *reinterpret_cast<vf16u*>(out + u * kLanes) = a[u] + bias;
}

template <typename I>
static void run_cols(const float* x, const float* v, const I* idx, const float* bias, float* y, int64_t B,
                     int64_t in, int64_t L, int64_t n, int64_t k) {
  const int64_t tiles = (L + kTile - 1) / kTile;
  at::parallel_for(0, B * tiles, 1, [&](int64_t s, int64_t e) {
    std::vector<float> xt;  // a batch's last, partial tile, zero-padded to kTile pixels (no read past x's end)
    float tmp[kTile];
    for (int64_t q = s; q < e; ++q) {
      const int64_t b = q / tiles, t0 = (q % tiles) * kTile, m = std::min(kTile, L - t0);
      const float* xs = x + b * in * L + t0;
      float* yb = y + b * n * L + t0;
      int64_t ld = L;
      if (m < kTile) {
        xt.assign(in * kTile, 0.f);
        for (int64_t c = 0; c < in; ++c) std::memcpy(xt.data() + c * kTile, xs + c * L, m * sizeof(float));
        xs = xt.data();
        ld = kTile;
      }
      const int64_t U = (m + kLanes - 1) / kLanes;
      for (int64_t i = 0; i < n; ++i) {
        const float* vi = v + i * k;
        const I* ii = idx + i * k;
        const float bi = bias ? bias[i] : 0.f;
        float* o = m == kTile ? yb + i * L : tmp;
        if (U == 4) cols_tile<4>(xs, ld, vi, ii, k, bi, o);
        else if (U == 3) cols_tile<3>(xs, ld, vi, ii, k, bi, o);
        else if (U == 2) cols_tile<2>(xs, ld, vi, ii, k, bi, o);
        else cols_tile<1>(xs, ld, vi, ii, k, bi, o);
        if (m < kTile) std::memcpy(yb + i * L, tmp, m * sizeof(float));
      }
    }
  });
}

// The checks both entries share, their inputs made contiguous in place; returns the bias (kept alive in bc) or nullptr.
static const float* prepare(torch::Tensor& x, int64_t xdim, const char* xshape, torch::Tensor& values,
                            torch::Tensor& idx, const c10::optional<torch::Tensor>& bias, torch::Tensor& bc) {
  TORCH_CHECK(x.dim() == xdim && x.scalar_type() == at::kFloat, "x must be float32 ", xshape);
  TORCH_CHECK(values.dim() == 2 && values.scalar_type() == at::kFloat, "values must be float32 [n, k]");
  TORCH_CHECK(idx.sizes() == values.sizes(), "indices must have the shape of values");
  TORCH_CHECK(x.device().is_cpu() && values.device().is_cpu() && idx.device().is_cpu(),
              "the fused kernel runs on the CPU: x, values and indices must be CPU tensors");
  x = x.contiguous(); values = values.contiguous(); idx = idx.contiguous();
  if (!(bias.has_value() && bias->defined())) return nullptr;
  TORCH_CHECK(bias->device().is_cpu() && bias->numel() == values.size(0),
              "bias must be a CPU tensor of out_features values");
  bc = bias->contiguous();
  return bc.data_ptr<float>();
}

torch::Tensor condensed_cols(torch::Tensor x, torch::Tensor values, torch::Tensor idx,
                             c10::optional<torch::Tensor> bias) {
  torch::Tensor bc;
  const float* bp = prepare(x, 3, "[B, in, L]", values, idx, bias, bc);
  const int64_t B = x.size(0), in = x.size(1), L = x.size(2), n = values.size(0), k = values.size(1);
  auto y = at::detail::empty_cpu({B, n, L}, at::kFloat, false, c10::nullopt);
  if (idx.scalar_type() == at::kShort)
    run_cols<uint16_t>(x.data_ptr<float>(), values.data_ptr<float>(),
                       reinterpret_cast<const uint16_t*>(idx.data_ptr<int16_t>()), bp, y.data_ptr<float>(), B, in, L,
                       n, k);
  else if (idx.scalar_type() == at::kInt)
    run_cols<int32_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int32_t>(), bp,
                      y.data_ptr<float>(), B, in, L, n, k);
  else TORCH_CHECK(false, "indices must be int16 or int32");
  return y;
}

torch::Tensor condensed_linear(torch::Tensor x, torch::Tensor values, torch::Tensor idx,
                               c10::optional<torch::Tensor> bias, int64_t mode) {
  torch::Tensor bc;
  const float* bp = prepare(x, 2, "[B, in]", values, idx, bias, bc);
  const int64_t B = x.size(0), in = x.size(1), n = values.size(0), k = values.size(1);
  // the CPU allocator directly, not through the dispatcher (a few microseconds of a cache-cold batch-1 call)
  auto y = at::detail::empty_cpu({B, n}, at::kFloat, false, c10::nullopt);
  if (mode == 3 && idx.scalar_type() == at::kShort)
    run_tokens<uint16_t>(x.data_ptr<float>(), values.data_ptr<float>(),
                         reinterpret_cast<const uint16_t*>(idx.data_ptr<int16_t>()), bp, y.data_ptr<float>(), B, in,
                         n, k);
  else if (mode == 3 && idx.scalar_type() == at::kInt)
    run_tokens<int32_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int32_t>(), bp,
                        y.data_ptr<float>(), B, in, n, k);
  else if (idx.scalar_type() == at::kShort)
    run<int16_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int16_t>(), bp,
                 y.data_ptr<float>(), B, in, n, k, mode);
  else if (idx.scalar_type() == at::kInt)
    run<int32_t>(x.data_ptr<float>(), values.data_ptr<float>(), idx.data_ptr<int32_t>(), bp,
                 y.data_ptr<float>(), B, in, n, k, mode);
  else TORCH_CHECK(false, "indices must be int16 or int32");
  return y;
}

bool has_avx512() {
#ifdef SRIGL_AVX512
  return true;
#else
  return false;
#endif
}

bool has_avx2() {
#ifdef SRIGL_AVX2
  return true;
#else
  return false;
#endif
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  m.def("condensed_linear", &condensed_linear);
  m.def("condensed_cols", &condensed_cols);
  m.def("has_avx2", &has_avx2);
  m.def("has_avx512", &has_avx512);
}
"""

_NAME = "srigl_condensed_v7"
_lock = threading.Lock()
_module = None
_failed: str | None = None


_CFLAGS = ["-O3", "-march=native", "-fopenmp", "-ffast-math"]


def build_directory() -> str:
    """The kernel's build folder: torch's extension cache, one folder per torch installation and flag set.

    torch keys its cache by name only, so two environments (two venvs, a wheel test in a temporary venv) that
    share ``~/.cache/torch_extensions`` would otherwise rebuild the kernel (~1 min) every time they alternate."""
    import hashlib
    from pathlib import Path

    import torch
    from torch.utils.cpp_extension import _get_build_directory

    root = Path(_get_build_directory(_NAME, verbose=False)).parent
    key = "|".join([torch.__file__, torch.__version__, sys.prefix, *_CFLAGS, _SOURCE])
    return str(root / f"{_NAME}-{hashlib.sha256(key.encode()).hexdigest()[:12]}")


def _make_dir(path: str) -> str:
    os.makedirs(path, exist_ok=True)
    return path


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
                name=_NAME,
                cpp_sources=[_SOURCE],
                functions=None,
                extra_cflags=_CFLAGS,
                extra_ldflags=["-fopenmp"],
                verbose=verbose,
                build_directory=_make_dir(build_directory()),
            )
        except Exception as e:  # noqa: BLE001 - any build failure means: fall back to the torch variants
            _failed = f"{type(e).__name__}: {str(e)[:300]}"
            warnings.warn(
                f"srigl: the fused C++ kernel could not be built ({_failed}); using the pure torch "
                f"condensed variants",
                stacklevel=2,
            )
    return _module


def kernel_status() -> str:
    """Why the C++ kernel does or does not run, without building it: ``"built"``, ``"disabled by
    SRIGL_NO_KERNEL"``, ``"failed to build: ..."``, ``"no C++ compiler (...)"``, ``"no ninja (...)"`` or ``"not built
    yet"`` (``srigl build-kernel`` builds it)."""
    import shutil

    if os.environ.get("SRIGL_NO_KERNEL"):
        return "disabled by SRIGL_NO_KERNEL"
    if _failed is not None:
        return f"failed to build: {_failed}"
    if kernel_built():
        return "built"
    cxx = os.environ.get("CXX", "c++")
    if shutil.which(cxx) is None:
        return f"no C++ compiler ({cxx!r} not found on PATH; set CXX or install g++/clang)"
    try:
        from torch.utils.cpp_extension import is_ninja_available

        if not is_ninja_available():
            return "no ninja (pip install ninja), which torch's extension builder needs"
    except ImportError:  # pragma: no cover - a torch without the helper
        pass
    return "not built yet"


def build_kernel(verbose: bool = False) -> str:
    """Build the C++ kernel now, in this process (about 1-2 minutes once; cached per torch installation in
    :func:`build_directory`). Returns the folder; raises ``RuntimeError`` saying why when it cannot be built."""
    status = kernel_status()
    if status.startswith(("disabled", "no C++", "no ninja")):
        raise RuntimeError(f"the C++ kernel cannot be built here: {status}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the failure is raised below instead
        mod = load_kernel(verbose=verbose)
    if mod is None:
        raise RuntimeError(f"the C++ kernel could not be built: {_failed}")
    return build_directory()


def kernel_available() -> bool:
    """True when the kernel loads (builds it first if needed: ~1-2 min once)."""
    return load_kernel() is not None


def kernel_built() -> bool:
    """True when the kernel is loaded or already built in torch's extension cache (so loading it is instant);
    never builds. ``condense(variant="auto")`` uses the kernel only then."""
    if os.environ.get("SRIGL_NO_KERNEL") or _failed is not None:
        return False
    if _module is not None:
        return True
    try:
        from pathlib import Path

        built = any(Path(build_directory()).glob("*.so"))
    except Exception:  # noqa: BLE001 - a torch without this private helper: treat as not built
        return False
    return built and load_kernel() is not None


KERNEL_MODES = {"plain": 0, "avx2": 1, "avx2_packed": 2, "tokens": 3, "avx512_gather": 4}
_row_mode: str | None = None


def row_mode() -> str:
    """The row kernel ``mode="auto"`` runs below :data:`TOKENS_MIN_ROWS` rows: ``avx512_gather`` or
    ``avx2_packed``, whichever ran the 3072 -> 768, 90 % batch-1 layer faster on this CPU (timed once per process,
    about 10 ms, alternating rounds; ``avx2_packed`` where the kernel was built without AVX-512). The two
    give bit-identical results (same per-lane order of the non-zeros, same reduction), so the choice changes
    speed only. Measured 2026-12-02: gathers 1.2x faster on one AVX-512 server CPU, 1.2x slower on another."""
    global _row_mode
    if _row_mode is None:
        mod = load_kernel()
        if mod is None or not mod.has_avx512():
            _row_mode = "avx2_packed"
        else:
            import time

            gen = torch.Generator().manual_seed(0)
            x = torch.randn(1, 3072, generator=gen)
            v = torch.randn(768, 307, generator=gen)
            i = torch.randint(0, 3072, (768, 307), generator=gen).sort(dim=1).values.short()  # sorted rows
            best = {2: float("inf"), 4: float("inf")}
            for _ in range(6):
                for m in best:
                    t = time.perf_counter()
                    for _ in range(5):
                        mod.condensed_linear(x, v, i, None, m)
                    best[m] = min(best[m], time.perf_counter() - t)
            _row_mode = "avx512_gather" if best[4] < best[2] else "avx2_packed"
    return _row_mode


# ``mode="auto"``: ``avx2_packed`` below this many rows, ``tokens`` from it on. Measured (3072->768, 1536->384,
# 192->768 at 10 %, one thread, interleaved medians, load ~4, 2026-12-02): at 2 rows the packed row kernel is
# 1.1-1.5x faster than tokens, at 4 rows tokens is 1.1-2.9x faster than packed, and from 8 rows on 1.3-30x.
TOKENS_MIN_ROWS = 4


def fused_condensed_linear(
    x: torch.Tensor,
    values: torch.Tensor,
    indices: torch.Tensor,
    bias: torch.Tensor | None = None,
    mode: str = "auto",
) -> torch.Tensor:
    """``y[b, i] = sum_j values[i, j] * x[b, indices[i, j]] + bias[i]`` by the fused kernel (float32 CPU).

    x ``[B, in]``, values/indices ``[n, k]`` (indices int16 or int32). ``mode``: ``plain`` (compiler-vectorised
    loop), ``avx2`` (scalar loads of x packed into 8-wide FMAs, two accumulators), ``avx2_packed`` (the same with
    int16 indices read four per 64-bit load; int32 indices fall back to ``avx2``), ``tokens`` (many rows: tiles of
    64 rows transposed into an L1/L2-resident block, every non-zero an AXPY over the tile with the partial sums in
    vector registers, no gather; the fast order from about 8 rows on), ``avx512_gather`` (AVX-512 hardware gathers,
    32 non-zeros a step, bit-identical to ``avx2_packed``/``avx2``, which it runs where built without AVX-512).
    Without AVX2/FMA the row modes run the plain loop (``tokens`` keeps its loop order, with scalar transposes).
    The row modes prefetch the row after next. ``auto`` (default): :func:`row_mode` below :data:`TOKENS_MIN_ROWS`
    rows, ``tokens`` from there on. Raises ``RuntimeError`` if the kernel is unavailable."""
    mod = _module  # the hot path: no lock once loaded (a batch-1 call is tens of microseconds)
    if mod is None:
        mod = load_kernel()
        if mod is None:
            raise RuntimeError(f"the fused C++ kernel is unavailable ({_failed or 'disabled'})")
    if mode == "auto":
        mode = "tokens" if x.dim() == 2 and x.shape[0] >= TOKENS_MIN_ROWS else (_row_mode or row_mode())
    m = KERNEL_MODES.get(mode)
    if m is None:
        raise InputError(f"mode must be one of {['auto', *KERNEL_MODES]}, got {mode!r}")
    return mod.condensed_linear(x, values, indices, bias, m)


def fused_condensed_cols(
    x: torch.Tensor, values: torch.Tensor, indices: torch.Tensor, bias: torch.Tensor | None = None
) -> torch.Tensor:
    """``y[b, i, l] = sum_j values[i, j] * x[b, indices[i, j], l] + bias[i]``: the condensed matmul on a
    convolution's unfolded input ``x [B, in, L]`` (``F.unfold``'s layout), giving ``[B, n, L]`` (the convolution's
    layout) with no transposes: the ``tokens`` loop reading 64 pixels straight from ``x`` (``CondensedConv2d`` runs
    it under ``auto``). Equals ``mode="tokens"`` on the transposed input up to float rounding (measured ResNet-18 at
    batch 1: 32.7 against 33.9 ms). Raises ``RuntimeError`` if the kernel is unavailable."""
    mod = _module
    if mod is None:
        mod = load_kernel()
        if mod is None:
            raise RuntimeError(f"the fused C++ kernel is unavailable ({_failed or 'disabled'})")
    return mod.condensed_cols(x, values, indices, bias)
