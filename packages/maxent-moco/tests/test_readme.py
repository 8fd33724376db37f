import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_quickstart_runs_and_prints_what_it_says(capsys):
    text = README.read_text()
    code = re.findall(r"```python\n(.*?)```", text, re.S)[0]
    exec(compile(code, str(README), "exec"), {})
    out = capsys.readouterr().out
    shown = re.search(r"prints\n\n```\n(.*?)```", text, re.S).group(1)
    for line in shown.strip().splitlines():
        assert line.strip() in out
