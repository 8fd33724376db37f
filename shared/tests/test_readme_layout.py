"""Every package README has the layout of docs/CONTRIBUTING.md ("One README layout"): the summary, `## Quickstart`
(`### Install`, `### Python quickstart`), then `## Paper -> code` as the next section, the rest, `## Citation` last.
The scaffold of tools/new_package.py has it too."""

import re
from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing_workflow import load_script

ROOT = Path(__file__).resolve().parents[2]
READMES = sorted(ROOT.glob("packages/*/README.md"))


def headings(text: str) -> list[tuple[int, str]]:
    """(line number, heading) of every `##`/`###` heading outside code fences."""
    out, fence = [], False
    for i, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            fence = not fence
        elif not fence and re.match(r"#{2,3} ", line):
            out.append((i, line))
    return out


def layout_problems(text: str) -> list[str]:
    """What keeps a README from the layout (empty when it has it)."""
    heads = headings(text)
    top = [h for _, h in heads if h.startswith("## ")]
    if top.count("## Quickstart") != 1 or top.count("## Paper -> code") != 1:
        return [f"needs one '## Quickstart' and one '## Paper -> code', has {top}"]
    problems = []
    if top[0] != "## Quickstart":
        problems.append(
            f"the first section is {top[0]!r}, not '## Quickstart' (title and summary come before it)"
        )
    q = top.index("## Quickstart")
    if top[q + 1] != "## Paper -> code":
        problems.append(f"the section after '## Quickstart' is {top[q + 1]!r}, not '## Paper -> code'")
    if top[-1] != "## Citation":
        problems.append(f"the last section is {top[-1]!r}, not '## Citation'")
    lines = text.splitlines()
    start = next(i for i, h in heads if h == "## Quickstart")
    end = next(i for i, h in heads if h == "## Paper -> code")
    subs = [h for i, h in heads if start < i < end]
    if not (len(subs) == 2 and subs[0] == "### Install" and subs[1].startswith("### Python quickstart")):
        problems.append(
            f"the Quickstart's subsections are {subs}, not '### Install', '### Python quickstart'"
        )
    fences = [i for i, line in enumerate(lines, 1) if line.startswith("```python")]
    if not fences or not start < fences[0] < end:
        problems.append("the README's first ```python block is not in the Quickstart")
    after = [i for i, h in heads if i > end and h.startswith("## ")]
    table = lines[end : after[0] - 1 if after else len(lines)]
    if not any(line.startswith("|") for line in table):
        problems.append("the Paper -> code section has no table")
    return problems


@pytest.mark.parametrize("readme", READMES, ids=lambda p: p.parent.name)
def test_readme_has_the_layout(readme):
    assert not layout_problems(readme.read_text()), layout_problems(readme.read_text())


def test_there_are_nineteen_readmes():
    assert len(READMES) >= 19


def test_the_scaffold_readme_has_the_layout():
    mod = load_script(ROOT / "tools" / "new_package.py")
    readme = mod.files("demo-paper", "demo_paper", "A Demo", "demo claim", [])["README.md"]
    assert not layout_problems(readme), layout_problems(readme)


def test_the_check_names_what_is_out_of_place():
    good = (
        "# t\n\nsummary\n\n## Quickstart\n\n### Install\n\n```bash\npip install t\n```\n\n### Python quickstart\n\n"
        "```python\nimport t\n## not a heading\n```\n\n## Paper -> code\n\n| a | b |\n|---|---|\n\n## CLI\n\n"
        "## Citation\n"
    )
    assert layout_problems(good) == []
    late = good.replace("## Paper -> code\n\n| a | b |\n|---|---|\n\n## CLI\n\n", "## CLI\n\n") + (
        "\n## Paper -> code\n\n| a | b |\n"
    )
    assert any("not '## Paper -> code'" in p for p in layout_problems(late))
    assert any(
        "one '## Quickstart'" in p for p in layout_problems(good.replace("## Quickstart", "## Install"))
    )
    no_table = good.replace("| a | b |\n|---|---|\n", "words\n")
    assert layout_problems(no_table) == ["the Paper -> code section has no table"]
