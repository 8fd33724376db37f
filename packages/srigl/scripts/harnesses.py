"""The batch-1 speed-up of the condensed 3072 -> 768 layer (90 %) by two harnesses, in one process.

(a) interleaved rounds, the speed claim's harness (``benchmark_many``: every case called in turn, per-call wall
medians: each case cache-cold, immune to preemption); (b) ``torch.utils.benchmark``'s ``blocked_autorange`` (each
case alone, back to back: cache-warm), with the CPU clock of this thread so that other jobs' time slices do not
count (``--wall`` for its default wall clock, right only on an idle machine). Cases: the claim's kernel
(``fused_auto_int16``) on the claim's weights, with dense ``F.linear`` and CSR on them; and ``condense()``'s output
for an SRigL-masked ``nn.Linear`` against that masked layer and its CSR weight (what a user times). Prints one JSON
line: per-call microseconds and the speed-ups. Run it with and without the kernel pin to see what the pin does::

    OMP_NUM_THREADS=1 python packages/srigl/scripts/harnesses.py
    OMP_NUM_THREADS=1 ATEN_CPU_CAPABILITY=avx2 MKL_CBWR=AVX2 ONEDNN_MAX_CPU_ISA=AVX2 \
        python packages/srigl/scripts/harnesses.py
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
import warnings


def _cases():
    import torch
    import torch.nn.functional as F
    from torch import nn

    from iclr24.srigl import SRigL
    from iclr24.srigl import condense
    from iclr24.srigl.bench import _variant_fn
    from iclr24.srigl.masks import layer_budget
    from iclr24.srigl.masks import random_constant_fan_in_mask

    gen = torch.Generator().manual_seed(0)
    k = layer_budget(768 * 3072, 0.1) // 768
    mask = random_constant_fan_in_mask(768, 3072, k, gen)
    w = torch.randn(768, 3072, generator=gen) * mask / k**0.5
    b = torch.randn(768, generator=gen)
    x = torch.randn(1, 3072, generator=gen)
    w_csr = w.to_sparse_csr()
    ours = _variant_fn("fused_auto_int16", w, b, mask, x)
    if ours is None:
        raise SystemExit("the fused C++ kernel is not available here (it needs a C++ compiler)")
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3072, 768))
    sp = SRigL(model, torch.optim.SGD(model.parameters(), lr=0.1), 0.9, 1, distribution="uniform", seed=0)
    sp.remove()
    model.eval()
    cond = condense(model, sp)
    wm, bm = model[0].weight.detach(), model[0].bias.detach()
    wm_csr = wm.to_sparse_csr()
    claim = {"condensed": ours, "dense": lambda: F.linear(x, w, b), "csr": lambda: F.linear(x, w_csr, b)}
    user = {"condensed": lambda: cond(x), "dense": lambda: model(x), "csr": lambda: F.linear(x, wm_csr, bm)}
    return {"claim": claim, "condense()": user}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="interleaved rounds (200 calls per case each)")
    p.add_argument("--blocks", type=int, default=4, help="blocked measurements per case")
    p.add_argument(
        "--wall", action="store_true", help="blocked harness on the wall clock (idle machines only)"
    )
    a = p.parse_args(argv)

    import torch
    from torch.utils import benchmark as tb

    from iclr24.paperkit import benchmark_many
    from iclr24.paperkit import pinned_threads

    torch.set_num_threads(1)
    warnings.simplefilter("ignore")  # "sparse CSR support is in beta"
    out = {
        "aten": torch.backends.cpu.get_cpu_capability(),
        "MKL_CBWR": os.environ.get("MKL_CBWR"),
        "load": os.getloadavg()[0],
    }
    clock = time.perf_counter if a.wall else time.thread_time
    with torch.no_grad(), pinned_threads(1):
        for name, cases in _cases().items():
            rounds = []
            for _ in range(a.rounds):
                res = benchmark_many(cases, baseline="condensed", repeats=200, warmup=10, threads=1)
                rounds.append({r.name: 1e6 * r.median_s for r in res})
            blk = {n: [] for n in cases}
            for _ in range(a.blocks):
                for n, fn in cases.items():
                    t = tb.Timer(stmt="fn()", globals={"fn": fn}, num_threads=1, timer=clock)
                    blk[n].append(1e6 * t.blocked_autorange(min_run_time=0.25).median)
            for harness, per in (
                ("interleaved", rounds),
                ("blocked", [dict(zip(blk, v)) for v in zip(*blk.values())]),
            ):
                out[f"{name} {harness}"] = {
                    "us": {n: round(statistics.median(r[n] for r in per), 1) for n in cases},
                    "x": {n: round(statistics.median(r[n] / r["condensed"] for r in per), 3) for n in cases},
                }
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
