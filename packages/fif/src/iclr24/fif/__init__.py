"""Lifting Architectural Constraints of Injective Flows."""

__all__: list[str] = []
