"""Same numbers on every run: a paper whose numbers depend on the thread count and on global torch state gives
bit-identical claims.json numbers on all cores and under ``taskset -c 0``, alone and after a paper that leaves
global state behind (``iclr24 reproduce`` pins the declared threads and runs each paper in a fresh process)."""

import json
import os
import shutil
import subprocess
import sys

import pytest

from iclr24.paperkit.runner.report import comparable

MODULE = """
import torch

from iclr24.paperkit import ClaimSet, Paper


def _reduction(cfg):
    g = torch.Generator().manual_seed(cfg.seed)
    x = torch.rand(2**22, generator=g)                  # float32 unless another paper changed the default dtype
    y = torch.rand(2**22, dtype=torch.get_default_dtype(), generator=g)
    return float((x * x).mean()), float((y * y).mean())  # threaded reductions: the thread count changes the bits


def _det(cfg):
    cs = ClaimSet("det-reduce", cfg)
    a, b = _reduction(cfg)
    cs.add(claim="second moment of U(0,1) is 1/3", metric="E[x^2]", ours=a, baseline_name="other draw",
           baseline=b, rule="abs(ours - baseline) < 0.01")
    cs.add(claim="a timing", metric="s", ours=1.0 + torch.get_num_threads() * 0.0, baseline_name="b",
           baseline=1.0, rule="ours >= 0", timing=True)
    return cs


def _leaky(cfg):
    torch.set_default_dtype(torch.float64)   # global state a paper might leave behind
    torch.set_num_threads(2)
    cs = ClaimSet("det-leaky", cfg)
    cs.add(claim="leaves state", metric="m", ours=float(torch.rand(3).sum()), baseline_name="b", baseline=0.0,
           rule="ours >= baseline")
    return cs


DET = Paper(name="det-reduce", title="t", summary="s", run=_det)
LEAKY = Paper(name="det-leaky", title="t", summary="s", run=_leaky)
"""


@pytest.fixture
def det_site(paper_site):
    return paper_site("iclr24_det_papers", MODULE, {"det-reduce": "DET", "det-leaky": "LEAKY"})


def _reproduce(site, out, names, taskset=False):
    env = {**os.environ, "PYTHONPATH": str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env.pop(v, None)
    cmd = [sys.executable, "-m", "iclr24.paperkit.runner.umbrella", "reproduce", *names, "--quick", "--quiet"]
    cmd += ["--out", str(out)]
    if taskset:
        cmd = ["taskset", "-c", "0", *cmd]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    doc = json.loads((out / "claims.json").read_text())
    return {r["name"]: r for r in doc["papers"]}


@pytest.mark.slow  # three runs of `iclr24 reproduce` in subprocesses, each importing torch
def test_numbers_identical_across_cores_and_after_a_leaky_paper(det_site, tmp_path):
    import torch

    x = torch.rand(2**22, generator=torch.Generator().manual_seed(0))
    prev = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = float((x * x).mean())
        torch.set_num_threads(2)
        two = float((x * x).mean())
    finally:
        torch.set_num_threads(prev)
    if (os.cpu_count() or 1) >= 2:
        assert one != two, "precondition: this reduction's bits depend on the thread count"

    alone = _reproduce(det_site, tmp_path / "a", ["det-reduce"])["det-reduce"]
    after = _reproduce(det_site, tmp_path / "b", ["det-leaky", "det-reduce"])["det-reduce"]
    runs = [alone, after]
    if shutil.which("taskset"):
        runs.append(_reproduce(det_site, tmp_path / "c", ["det-reduce"], taskset=True)["det-reduce"])
    assert alone["claims"][0]["ours"] == one  # the declared single thread, bit for bit
    assert alone["threads"] == 1 and alone["isolated"] is True
    for r in runs[1:]:
        assert comparable(r) == comparable(alone)
    assert alone["claims"][1]["timing"] is True
