import json
import textwrap

import pytest
import torch

from iclr24.paperkit.distributed import distributed_sampler
from iclr24.paperkit.distributed import init_distributed
from iclr24.paperkit.distributed import rank_and_world
from iclr24.paperkit.distributed import run_torchrun
from iclr24.paperkit.distributed import wrap_ddp

SCRIPT = """
import json, sys
import torch
from iclr24.paperkit.distributed import (init_distributed, wrap_ddp, all_reduce_mean, broadcast_,
                                         distributed_sampler, cleanup_distributed, rank_and_world)

info = init_distributed()
assert info.world_size == 2 and info.backend == "gloo"
torch.manual_seed(0)  # same initial weights on every rank
model = wrap_ddp(torch.nn.Linear(3, 1, bias=False), info)
x = torch.full((4, 3), float(info.rank + 1))   # each rank sees different data
model(x).sum().backward()
grad = model.module.weight.grad.clone()
t = torch.tensor([float(info.rank)])
all_reduce_mean(t)
b = torch.tensor([float(info.rank + 10)])
broadcast_(b, src=1)
idx = list(iter(distributed_sampler(list(range(10)), shuffle=False)))
out = {"grad": grad.tolist(), "mean_rank": t.item(), "bcast": b.item(), "idx": idx, "rw": rank_and_world()}
with open(sys.argv[1] + f".{info.rank}", "w") as f:
    json.dump(out, f)
cleanup_distributed()
"""


@pytest.mark.slow
def test_two_gloo_processes_average_gradients(tmp_path):
    script = tmp_path / "ddp.py"
    script.write_text(textwrap.dedent(SCRIPT))
    run_torchrun([str(script), str(tmp_path / "res")], nproc=2, timeout=240)
    r0 = json.loads((tmp_path / "res.0").read_text())
    r1 = json.loads((tmp_path / "res.1").read_text())
    # d/dW sum(W x) over 4 rows of value v = 4 v per input; the mean over ranks (v=1, v=2) is 6
    expected = [6.0, 6.0, 6.0]
    assert r0["grad"][0] == pytest.approx(expected) and r1["grad"][0] == pytest.approx(expected)
    assert r0["mean_rank"] == r1["mean_rank"] == 0.5
    assert r0["bcast"] == r1["bcast"] == 11.0
    assert sorted(r0["idx"] + r1["idx"]) == list(range(10)) and not set(r0["idx"]) & set(r1["idx"])
    assert r0["rw"] == [0, 2] and r1["rw"] == [1, 2]


def test_single_process_fallback():
    info = init_distributed()
    assert info.world_size == 1 and info.rank == 0 and info.is_main
    assert rank_and_world() == (0, 1)
    m = torch.nn.Linear(2, 2)
    assert wrap_ddp(m, info) is m
    assert sorted(distributed_sampler(list(range(5)), shuffle=True, seed=1)) == list(range(5))


def test_failed_rank_raises_with_output(tmp_path):
    script = tmp_path / "bad.py"
    script.write_text("raise SystemExit('rank exploded')\n")
    with pytest.raises(RuntimeError, match="torchrun failed"):
        run_torchrun([str(script)], nproc=1, timeout=120)
