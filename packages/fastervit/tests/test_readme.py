"""The README's Python blocks run as written (quickstart and the plug-in HAT block)."""

from pathlib import Path

import torch

from iclr24.paperkit.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path):
    ns = run_readme_blocks(README, cwd=tmp_path)
    assert ns["logits"].shape == (2, 10) and ns["big"].shape == (1, 10) and ns["odd"].shape == (1, 10)
    assert [tuple(f.shape) for f in ns["feats"]] == [
        (1, 64, 56, 56),
        (1, 128, 28, 28),
        (1, 256, 14, 14),
        (1, 512, 7, 7),
    ]
    assert ns["net"](torch.randn(1, 3, 100, 76)).shape == (1, 10)  # the HAT stage pads and crops any size
    assert "30,896,970" in ns["__stdout__"] or "30896970" in ns["__stdout__"]
