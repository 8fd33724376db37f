"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("persona-bias: claim checks not written yet")


PAPER = Paper(
    name="persona-bias",
    title="Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs",
    summary="The persona-bias evaluation pipeline against any LLM endpoint recovers planted persona biases with the paper's statistics.",
    run=run,
)
