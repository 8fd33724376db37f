"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    return []  # placeholder until the claim checks are written


PAPER = Paper(
    name="opposing-signals",
    title="Outliers with Opposing Signals Have an Outsized Effect on Neural Network Optimization",
    summary="(in progress)",
    run=run,
)
