"""The README's Python quickstart runs as written."""

from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {"bbox": "list(bbox.shape)", "aligned": "aligned"},
            1: {"same": "torch.equal(again[0], bbox)"},
        },
    )
    assert res["bbox"] == [4, 12, 4] and res["aligned"] >= 0
    assert res["same"] and (tmp_path / "lace-tiny" / "model.safetensors").is_file()
    assert (tmp_path / "samples.png").stat().st_size > 0
