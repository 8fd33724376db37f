"""ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference."""

__all__: list[str] = []
