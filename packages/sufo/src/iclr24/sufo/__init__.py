"""Interpreting fine-tuned transformer feature spaces with SUFO."""

__all__: list[str] = []
