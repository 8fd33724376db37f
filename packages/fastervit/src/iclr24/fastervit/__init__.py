"""FasterViT: Fast Vision Transformers with Hierarchical Attention."""

__all__: list[str] = []
