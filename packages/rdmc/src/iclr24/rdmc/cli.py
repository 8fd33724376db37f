"""The ``rdmc`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path

import numpy as np

from iclr24.paperkit import atomic_write_bytes
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_int

from . import bench
from .recipes import METHOD_NAMES
from .recipes import BudgetSettings
from .reproduce import PAPER
from .schedule import SCHEDULES

app = App("rdmc", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the claims run on the CPU
app.add_bench(bench.run_benchmarks)


@app.command(
    "sample",
    "Draw samples from a target at a given oracle budget per sample; writes an .npz (samples, info) with a .json "
    "(and with --plot a .png) beside it, and prints the oracle counts and mode-TV / MMD^2 against exact draws.",
    arg(
        "--target", default="gmm2d", help="gmm2d, gmm10d, or a mixture .npz with arrays means, covs, weights"
    ),
    arg(
        "--method",
        default="rdmc-is",
        choices=list(METHOD_NAMES),
        help="sampler: rdMC with an IS, ULA (the paper's MCMC variant) or IS+ULA (hybrid) inner loop, or a baseline",
    ),
    arg("--n", type=positive_int, default=1000, help="number of samples"),
    arg("--budget", type=positive_int, default=4000, help="oracle calls (gradient + log-density) per sample"),
    field_arg(BudgetSettings, "T", "--T", help="rdMC diffusion horizon T (rdmc-* methods only)"),
    field_arg(
        BudgetSettings, "K", "--K", type=positive_int, help="rdMC outer (reverse) steps (rdmc-* methods only)"
    ),
    field_arg(
        BudgetSettings,
        "schedule",
        choices=list(SCHEDULES),
        help="rdMC inner sample size per outer step: paper = n_k ∝ 1/(1-e^{-2t_k}), constant = the same at every "
        "step, same total (rdmc-* methods only)",
    ),
    arg(
        "--samples",
        type=Path,
        default=None,
        metavar="FILE",
        help="the samples file (.npz), a file, not a folder; its .json info and --plot .png go beside it; "
        "when omitted: OUT/samples.npz inside the --out folder%(default).0s",
    ),
    arg("--plot", action="store_true", help="also write a scatter of the samples over the target's contours"),
    device=True,
    log_dir=True,
)
def _sample(args: argparse.Namespace) -> int:
    import torch

    from .data import get_target
    from .metrics import mmd2
    from .metrics import mode_tv
    from .metrics import sliced_w2
    from .recipes import sample_with_budget

    if not (args.T > 0):
        raise UsageError(f"--T must be > 0, got {args.T}")
    out = Path(args.samples) if args.samples is not None else Path(args.out) / "samples.npz"
    if out.suffix != ".npz":
        raise UsageError(f"--samples must be a file ending in .npz, got {out}")
    if out.is_dir():
        raise UsageError(f"--samples {out} is a folder; expected a .npz file name")
    target = get_target(args.target)
    x, info = sample_with_budget(
        target,
        args.method,
        args.n,
        args.budget,
        seed=args.seed,
        settings=config_from_args(BudgetSettings, args),
        device=args.device,
        log_dir=args.log_dir,
    )
    x = x.cpu()
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


main = app.main
