"""run_readme_blocks: each ```python block alone in a fresh interpreter, unless marked as a continuation."""

import pytest

from iclr24.paperkit.runner.testing import CONTINUES
from iclr24.paperkit.runner.testing import readme_block_groups
from iclr24.paperkit.runner.testing import run_readme_blocks

FENCE = "```"


def _readme(tmp_path, *blocks):
    """A README of python blocks; a block given as (CONTINUES, code) is marked a continuation."""
    parts = ["# Demo\n"]
    for b in blocks:
        marker, code = b if isinstance(b, tuple) else (None, b)
        parts.append(
            "Some prose.\n\n" + (f"{marker}\n" if marker else "") + f"{FENCE}python\n{code}{FENCE}\n"
        )
    p = tmp_path / "README.md"
    p.write_text("\n".join(parts))
    return p


def test_a_block_that_needs_the_one_before_fails_alone(tmp_path):
    p = _readme(tmp_path, "x = 41\n", "print(x + 1)\n")
    with pytest.raises(AssertionError, match=r"(?s)README.md python block 1 failed.*NameError: name 'x'"):
        run_readme_blocks(p)
    res = run_readme_blocks(p, blocks=[0])  # a block left out (it needs files, a GPU, ...) does not run
    assert res["__stdout__"] == ""


def test_a_continuation_runs_after_the_block_before(tmp_path):
    p = _readme(tmp_path, "x = 41\n", (CONTINUES, "print(x + 1)\n"), "print('alone')\n")
    assert readme_block_groups(p) == [[0, 1], [2]]
    res = run_readme_blocks(p, values={1: {"y": "x + 1"}})
    assert res["y"] == 42 and res["__stdout__"] == "42\nalone\n"
    assert run_readme_blocks(p, blocks=[1])["__stdout__"] == "42\n"  # a picked continuation brings its head


def test_each_group_gets_a_fresh_interpreter(tmp_path):
    """Module state (an import's side effect, os.environ) does not leak from one block into the next."""
    p = _readme(
        tmp_path,
        "import os\nos.environ['README_BLOCK_0'] = '1'\nimport json\n",
        "import os, sys\nassert 'README_BLOCK_0' not in os.environ and 'json' not in dir()\n",
    )
    run_readme_blocks(p)


def test_blocks_run_in_cwd_and_values_come_back_as_plain_data(tmp_path):
    p = _readme(
        tmp_path,
        "import numpy as np\nopen('made.txt', 'w').write('hi')\na = np.arange(3)\nt = (1, 2.5)\nsteps=600\n",
    )
    work = tmp_path / "work"
    res = run_readme_blocks(
        p,
        cwd=work,
        values={0: {"a": "a", "s": "a.sum()", "t": "t", "steps": "steps"}},
        replace={"steps=600": "steps=3"},
    )
    assert res["a"] == [0, 1, 2] and res["s"] == 3 and res["t"] == [1, 2.5] and res["steps"] == 3
    assert (work / "made.txt").read_text() == "hi"
    with pytest.raises(AssertionError, match="occurs in no python block"):
        run_readme_blocks(p, replace={"steps=7": "steps=3"})


def test_a_first_block_cannot_continue(tmp_path):
    p = _readme(tmp_path, (CONTINUES, "x = 1\n"))
    with pytest.raises(AssertionError, match="no block comes before it"):
        readme_block_groups(p)
