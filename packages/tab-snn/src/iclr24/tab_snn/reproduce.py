"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    return []  # placeholder until the claim checks are written


PAPER = Paper(
    name="tab-snn",
    title="TAB: Temporal Accumulated Batch Normalization in Spiking Neural Networks",
    summary="(in progress)",
    run=run,
)
