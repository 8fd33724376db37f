"""LACE training under torchrun: two gloo ranks, DDP, each a share of every global batch, weights in sync."""

import pytest

SCRIPT = """
import json, sys
import torch
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed
from iclr24.lace.data import synthetic_aligned_layouts
from iclr24.lace.diffusion import train
from iclr24.lace.model import LaceConfig
from iclr24.lace.layout import encode_layout

info = init_distributed()
cfg = LaceConfig(dim=16, heads=2, layers=1, ff=32, batch_size=8, ddim_steps=5)
tok = encode_layout(*synthetic_aligned_layouts(32, seed=1), cfg.num_classes, cfg.max_elements)
model, hist = train(cfg, tok, seed=3, steps=6)
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
json.dump({"world": info.world_size, "params": flat.tolist(), "loss0": hist[0]["loss"]},
          open(f"{sys.argv[1]}/r{info.rank}.json", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two torch processes under torchrun (gloo)
def test_train_under_torchrun_keeps_ranks_in_sync(tmp_path):
    from iclr24.paperkit.runner.testing import check_ranks_in_sync

    r0, r1 = check_ranks_in_sync(SCRIPT, tmp_path, nproc=2)  # two ranks, their weights the same (DDP synced)
    assert r0["loss0"] != r1["loss0"]  # different shares and noise streams: the ranks did not duplicate work
