"""Towards Aligned Layout Generation via Diffusion Model with Aesthetic Constraints."""

__all__: list[str] = []
