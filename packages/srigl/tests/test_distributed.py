import json
from pathlib import Path

import pytest

from iclr24.paperkit.distributed import run_torchrun


@pytest.mark.slow  # two processes each import torch
def test_masks_identical_across_two_gloo_ranks(tmp_path):
    out = tmp_path / "dist.json"
    run_torchrun([str(Path(__file__).with_name("dist_worker.py")), str(out)], nproc=2, timeout=240)
    res = json.loads(out.read_text())
    assert res["world"] == 2
    assert res["updates"] == 8  # Delta T = 5, T_end = 45: steps 5..40
    assert len(res["masks_equal"]) == 9 and all(res["masks_equal"])
    assert res["params_equal"]
