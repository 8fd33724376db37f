"""Dynamic Sparse Training with Structured Sparsity (SRigL)."""

__all__: list[str] = []
