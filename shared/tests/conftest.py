import sys
import textwrap

import pytest

FAKE_MODULE = """
import os

from iclr24.paperkit import Claim, ClaimSet, Paper


def _ok(cfg):
    plot = cfg.out / "plot.txt"
    plot.write_text("a plot")
    return [Claim(paper="fake-ok", claim="ok beats base", metric="score, higher is better",
                  ours=2.0, baseline_name="base", baseline=1.0, rule="ours > baseline",
                  details={"mode": cfg.mode, "seed": cfg.seed}, artifacts=[cfg.artifact(plot)]),
            Claim(paper="fake-ok", claim="a claim that fails", metric="x", ours=1.0,
                  baseline_name="base", baseline=2.0, rule="ours > baseline")]


def _crash(cfg):
    raise RuntimeError("boom in fake-crash")


def _v2(cfg):
    cs = ClaimSet("fake-v2", cfg)
    with cs.timed("a measurement"):
        (cfg.out / "p.png").write_bytes(b"png")
        cs.add(claim="v2 beats base", metric="m", ours=3.0, baseline_name="base", baseline=1.0,
               rule="ours > baseline", artifacts=[cs.artifact("p.png")])
    with cs.timed("a measurement that raises"):
        raise ValueError("measured nothing")
    cs.fact("threads", value=int(os.environ.get("OMP_NUM_THREADS", "0")), description="the worker's threads")
    return cs


OK = Paper(name="fake-ok", title="A fake paper", summary="fake one-line claim", run=_ok)
CRASH = Paper(name="fake-crash", title="A crashing paper", summary="crashes", run=_crash)
V2 = Paper(name="fake-v2", title="A v2 paper", summary="claim set", run=_v2, data=("mnist",))
NOT_A_PAPER = 42
"""


def write_paper_site(root, module, source, papers):
    """A folder to put on sys.path that registers ``papers`` ({name: attribute of ``module``}) through a real
    ``iclr24.papers`` entry point: the module ``module.py`` (``source``, dedented) and a dist-info folder."""
    root.mkdir()
    (root / f"{module}.py").write_text(textwrap.dedent(source))
    di = root / f"{module}-0.0.1.dist-info"
    di.mkdir()
    dist = module.replace("_", "-")
    (di / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.0.1\n")
    lines = "".join(f"{name} = {module}:{attr}\n" for name, attr in papers.items())
    (di / "entry_points.txt").write_text("[iclr24.papers]\n" + lines)
    return root


@pytest.fixture
def paper_site(tmp_path):
    """``paper_site(module, source, papers)``: :func:`write_paper_site` into ``tmp_path / "site"``."""
    return lambda module, source, papers: write_paper_site(tmp_path / "site", module, source, papers)


@pytest.fixture
def fake_papers(paper_site, monkeypatch):
    """Register fake paper packages through a real entry-point (a dist-info folder on sys.path)."""
    papers = {"fake-ok": "OK", "fake-crash": "CRASH", "fake-bad": "NOT_A_PAPER", "fake-v2": "V2"}
    root = paper_site("iclr24_fake_papers", FAKE_MODULE, papers)
    monkeypatch.syspath_prepend(str(root))
    yield root
    sys.modules.pop("iclr24_fake_papers", None)
