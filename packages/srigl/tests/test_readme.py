import contextlib
import io
import re
from pathlib import Path

import pytest


@pytest.mark.slow  # imports timm and trains a tiny ViT for 20 steps
def test_readme_quickstart_runs_and_condensed_matches():
    text = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    ns: dict = {}
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        exec(compile(code, "README.md", "exec"), ns)
    assert ns["sparsifier"].step_count == 20
    assert ns["sparsifier"].density() == pytest.approx(0.1, abs=0.005)
    ns["sparsifier"].check_invariants()
    assert float(buf.getvalue().strip().splitlines()[-1]) < 1e-4
