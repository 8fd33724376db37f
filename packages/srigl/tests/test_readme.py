from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing import run_readme_blocks


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
            1: {  # train -> save_pretrained -> from_pretrained -> evaluate / condense
                "files": "sorted(p.name for p in __import__('pathlib').Path('runs/srigl-model').iterdir())",
                "logged": "__import__('pathlib').Path('runs/srigl-logs/metrics.jsonl').is_file()",
                "state": "__import__('pathlib').Path('runs/srigl-state.pt').is_file()",
                "masked": "model.density()",
            },
            2: {
                "world": "info.world_size",
                "plain": "ddp_model is model",
                "density1": "sparsifier.density()",
            },
        },
    )
    assert res["steps"] == 20 and res["density"] == pytest.approx(0.1, abs=0.005) and res["invariants"]
    assert (
        res["files"] == ["config.json", "model.safetensors", "provenance.json"]
        and res["logged"]
        and res["state"]
    )
    assert res["masked"] == pytest.approx(0.1, abs=0.01)
    assert res["world"] == 1 and res["plain"] and res["density1"] == pytest.approx(0.1, abs=0.01)
    lines = res["__stdout__"].strip().splitlines()
    assert lines[-2:] == ["True", "True"]  # the folder's model and its condensed copy: the trained accuracy
    assert float(lines[-3]) < 1e-4  # the quickstart: the condensed model gives the masked model's outputs
