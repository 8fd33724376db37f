"""``package_paper`` reads a reproduce module's Paper from its own names and its distribution's description."""

import sys
import types
from importlib.metadata import metadata

import pytest

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import ClaimSpec
from iclr24.paperkit import Paper
from iclr24.paperkit.declare import package_paper


def _module(name: str, **names) -> str:
    mod = types.ModuleType(name)
    vars(mod).update(names)
    sys.modules[name] = mod
    return name


def test_package_paper_reads_the_module_and_the_distribution():
    def run(config):
        return ClaimSet("paperkit", config)

    def paper_scale(device):
        return {}

    row = ClaimSpec(id="a", kind="check", claim="c", metric="m", baseline="b", data="d", rule="ours >= 0")
    name = _module("_declare_probe_full", NAME="paperkit", run=run, CLAIMS=(row,), paper_scale=paper_scale)
    try:
        paper = package_paper(name, summary="a summary", data=("mnist",), threads=2)
    finally:
        del sys.modules[name]
    assert isinstance(paper, Paper)
    assert paper.name == "paperkit"
    assert paper.title == metadata("iclr24-paperkit")["Summary"]
    assert (paper.run, paper.claims, paper.paper_scale) == (run, (row,), paper_scale)
    assert (paper.summary, paper.data, paper.threads) == ("a summary", ("mnist",), 2)


def test_package_paper_given_fields_win_and_absent_ones_default():
    name = _module("_declare_probe_bare", PAPER_NAME="paperkit", run=lambda config: [])
    try:
        paper = package_paper(name, summary="s", name="paperkit", title="my title")
        with pytest.raises(ValueError, match="defines no NAME"):
            package_paper(name, summary="s")
    finally:
        del sys.modules[name]
    assert (paper.name, paper.title, paper.claims, paper.paper_scale) == ("paperkit", "my title", (), None)
