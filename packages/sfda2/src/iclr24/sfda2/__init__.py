"""SF(DA)^2: Source-free Domain Adaptation Through the Lens of Data Augmentation."""

__all__: list[str] = []
