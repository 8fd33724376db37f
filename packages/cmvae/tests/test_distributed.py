import json
import sys

import pytest

SCRIPT = """
import json, sys, torch
from iclr24.cmvae import build_mlp_model, fit, poly_digits
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed
info = init_distributed()
torch.manual_seed(0)
data = poly_digits(n_train=128, n_test=16, seed=0)
model = build_mlp_model(data.input_dims, hidden=(16,), n_clusters_max=4)
fit(model, data.tensors("train"), epochs=1, batch_size=32, distributed=True)
total = sum(float(p.detach().double().sum()) for p in model.parameters())
json.dump({"rank": info.rank, "world": info.world_size, "checksum": total}, open(sys.argv[1] + f".{info.rank}", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two torchrun ranks import torch and scikit-learn
def test_fit_under_torchrun_keeps_ranks_in_sync(tmp_path):
    from iclr24.paperkit.distributed import run_torchrun

    script = tmp_path / "train_ddp.py"
    script.write_text(SCRIPT)
    out = tmp_path / "rank"
    run_torchrun([str(script), str(out)], nproc=2, timeout=600)
    a, b = (json.loads((tmp_path / f"rank.{r}").read_text()) for r in (0, 1))
    assert a["world"] == b["world"] == 2
    assert a["checksum"] == pytest.approx(b["checksum"], rel=1e-9)
    assert sys.executable
