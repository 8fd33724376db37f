"""Outliers with Opposing Signals Have an Outsized Effect on Neural Network Optimization."""

__all__: list[str] = []
