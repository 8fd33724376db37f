"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("rdmc: claim checks not written yet")


PAPER = Paper(
    name="rdmc",
    title="Reverse Diffusion Monte Carlo",
    summary="rdMC samples multimodal unnormalised densities better than Langevin (ULA/MALA) at equal oracle budget.",
    run=run,
)
