"""The README's quickstart runs and does what it says."""

from pathlib import Path

from iclr24.paperkit.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_quickstart():
    ns = run_readme_blocks(README)
    res = ns["result"]
    assert len(res.history) == 2 * 10 and res.nonfinite == 0  # 2 epochs of ceil(629 / 64) iterations
    assert set(res.history[-1]) >= {"pos", "neg", "ifa", "fd", "total"}
    assert "->" in ns["__stdout__"]


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
