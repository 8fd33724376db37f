"""TAB: Temporal Accumulated Batch Normalization in Spiking Neural Networks."""

__all__: list[str] = []
