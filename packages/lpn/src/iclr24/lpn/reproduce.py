"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("lpn: claim checks not written yet")


PAPER = Paper(
    name="lpn",
    title="What's in a Prior? Learned Proximal Networks for Inverse Problems",
    summary="Learned proximal networks are exact proximal operators of a learned convex-in-y prior that can be evaluated, and work as PnP denoisers.",
    run=run,
)
