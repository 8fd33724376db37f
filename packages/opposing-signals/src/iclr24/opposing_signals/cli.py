"""The ``opposing-signals`` command: a thin shell over the API.

opposing-signals run --dataset digits --alpha 10 --lr 0.3 --steps 1500 --optimizer gd --out DIR [--log-dir LOGS]
opposing-signals plot DIR/results.json --out DIR
opposing-signals reproduce [--smoke|--quick|--full]
opposing-signals bench [--smoke|--quick|--full]
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import read_json_object
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.io import atomic_write_json
from iclr24.paperkit.progress import progress

from . import bench
from .data import make_opposing_digits
from .data import mnist_subset
from .experiments import ExperimentConfig
from .reproduce import PAPER

app = App("opposing-signals", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)

DATASETS = ("digits", "mnist", "cifar10")


@app.command(
    "run",
    "Train an MLP with every example's loss tracked; find the opposing groups; write results.json and the trained "
    "MLP as the model folder OUT/model.",
    arg(
        "--dataset",
        choices=DATASETS,
        default="digits",
        help="digits (built in, signal planted), mnist, cifar10",
    ),
    field_arg(
        make_opposing_digits,
        "alpha",
        type=nonneg_float,
        help="digits: magnitude of the planted patch (0 = clean)",
    ),
    field_arg(ExperimentConfig, "lr", type=positive_float, help="learning rate"),
    field_arg(ExperimentConfig, "steps", type=positive_int, help="training steps"),
    field_arg(
        ExperimentConfig,
        "optimizer",
        choices=("gd", "sgd", "adam"),
        help="full-batch GD, minibatch SGD or Adam",
    ),
    field_arg(
        ExperimentConfig,
        "batch_size",
        type=positive_int,
        help="minibatch size (sgd only; gd and adam are full-batch)",
    ),
    field_arg(
        ExperimentConfig,
        "physical_batch_size",
        type=positive_int,
        help="examples per forward pass (memory only; the result is the one-pass result); default: all at once",
    ),
    field_arg(ExperimentConfig, "momentum", type=nonneg_float, help="heavy-ball momentum (gd/sgd)"),
    field_arg(
        ExperimentConfig,
        "loss",
        choices=("mse", "ce"),
        help="one-hot MSE (the EoS convention) or cross-entropy",
    ),
    field_arg(ExperimentConfig, "k", "--k", type=positive_int, help="size of the top-k mover sets"),
    field_arg(
        ExperimentConfig, "sharpness_every", help="measure sharpness every this many steps (0 = never)"
    ),
    field_arg(mnist_subset, "n", "--n", type=positive_int, help="mnist/cifar10: training images drawn"),
    arg("--cifar-path", type=Path, default=None, help="cifar10: the cifar-10-batches-py folder"),
    data=True,
    device=True,
    log_dir=True,
)
def _run(args: argparse.Namespace) -> int:
    from .data import cifar10_subset
    from .experiments import run_experiment

    if args.optimizer == "sgd" and args.batch_size is None:
        raise UsageError("--optimizer sgd needs --batch-size")
    if args.optimizer != "sgd" and args.batch_size is not None:
        raise UsageError(
            f"--batch-size is the SGD minibatch, but --optimizer {args.optimizer} is full-batch (every example, every "
            "step); use --optimizer sgd, or --physical-batch-size to bound memory"
        )
    if args.optimizer == "adam" and args.momentum:
        raise UsageError("--momentum is for gd/sgd (heavy ball); Adam has its own moment estimates")
    if args.sharpness_every < 0:
        raise UsageError(f"--sharpness-every must be >= 0, got {args.sharpness_every}")
    ga = gb = None
    if args.dataset == "digits":
        d = make_opposing_digits(alpha=args.alpha, seed=args.seed)
        x, y = d.x_train, d.y_train
        if args.alpha > 0:
            ga, gb = d.group_a, d.group_b
    elif args.dataset == "mnist":
        x, y = mnist_subset(args.data_dir, n=args.n, seed=args.seed)
    else:
        if args.cifar_path is None:
            raise UsageError("--dataset cifar10 needs --cifar-path (the unpacked cifar-10-batches-py folder)")
        x, y = cifar10_subset(args.cifar_path, n=args.n, seed=args.seed)
    cfg = config_from_args(ExperimentConfig, args, k=min(args.k, x.shape[0]))  # seed, device: the CLI's
    bar = progress(total=args.steps + 1, desc=f"{args.dataset} {args.optimizer}")
    cpu0 = time.process_time()
    try:
        summary, tracker = run_experiment(
            x, y, cfg, ga, gb, progress=lambda t: bar.update(1), log_dir=args.log_dir
        )
    finally:
        bar.close()
    summary["dataset"] = args.dataset
    summary["alpha"] = args.alpha if args.dataset == "digits" else None
    tracker.model.save_pretrained(Path(args.out) / "model", provenance={
        "command": app.command_line(args), "seed": args.seed, "steps": args.steps, "steps_unit": "optimizer steps",
        "cpu_seconds": round(time.process_time() - cpu0, 2), "dataset": args.dataset, "alpha": summary["alpha"],
        "n_train": summary["n"], "config": summary["config"], "final_loss": summary["final_loss"],
        "losses": {str(t): summary["loss"][t] for t in range(0, args.steps + 1, max(1, args.steps // 10))},
    })  # fmt: skip
    path = atomic_write_json(Path(args.out) / "results.json", summary)
    best = summary["groups"]["pairs"][0] if summary["groups"]["pairs"] else None
    if best:
        print(f"most opposed groups: {best['a']} vs {best['b']} (corr {best['corr']:.3f})")
    if "corr" in summary:
        print(
            f"planted groups: precision {summary['precision']:.3f} (base {summary['base_rate']:.3f}), "
            f"corr {summary['corr']:.3f}"
        )
    if "eos" in summary:
        e = summary["eos"]
        print(f"sharpness: late median {e['late_median_sharpness']:.3f} vs 2/lr {e['threshold']:.3f}")
    print(f"loss-increase steps: {summary['loss_increase_steps']}; final loss {summary['final_loss']:.4g}")
    print(f"wrote {path}")
    return 0


def _finite_list(v: object, what: str, src: Path, integers: bool = False) -> list:
    ok = isinstance(v, list) and len(v) > 0
    if ok:
        for e in v:
            if isinstance(e, bool) or not isinstance(e, int | float) or not math.isfinite(e):
                ok = False
                break
            if integers and not float(e).is_integer():
                ok = False
                break
    if not ok:
        kind = "integers" if integers else "finite numbers"
        raise InputError(
            f"{src}: {what} must be a non-empty list of {kind} (is it a results.json from `run`?)"
        )
    return v


def load_results(src: Path) -> dict:
    """Read and check a results.json written by ``run`` before anything is drawn: a clear error naming the field
    that is missing or wrong (a partial file, an edited one, a zero learning rate)."""
    src = Path(src)
    if not src.exists():
        raise InputFileError(f"results file not found: {src} (write one with `opposing-signals run`)")
    if not src.is_file():
        raise InputFolderError(
            f"{src} is a folder; expected the results.json written by `opposing-signals run`"
        )
    res = read_json_object(src, "a results.json written by `opposing-signals run`")
    for key in ("curves", "config"):
        if key not in res:
            raise InputError(f"{src} is not a results.json written by `opposing-signals run` (no {key!r})")
    curves, cfg = res["curves"], res["config"]
    if not isinstance(curves, dict) or not curves:
        raise InputError(f"{src}: 'curves' must be a non-empty object of named loss curves")
    for name, ys in curves.items():
        _finite_list(ys, f"curve {name!r}", src)
    if not isinstance(cfg, dict):
        raise InputError(f"{src}: 'config' must be an object")
    if not isinstance(cfg.get("optimizer"), str):
        raise InputError(f"{src}: config.optimizer must be a string, got {cfg.get('optimizer')!r}")
    lr = cfg.get("lr")
    if isinstance(lr, bool) or not isinstance(lr, int | float) or not (math.isfinite(lr) and lr > 0):
        raise InputError(f"{src}: config.lr must be a positive finite number (2/lr is drawn), got {lr!r}")
    if res.get("sharpness"):
        sh = _finite_list(res["sharpness"], "'sharpness'", src)
        st = _finite_list(res.get("sharpness_steps"), "'sharpness_steps'", src, integers=True)
        if len(sh) != len(st):
            raise InputError(
                f"{src}: 'sharpness' ({len(sh)} values) and 'sharpness_steps' ({len(st)}) differ in length"
            )
    if "dataset" in res and not isinstance(res["dataset"], str | None):
        raise InputError(f"{src}: 'dataset' must be a string, got {res['dataset']!r}")
    return res


@app.command(
    "plot",
    "Plot a results.json written by `run`: group losses over time and sharpness vs 2/lr.",
    arg("results", type=Path, help="the results.json written by `opposing-signals run`"),
    seed=False,
    adds_to=("run",),  # plot results/os/results.json --out results/os: the figures go beside the results
)
def _plot(args: argparse.Namespace) -> int:
    from iclr24.paperkit.plots import save_figure

    from .plots import plot_group_losses
    from .plots import plot_sharpness

    res = load_results(Path(args.results))  # every field checked before any figure is written
    curves, cfg = res["curves"], res["config"]
    figures = [
        (
            "group_losses.png",
            plot_group_losses(curves, f"{res.get('dataset') or ''} {cfg['optimizer']}".strip()),
        )
    ]
    if res.get("sharpness"):
        fig = plot_sharpness({"sharpness": (res["sharpness_steps"], res["sharpness"])}, 2.0 / cfg["lr"])
        figures.append(("sharpness.png", fig))
    out = Path(args.out)
    written = [save_figure(fig, out / name) for name, fig in figures]
    for w in written:
        print(f"wrote {w}")
    return 0


main = app.main
