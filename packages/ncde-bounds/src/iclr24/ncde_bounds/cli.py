"""The ``ncde-bounds`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import int_list
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.errors import InputError

from . import bench
from .model import SOLVERS
from .paths import INTERPOLATIONS
from .reproduce import PAPER
from .synthetic import smooth_paths
from .train import TrainConfig

app = App("ncde-bounds", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)


_ks = int_list("integers", "like 4,8,16")


@app.command(
    "bias",
    "The sampling-bias oracle: a random true CDE on the fine path vs on K + 1 samples (float64, no training).",
    arg("--paths", choices=("smooth", "brownian"), default="smooth", help="control family"),
    arg("--series", type=positive_int, default=300, help="number of paths"),
    field_arg(smooth_paths, "n_fine", type=positive_int, help="steps of the reference (fine) grid"),
    arg("--ks", type=_ks, default=[4, 8, 16, 32, 64, 128], help="grid sizes K (each must divide --n-fine)"),
    arg("--irregular", action="store_true", help="random irregular grids instead of uniform ones"),
)
def _bias(args: argparse.Namespace) -> int:
    import matplotlib.pyplot as plt
    import numpy as np

    from iclr24.paperkit import save_figure

    from .synthetic import brownian_paths
    from .synthetic import irregular_grid_indices
    from .synthetic import sampling_bias_oracle
    from .synthetic import smooth_paths
    from .synthetic import true_cde
    from .synthetic import uniform_grid_indices

    gen = smooth_paths if args.paths == "smooth" else brownian_paths
    t, v = gen(args.series, n_fine=args.n_fine, seed=args.seed)
    if args.irregular:
        grids = {
            str(k): irregular_grid_indices(args.n_fine, k, args.series, seed=args.seed + 1) for k in args.ks
        }
    else:
        grids = {str(k): uniform_grid_indices(args.n_fine, k) for k in args.ks}
    res = sampling_bias_oracle(true_cde(seed=0), t, v, grids, show_progress=not args.quiet)
    rows = [
        {
            "K": k,
            "mse": float(res[str(k)]["sq_err"].mean()),
            "tv": float(res[str(k)]["tv"].mean()),
            "gap": float(res[str(k)]["gap"].mean()),
        }
        for k in args.ks
    ]
    slope = (
        float(np.polyfit(np.log(args.ks), np.log([r["mse"] for r in rows]), 1)[0]) if len(rows) > 1 else None
    )
    out = Path(args.out)
    atomic_write_json(
        out / "bias.json", {"paths": args.paths, "irregular": args.irregular, "rows": rows, "slope": slope}
    )
    fig, ax = plt.subplots(figsize=(4.5, 3.5))
    ax.loglog(args.ks, [r["mse"] for r in rows], "o-")
    ax.set(xlabel="K", ylabel="MSE of y(x~^D) vs y(x)", title=f"{args.paths} paths, slope {slope or 0:.2f}")
    save_figure(fig, out / "bias.png")
    plt.close(fig)
    print("| K | MSE | TV | gap |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['K']} | {r['mse']:.3e} | {r['tv']:.3f} | {r['gap']:.4f} |")
    print(f"log-log slope {slope}; wrote {out / 'bias.json'} and {out / 'bias.png'}")
    return 0


@app.command(
    "train",
    "Train an NCDE: on synthetic paths observed at K + 1 irregular times (regression on a true CDE), or on a "
    "UEA/UCR .ts file (classification). Writes the model folder OUT/model (model.safetensors, config.json, "
    "provenance.json) and OUT/metrics.json.",
    arg(
        "--ts-file",
        type=Path,
        default=None,
        help="a UEA/UCR .ts training file (classification); else synthetic",
    ),
    arg("--test-ts-file", type=Path, default=None, help="a .ts test file to report accuracy on"),
    arg("--paths", choices=("smooth", "brownian"), default="smooth", help="synthetic control family"),
    arg("--k", type=positive_int, default=16, help="synthetic: observations - 1 per series"),
    arg("--series", type=positive_int, default=500, help="synthetic: training series (as many for testing)"),
    field_arg(TrainConfig, "epochs", type=positive_int, help="full-batch Adam epochs"),
    field_arg(TrainConfig, "hidden", type=positive_int, help="hidden state size p"),
    field_arg(TrainConfig, "width", type=positive_int, help="vector-field hidden width"),
    field_arg(TrainConfig, "depth", help="vector-field hidden layers (0 = tanh(Wz + b))"),
    field_arg(TrainConfig, "solver", choices=SOLVERS, help="CDE solver"),
    field_arg(TrainConfig, "substeps", type=positive_int, help="fixed steps per observation interval"),
    field_arg(TrainConfig, "interpolation", choices=INTERPOLATIONS, help="path interpolation"),
    device=True,
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _train(args: argparse.Namespace) -> int:
    from .bounds import lipschitz_upper
    from .data import load_ts
    from .synthetic import brownian_paths
    from .synthetic import irregular_grid_indices
    from .synthetic import smooth_paths
    from .synthetic import subsample
    from .synthetic import true_cde
    from .train import evaluate
    from .train import fit
    from .train import make_ncde

    if args.depth < 0:
        raise UsageError(f"--depth must be >= 0, got {args.depth}")
    seed_everything(args.seed)
    loss = "cross_entropy" if args.ts_file else "mse"
    cfg = config_from_args(TrainConfig, args, loss=loss)
    if args.ts_file:
        tr = load_ts(args.ts_file)
        present = sorted({tr.class_names[i] for i in tr.labels.tolist()})
        if len(present) < 2:
            raise UsageError(
                f"{args.ts_file}: every training series has class {present[0]!r}; a classifier needs at least two "
                "classes (it would reach accuracy 1.0 by construction)"
            )
        te = load_ts(args.test_ts_file) if args.test_ts_file else None
        if te is not None and te.values.shape[-1] != tr.values.shape[-1]:
            raise InputError(
                f"test file has {te.values.shape[-1]} channels, training file {tr.values.shape[-1]}"
            )
        train_data = (tr.times, tr.values, tr.labels, tr.lengths, tr.mask)
        test_data = (te.times, te.values, te.labels, te.lengths, te.mask) if te is not None else None
        out_dim = len(tr.class_names)
    else:
        gen = smooth_paths if args.paths == "smooth" else brownian_paths
        t, v = gen(2 * args.series, seed=args.seed)
        y = true_cde(seed=0)(t, v, substeps=1).float()
        tc, vc = subsample(t, v, irregular_grid_indices(2048, args.k, 2 * args.series, seed=args.seed + 1))
        tc, vc = tc.float(), vc.float()
        n = args.series
        train_data = (tc[:n], vc[:n], y[:n], None, None)
        test_data = (tc[n:], vc[n:], y[n:], None, None)
        out_dim = 1
    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import init_distributed

    info = init_distributed(device=args.device)  # single process unless launched by torchrun
    torch.manual_seed(args.seed)
    model = make_ncde(train_data[1].shape[-1], cfg, output_dim=out_dim).to(info.device)
    bar = progress(total=cfg.epochs, desc="epochs", disable=None if info.is_main else True)
    cpu0 = time.process_time()
    res = fit(
        model,
        *train_data[:3],
        cfg,
        lengths=train_data[3],
        mask=train_data[4],
        seed=args.seed,
        on_epoch=lambda e, lo: (bar.update(1), bar.set_postfix(loss=f"{lo:.3g}")),
        log_dir=args.log_dir,
        checkpoint=Path(args.out) / "train_state.pt",
        resume=args.resume,
    )
    cpu = time.process_time() - cpu0
    bar.close()
    metrics = {
        "train": evaluate(model, *train_data[:3], loss=loss, lengths=train_data[3], mask=train_data[4])
    }
    if test_data is not None:
        metrics["test"] = evaluate(model, *test_data[:3], loss=loss, lengths=test_data[3], mask=test_data[4])
    metrics["lipschitz_upper"] = lipschitz_upper(model.vector_field)
    metrics["config"] = cfg.to_dict()
    metrics["final_train_loss"] = res.losses[-1]
    metrics["processes"] = info.world_size
    cleanup_distributed()
    if not info.is_main:
        return 0
    out = Path(args.out)
    data = (
        str(args.ts_file)
        if args.ts_file
        else f"synthetic {args.paths} paths, K={args.k}, {args.series} series"
    )
    model.cpu().save_pretrained(
        out / "model",
        provenance={
            "command": app.command_line(args),
            "seed": args.seed,
            "steps": res.steps,
            "epochs": cfg.epochs,
            "cpu_seconds": round(cpu, 2),
            "data": data,
            "losses": res.losses,
            "train": metrics["train"],
            "test": metrics.get("test"),
        },
    )
    atomic_write_json(out / "metrics.json", metrics)
    print(json.dumps({k: metrics[k] for k in metrics if k in ("train", "test", "lipschitz_upper")}))
    print(f"wrote the model folder {out / 'model'} and {out / 'metrics.json'}")
    return 0


main = app.main

if __name__ == "__main__":
    raise SystemExit(main())
