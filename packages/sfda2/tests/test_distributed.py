"""train_source under torchrun: two gloo ranks, DDP, each a share of every batch, weights in sync."""

import pytest

SCRIPT = """
import json, sys
import torch
from torch import nn
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed
from iclr24.sfda2 import SFDAModel, SourceConfig, train_source
from iclr24.sfda2.model import Bottleneck, weight_norm_classifier

info = init_distributed()
g = torch.Generator().manual_seed(0)
centres = 3 * torch.randn(3, 5, generator=g)
y = torch.arange(90) % 3
x = centres[y] + torch.randn(90, 5, generator=g)
torch.manual_seed(1)
model = SFDAModel(nn.Sequential(nn.Linear(5, 16), nn.ReLU()), Bottleneck(16, 7), weight_norm_classifier(7, 3))
train_source(model, x, y, SourceConfig(lr=1e-2, epochs=3, batch_size=16), seed=2)
flat = torch.cat([p.detach().reshape(-1) for p in model.parameters()])
acc = float((model(x).argmax(1) == y).float().mean())
json.dump({"rank": info.rank, "world": info.world_size, "params": flat.tolist(), "acc": acc},
          open(f"{sys.argv[1]}/r{info.rank}.json", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two torch processes under torchrun (gloo)
def test_train_source_under_torchrun_keeps_ranks_in_sync(tmp_path):
    from iclr24.paperkit.runner.testing import check_ranks_in_sync

    r0, r1 = check_ranks_in_sync(SCRIPT, tmp_path, nproc=2)  # two ranks, their weights the same (DDP synced)
    assert r0["acc"] > 0.9  # three separable blobs: the shared model learned them
