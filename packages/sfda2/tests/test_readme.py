"""The README's quickstart runs and does what it says."""

from pathlib import Path

from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        values={
            0: {
                "steps": "len(result.history)",
                "nonfinite": "result.nonfinite",
                "last": "sorted(result.history[-1])",
            },
            1: {
                "reloaded": "accuracy(predict(back, d.target_x)[1].argmax(1), d.target_y)",
                "final": "result.final_acc",
            },
            2: {"images": "len(views)", "folder_steps": "len(folder_result.history)"},
        },
    )
    assert res["steps"] == 2 * 10 and res["nonfinite"] == 0  # 2 epochs of ceil(629 / 64) iterations
    assert set(res["last"]) >= {"pos", "neg", "ifa", "fd", "total"}
    assert res["reloaded"] == res["final"]  # the saved, reloaded model evaluates as the adapted one
    assert (tmp_path / "runs" / "sfda2-digits" / "config.json").is_file()
    assert res["images"] == 24 and res["folder_steps"] == 2  # the synthetic-VisDA block runs alone too
    assert "->" in res["__stdout__"]


def test_readme_names_are_public():
    import iclr24.sfda2 as pkg

    text = README.read_text()
    for name in (
        "SFDA2Config",
        "SourceConfig",
        "adapt",
        "digits_domains",
        "digits_model",
        "train_source",
        "split_timm",
    ):
        assert name in pkg.__all__ and name in text
