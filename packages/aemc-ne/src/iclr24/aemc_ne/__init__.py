"""Neuron-Enhanced Autoencoder Matrix Completion and Collaborative Filtering."""

__all__: list[str] = []
