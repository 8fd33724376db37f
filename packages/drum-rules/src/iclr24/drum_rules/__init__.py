"""Faithful Rule Extraction for Differentiable Rule Learning Models."""

__all__: list[str] = []
