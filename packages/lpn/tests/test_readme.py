import re
from pathlib import Path


def test_readme_quickstart_runs(capsys):
    text = (Path(__file__).parents[1] / "README.md").read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S).group(1)
    exec(compile(code, "README quickstart", "exec"), {})
    out = capsys.readouterr().out
    assert "PSNR noisy" in out and "prior at 5 test digits" in out and "PnP-PGD" in out
