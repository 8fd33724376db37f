"""Placeholder: this package is scaffolded but its method and claims are not built yet (no claims are run)."""

from __future__ import annotations

from iclr24.paperkit import ClaimSet, Paper, RunConfig

NAME = "rlcf"


def run(config: RunConfig) -> ClaimSet:
    return ClaimSet(NAME, config)  # no claims until the method is built


PAPER = Paper(
    name="rlcf",
    title="Test-Time Adaptation with CLIP Reward for Zero-Shot Generalization in Vision-Language Models",
    summary="(in progress)",
    run=run,
)
