"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("srigl: claim checks not written yet")


PAPER = Paper(
    name="srigl",
    title="Dynamic Sparse Training with Structured Sparsity (SRigL)",
    summary="Constant fan-in structured sparse training with neuron ablation matches RigL's accuracy and condenses into fast small dense layers.",
    run=run,
)
