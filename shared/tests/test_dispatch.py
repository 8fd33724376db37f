"""The same numbers on any x86 CPU: every claim run pins torch's, MKL's, oneDNN's and OpenBLAS's kernels to the AVX2
level, so a claim run under two dispatch levels on one machine gives the same numbers, while the same paper with
the pin removed does not (the precondition: the level changes this computation's bits here)."""

import json
import os
import subprocess
import sys

import pytest

from iclr24.paperkit.runner.report import comparable
from iclr24.paperkit.threads import DISPATCH_ENV
from iclr24.paperkit.threads import OUTER_ENV
from iclr24.paperkit.threads import pin_process_dispatch

MODULE = """
import hashlib

import numpy as np
import torch

from iclr24.paperkit import ClaimSet, Paper


def _train(cfg):
    torch.manual_seed(cfg.seed)
    m = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3), torch.nn.GELU(), torch.nn.Flatten(), torch.nn.Linear(392, 10))
    opt = torch.optim.Adam(m.parameters(), 1e-3)
    x, y = torch.randn(32, 3, 9, 9), torch.randint(0, 10, (32,))
    for _ in range(20):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        loss.backward()
        opt.step()
    a = np.random.default_rng(cfg.seed).standard_normal((120, 120))
    w = hashlib.sha256(b"".join(p.detach().numpy().tobytes() for p in m.parameters())).hexdigest()
    return float(loss), float(np.linalg.eigvalsh(a @ a.T).sum()), w


def _run(name):
    def run(cfg):
        cs = ClaimSet(name, cfg)
        loss, eig, w = _train(cfg)
        cs.add(claim="training lowers the loss", metric="cross-entropy", ours=loss, baseline_name="log 10",
               baseline=2.302585, rule="ours < baseline", details={"weights_sha256": w, "eig_sum": eig})
        return cs
    return run


PINNED = Paper(name="disp-pinned", title="t", summary="s", run=_run("disp-pinned"))
NATIVE = Paper(name="disp-native", title="t", summary="s", run=_run("disp-native"), pin_dispatch=False)
"""


@pytest.fixture
def site(paper_site):
    return paper_site("iclr24_disp_papers", MODULE, {"disp-pinned": "PINNED", "disp-native": "NATIVE"})


def _reproduce(site, out, level_env):
    env = {**os.environ, "PYTHONPATH": str(site) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    for v in (*DISPATCH_ENV, OUTER_ENV):
        env.pop(v, None)
    env.update(level_env)
    cmd = [sys.executable, "-m", "iclr24.paperkit.runner.umbrella", "reproduce", "disp-pinned", "disp-native"]
    cmd += ["--quick", "--quiet", "--out", str(out)]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return {r["name"]: r for r in json.loads((out / "claims.json").read_text())["papers"]}


@pytest.mark.slow  # two `iclr24 reproduce` runs in subprocesses, two papers each
def test_pinned_claims_are_identical_under_two_dispatch_levels_and_unpinned_ones_are_not(site, tmp_path):
    # "another CPU": the oldest kernels torch, MKL and oneDNN have, against this machine's native ones
    low = {"ATEN_CPU_CAPABILITY": "default", "MKL_CBWR": "COMPATIBLE", "ONEDNN_MAX_CPU_ISA": "SSE41"}
    a = _reproduce(site, tmp_path / "a", low)
    b = _reproduce(site, tmp_path / "b", {})
    assert a["disp-pinned"]["dispatch"]["aten"] == "AVX2" and a["disp-pinned"]["dispatch"]["pinned"]
    assert a["disp-pinned"]["dispatch"]["env"]["MKL_CBWR"] == "AVX2"
    assert comparable(a["disp-pinned"]["claims"]) == comparable(b["disp-pinned"]["claims"])
    # the control: without the pin the paper sees each level, and the level changes its numbers
    assert a["disp-native"]["dispatch"]["aten"] == "DEFAULT" and not a["disp-native"]["dispatch"]["pinned"]
    assert b["disp-native"]["dispatch"]["aten"] != "DEFAULT"
    native_a, native_b = (r["disp-native"]["claims"][0]["details"]["weights_sha256"] for r in (a, b))
    assert native_a != native_b


def test_pin_sets_and_the_opt_out_restores_what_the_user_had(monkeypatch):
    for v in (*DISPATCH_ENV, OUTER_ENV):
        monkeypatch.delenv(v, raising=False)
    monkeypatch.setenv("ATEN_CPU_CAPABILITY", "default")
    monkeypatch.setenv("OPENBLAS_CORETYPE", "Zen")  # a machine's own setting is kept
    pinned = pin_process_dispatch(True)
    assert pinned["ATEN_CPU_CAPABILITY"] == "avx2" and pinned["MKL_CBWR"] == "AVX2"
    assert pinned["OPENBLAS_CORETYPE"] == "Zen"
    back = pin_process_dispatch(False)
    assert (
        back["ATEN_CPU_CAPABILITY"] == "default" and back["MKL_CBWR"] is None and OUTER_ENV not in os.environ
    )
