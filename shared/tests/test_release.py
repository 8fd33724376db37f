"""Release hygiene: every wheel carries the licence and complete metadata, long descriptions have no links that
break on the package index, and the numpy-only package installs without torch."""

import re
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MEMBERS = [
    ROOT / "shared",
    *sorted(p for p in (ROOT / "packages").iterdir() if (p / "pyproject.toml").exists()),
]
RELATIVE = re.compile(r"\]\((?!https?:|#|mailto:)([^)\s]+)\)")


def meta(member: Path) -> dict:
    return tomllib.loads((member / "pyproject.toml").read_text())["project"]


@pytest.mark.parametrize("member", MEMBERS, ids=lambda p: p.name)
def test_licence_file_and_metadata(member):
    m = meta(member)
    assert m["license"] == "MIT" and m["license-files"] == ["LICENSE"]
    assert (member / "LICENSE").read_text() == (ROOT / "LICENSE").read_text()
    assert m["authors"] and len(m["keywords"]) >= 3
    assert any(c.startswith("Programming Language :: Python :: 3.11") for c in m["classifiers"])
    assert any(c.startswith("Topic :: ") for c in m["classifiers"])
    if member.name != "shared":
        assert m["urls"]["Paper"].startswith("https://")
        assert all(u.startswith("https://") for u in m["urls"].values())


@pytest.mark.parametrize("member", MEMBERS, ids=lambda p: p.name)
def test_long_description_has_no_relative_links(member):
    text = (member / meta(member)["readme"]).read_text()
    bad = RELATIVE.findall(text)
    assert not bad, f"{member.name}/README.md links {bad}: they break on the package index page"


@pytest.mark.parametrize("member", MEMBERS[1:], ids=lambda p: p.name)
def test_readme_head_names_the_licences(member):
    head = "\n".join((member / "README.md").read_text().splitlines()[:8])
    assert "<!-- licence -->" in head and "this package: MIT" in head
    assert "CC BY 4.0" in head, "name the paper's licence (ICLR 2024 papers: CC BY 4.0 on OpenReview)"
    assert "read, never copied" in head or "official code" in head


def test_light_packages_do_not_pull_torch():
    kit = meta(ROOT / "shared")
    # threadpoolctl (pure Python, no dependencies) pins the BLAS/OpenMP pools of every claim run
    assert sorted(d.split(">")[0] for d in kit["dependencies"]) == ["numpy", "threadpoolctl", "tqdm"]
    moco = meta(ROOT / "packages" / "maxent-moco")["dependencies"]
    assert not any(d.startswith("torch") or "[torch" in d or ",torch" in d for d in moco), moco


def test_every_paper_package_star_imports():
    """``from iclr24.<pkg> import *`` works for every installed paper (a name in ``__all__`` that is never imported
    would make it raise)."""
    from iclr24.paperkit.runner.report import discover_papers
    from iclr24.paperkit.runner.testing import check_star_import

    eps = discover_papers()
    assert len(eps) >= 19
    for name, ep in eps.items():
        module = ep.value.split(":")[0].rsplit(".", 1)[0]  # iclr24.<pkg>.reproduce -> iclr24.<pkg>
        assert check_star_import(module), f"{name}: {module}.__all__ is empty"


def test_check_star_import_catches_a_listed_name_that_is_not_imported(tmp_path, monkeypatch):
    import pytest

    from iclr24.paperkit.runner.testing import check_star_import

    (tmp_path / "broken_star_mod.py").write_text("__all__ = ['present', 'bound_terms']\npresent = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(AssertionError, match="bound_terms"):
        check_star_import("broken_star_mod")
