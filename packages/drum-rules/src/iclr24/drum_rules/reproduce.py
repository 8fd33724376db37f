"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("drum-rules: claim checks not written yet")


PAPER = Paper(
    name="drum-rules",
    title="Faithful Rule Extraction for Differentiable Rule Learning Models",
    summary="Faithful extraction from DRUM gives rules that are sound and complete for the model; path-based extraction is not.",
    run=run,
)
