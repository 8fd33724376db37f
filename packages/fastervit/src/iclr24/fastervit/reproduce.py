"""The paper's claims, checked at CPU scale: ``run(config) -> list[Claim]`` in smoke/quick/full modes."""

from __future__ import annotations

from iclr24.paperkit import Claim, Paper, RunConfig


def run(config: RunConfig) -> list[Claim]:
    raise NotImplementedError("fastervit: claim checks not written yet")


PAPER = Paper(
    name="fastervit",
    title="FasterViT: Fast Vision Transformers with Hierarchical Attention",
    summary="The FasterViT family inside timm, with HAT as a plug-in block; parameter counts equal the official release.",
    run=run,
)
