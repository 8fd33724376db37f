"""The README's Python blocks run as written (quickstart and the plug-in HAT block)."""

from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path):
    shapes = {k: f"list({k}.shape)" for k in ("logits", "big", "odd")}
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        values={
            0: {**shapes, "feats": "[list(f.shape) for f in feats]"},
            # the HAT stage pads and crops any size
            1: {"net": "list(net(__import__('torch').randn(1, 3, 100, 76)).shape)"},
            # train -> model folder -> from_pretrained -> evaluate
            2: {
                "files": "sorted(p.name for p in __import__('pathlib').Path('runs/digits/model').iterdir())",
                "logged": "__import__('pathlib').Path('runs/digits/logs/metrics.jsonl').is_file()",
            },
        },
    )
    assert res["files"] == ["config.json", "model.safetensors", "provenance.json"] and res["logged"]
    assert "True" in res["__stdout__"]
    assert res["logits"] == [2, 10] and res["big"] == [1, 10] and res["odd"] == [1, 10]
    assert res["feats"] == [[1, 64, 56, 56], [1, 128, 28, 28], [1, 256, 14, 14], [1, 512, 7, 7]]
    assert res["net"] == [1, 10]
    assert "30,896,970" in res["__stdout__"] or "30896970" in res["__stdout__"]
