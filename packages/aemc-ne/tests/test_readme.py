from pathlib import Path

from iclr24.paperkit.runner.testing import readme_blocks
from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_readme_quickstart_runs_and_shows_the_gain(tmp_path):
    # block 2 needs the MovieLens files: left out (its import line is checked below)
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        blocks=[0, 1, 3],
        values={
            0: {"ae": "ae.score(data.test)", "ne": "ne.score(data.test)"},
            1: {"back": "back.score(data.test)"},
            3: {"shape": "model.complete().shape"},
        },
    )
    assert res["ne"] < res["ae"] and res["back"] == res["ne"]  # the reloaded model is the trained one
    assert "AEMC-NE" in res["__stdout__"] and (tmp_path / "aemcne-synthetic" / "config.json").is_file()
    assert res["shape"] == [30, 50]


def test_readme_own_data_block_uses_public_api():
    import iclr24.aemc_ne as pkg

    block = readme_blocks(README)[2]
    first = block.splitlines()[0]
    names = [n.strip() for n in first.split("import", 1)[1].split(",")]
    assert all(n in pkg.__all__ for n in names)
