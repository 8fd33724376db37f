"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("maxent-moco: claim checks not written yet")


PAPER = Paper(
    name="maxent-moco",
    title="Maximum Entropy Model Correction in Reinforcement Learning",
    summary="MoCoVI/MoCoDyna converge to the true values with an approximate model, faster than VI and model-based planning.",
    run=run,
)
