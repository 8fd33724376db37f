"""The hardware a paper-scale row extrapolates to: the lent H200's dense bf16 peak and the fraction of it a real
training step is assumed to sustain (stated in every row). :mod:`iclr24.paperkit.scale` re-exports both."""

from __future__ import annotations

__all__ = ["H200_BF16_PEAK_FLOPS", "H200_UTILISATION"]

H200_BF16_PEAK_FLOPS = 790e12  # dense bf16 matrix work measured on the lent H200 (about 790 TFLOP/s)
# the assumed fraction of that peak a real training step sustains (stated in every row)
H200_UTILISATION = 0.35
