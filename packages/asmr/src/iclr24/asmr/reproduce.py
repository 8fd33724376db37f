"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("asmr: claim checks not written yet")


PAPER = Paper(
    name="asmr",
    title="ASMR: Activation-Sharing Multi-Resolution Coordinate Networks for Efficient Inference",
    summary="ASMR reaches SIREN-level fidelity at a near-constant, far smaller MAC count per point.",
    run=run,
)
