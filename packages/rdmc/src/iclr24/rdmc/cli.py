"""The ``rdmc`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np

from iclr24.paperkit import atomic_write_bytes, atomic_write_json, bench_table
from iclr24.paperkit.cli import App, UsageError, arg, positive_int, resolve_device

from . import bench
from .reproduce import PAPER

app = App("rdmc", PAPER.title, legacy_flags=True)  # paperkit-1 flags until its second-round issue
app.add_reproduce(lambda: PAPER)


@app.command(
    "sample",
    "Draw samples from a target at a given oracle budget per sample; writes an .npz (samples, info) and prints the "
    "oracle counts and, for the built-in mixtures, mode-TV / MMD^2 against exact draws.",
    arg(
        "--target", default="gmm2d", help="gmm2d, gmm10d, or a mixture .npz with arrays means, covs, weights"
    ),
    arg("--method", default="rdmc-is", choices=["rdmc-is", "rdmc-is+ula", "ula", "mala"], help="sampler"),
    arg("--n", type=positive_int, default=1000, help="number of samples"),
    arg("--budget", type=positive_int, default=4000, help="oracle calls (gradient + log-density) per sample"),
    arg("--T", type=float, default=2.0, help="rdMC diffusion horizon T"),
    arg("--K", type=positive_int, default=20, help="rdMC outer (reverse) steps"),
    arg("--plot", action="store_true", help="also write a scatter of the samples over the target's contours"),
    default_out="samples.npz",
)
def _sample(args: argparse.Namespace) -> int:
    import torch

    from .data import get_target
    from .metrics import mmd2, mode_tv, sliced_w2
    from .recipes import BudgetSettings, sample_with_budget

    if not (args.T > 0):
        raise UsageError(f"--T must be > 0, got {args.T}")
    target = get_target(args.target)
    x, info = sample_with_budget(
        target,
        args.method,
        args.n,
        args.budget,
        seed=args.seed,
        settings=BudgetSettings(T=args.T, K=args.K),
        device=resolve_device(args.device),
    )
    x = x.cpu()
    out = Path(args.out)
    if out.suffix != ".npz":
        out = out / "samples.npz"
    report = info.to_dict()
    ref = target.sample(2000, generator=torch.Generator().manual_seed(10_000 + args.seed))
    report["metrics"] = {
        "mode_tv": mode_tv(x, target.means, target.weights),
        "mmd2": mmd2(x, ref),
        "sliced_w2": sliced_w2(x, ref),
    }
    buf = io.BytesIO()
    np.savez(buf, samples=x.cpu().numpy(), info=np.array(json.dumps(report)))
    atomic_write_bytes(out, buf.getvalue())
    atomic_write_json(out.with_suffix(".json"), report)
    print(
        f"{args.method}: {args.n} samples in {info.seconds:.2f} s; per sample: {info.grad_calls_per_sample:g} "
        f"gradient + {info.logp_calls_per_sample:g} log-density calls"
    )
    print("  " + ", ".join(f"{k} {v:.4g}" for k, v in report["metrics"].items()))
    print(f"wrote {out}")
    if args.plot:
        from .plots import plot_samples

        png = plot_samples(target, {args.method: x}, out.with_suffix(".png"))
        print(f"wrote {png}")
    return 0


@app.command(
    "bench", "Samples/s and oracle calls per sample at equal budget (medians of repeats, ratios to ULA)."
)
def _bench(args: argparse.Namespace) -> int:
    smoke = args.mode == "smoke"
    n, budget = (100, 400) if smoke else (1000, 4000)
    results = bench.run_benchmarks(
        quick=args.mode != "full", n=n, budget=budget, repeats=1 if smoke else None
    )
    print(bench_table(results))
    print(bench.oracle_table(results, n=n, budget=budget))
    mem = bench.memory_check(n=10_000 if args.mode == "smoke" else 100_000)
    print(
        f"memory: rdMC-IS on n={mem.n:,} particles, m={mem.m}, d={mem.d}, K=2: proposals chunked to "
        f"{mem.chunk_bytes / 2**20:.0f} MiB per chunk (unchunked: {mem.unchunked_bytes / 2**20:.0f} MiB per outer "
        f"step); peak RSS grew by {mem.rss_growth_bytes / 2**20:.0f} MiB; {mem.seconds:.1f} s"
    )
    atomic_write_json(
        Path(args.out) / "bench.json", {"results": [r.to_dict() for r in results], "memory": mem.__dict__}
    )
    return 0


def main(argv=None) -> int:
    return app.main(argv)
