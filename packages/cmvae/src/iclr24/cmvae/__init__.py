"""Deep Generative Clustering with Multimodal Diffusion Variational Autoencoders."""

__all__: list[str] = []
