"""cleanup_distributed frees the gloo backend, so no rank exits with its threads still running (the cause of the
occasional SIGABRT, "terminate called without an active exception", at the exit of a finished 2-rank run)."""

import json
import os
import textwrap

import pytest

from iclr24.paperkit.distributed import run_torchrun

JOB = """
import json, os, sys
import torch
from iclr24.paperkit.distributed import all_reduce_mean, cleanup_distributed, init_distributed, wrap_ddp


def threads():
    return len(os.listdir("/proc/self/task"))


before = threads()
info = init_distributed(backend="gloo", device="cpu")
during = threads()


def work():
    ddp = wrap_ddp(torch.nn.Linear(4, 2), info)  # DDP's first use imports torch._dynamo, after init
    for _ in range(3):
        ddp(torch.randn(8, 4)).sum().backward()
    return all_reduce_mean(torch.tensor([float(info.rank)])).item()


mean = work()
cleanup_distributed()
with open(f"{sys.argv[1]}.{info.rank}", "w") as f:
    json.dump({"before": before, "during": during, "after": threads(), "mean": mean}, f)
"""


@pytest.mark.slow  # two launches of two processes that each import torch
@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through /proc (Linux)")
def test_two_rank_gloo_job_exits_cleanly_twice(tmp_path):
    script = tmp_path / "job.py"
    script.write_text(textwrap.dedent(JOB))
    for launch in range(2):
        out = tmp_path / f"res{launch}"
        proc = run_torchrun([str(script), str(out)], nproc=2, timeout=300)  # raises on a non-zero exit
        assert proc.returncode == 0
        for rank in (0, 1):
            r = json.loads((tmp_path / f"res{launch}.{rank}").read_text())
            assert r["mean"] == 0.5
            assert r["during"] > r["before"]  # gloo started its worker and transport threads
            assert r["after"] == r["before"], f"rank {rank}: gloo threads still alive after cleanup: {r}"
