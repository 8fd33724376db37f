"""Placeholder: this package is scaffolded but its method and claims are not built yet (no claims are run)."""

from __future__ import annotations

from iclr24.paperkit import ClaimSet, Paper, RunConfig

NAME = "cmvae"


def run(config: RunConfig) -> ClaimSet:
    return ClaimSet(NAME, config)  # no claims until the method is built


PAPER = Paper(
    name="cmvae",
    title="Deep Generative Clustering with Multimodal Diffusion Variational Autoencoders",
    summary="(in progress)",
    run=run,
)
