from pathlib import Path

import pytest

from iclr24.paperkit.testing import run_readme_blocks


@pytest.mark.slow  # imports timm and trains a tiny ViT for 20 steps
def test_readme_quickstart_runs_and_condensed_matches(tmp_path):
    """Each Python block alone in a fresh interpreter: the quickstart and the torchrun block (one process here)."""
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {
                "steps": "sparsifier.step_count",
                "density": "sparsifier.density()",
                "invariants": "sparsifier.check_invariants() is None",
            },
            1: {
                "world": "info.world_size",
                "plain": "ddp_model is model",
                "density1": "sparsifier.density()",
            },
        },
    )
    assert res["steps"] == 20 and res["density"] == pytest.approx(0.1, abs=0.005) and res["invariants"]
    assert res["world"] == 1 and res["plain"] and res["density1"] == pytest.approx(0.1, abs=0.01)
    quick = [ln for ln in res["__stdout__"].strip().splitlines()]
    assert float(quick[-1]) < 1e-4  # the condensed model gives the masked model's outputs
