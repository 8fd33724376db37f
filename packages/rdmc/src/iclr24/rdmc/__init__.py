"""Reverse Diffusion Monte Carlo."""

__all__: list[str] = []
