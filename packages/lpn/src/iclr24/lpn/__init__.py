"""What's in a Prior? Learned Proximal Networks for Inverse Problems."""

__all__: list[str] = []
