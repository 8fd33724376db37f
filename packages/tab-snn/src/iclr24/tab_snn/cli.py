"""The ``tab-snn`` command: ``train``, ``reproduce``, ``bench`` (a thin shell over the API)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg

from . import bench
from .model import SpikingVGG9
from .reproduce import PAPER
from .train import TrainConfig

app = App("tab-snn", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)

DATA_HELP = "seq-digits | static-digits | seq-mnist | cifar10:PATH | cifar100:PATH | dvs-cifar10:PATH"


def load_task(spec: str, T: int | None, data_dir: Path | None, limit: int | None):
    """Parse ``--data`` into a :class:`~.data.TemporalData` and the architecture that suits it."""
    from . import data as D

    name, _, path = spec.partition(":")
    if name in ("seq-digits", "seq-mnist"):
        d = D.seq_digits() if name == "seq-digits" else D.seq_mnist(data_dir)
        if T is not None and T != d.T:
            raise UsageError(f"--T {T}: {name} is fed row by row, so T is its number of rows ({d.T})")
        arch = "mlp"
    elif name == "static-digits":
        d, arch = D.static_digits(T or 4), "mlp"
    elif name in ("cifar10", "cifar100"):
        if not path:
            raise UsageError(f"--data {name}:PATH needs the folder of the python version")
        d, arch = D.load_cifar(path, 10 if name == "cifar10" else 100), "vgg9"
        d.T = T or 4
    elif name == "dvs-cifar10":
        if not path:
            raise UsageError("--data dvs-cifar10:PATH needs a folder PATH/<class>/*.npz")
        d, arch = D.load_dvs_cifar10(path, T=T or 10), "vgg9"
    else:
        raise UsageError(f"--data {spec!r}: expected one of {DATA_HELP}")
    if limit is not None:
        d.x_train, d.y_train = d.x_train[:limit], d.y_train[:limit]
    return d, arch


@app.command(
    "train",
    "Train a spiking network with one temporal norm, report test accuracy and firing rates, and save the model "
    "folder OUT/model (model.safetensors, config.json, provenance.json).",
    arg("--data", default="seq-digits", help=DATA_HELP),
    field_arg(
        SpikingVGG9, "norm", choices=["tab", "tdbn", "bntt", "tebn", "bn", "none"], help="temporal norm"
    ),
    arg(
        "--T",
        type=positive_int,
        default=None,
        help="time steps (default: the data's: 8 rows, 4 or 10 repeats)",
    ),
    arg("--arch", default=None, choices=["mlp", "vgg9", "resnet19"], help="network (default: by data)"),
    field_arg(SpikingVGG9, "width", help="channel multiplier of vgg9/resnet19"),
    field_arg(
        TrainConfig,
        "epochs",
        type=positive_int,
        help="epochs (the official CIFAR run's; the README uses 40 on seq-digits)",
    ),
    field_arg(TrainConfig, "batch_size", type=positive_int, help="batch size"),
    field_arg(TrainConfig, "lr", help="SGD learning rate (cosine-annealed to 0)"),
    arg("--limit", type=positive_int, default=None, help="keep only the first N training samples"),
    device=True,
    data=True,
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _train(args: argparse.Namespace) -> int:
    from iclr24.paperkit import atomic_write_json
    from iclr24.paperkit import seed_everything
    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import is_main_process

    from .model import build_model
    from .train import train_model

    if not args.lr > 0 or not args.width > 0:
        raise UsageError(f"--lr and --width must be > 0, got {args.lr} and {args.width}")
    d, arch = load_task(args.data, args.T, args.data_dir, args.limit)
    arch = args.arch or arch
    seed_everything(args.seed)
    if arch == "mlp":
        if d.x_train.dim() > 3:
            raise UsageError(f"--arch mlp needs vector inputs; {d.name} has images: use vgg9 or resnet19")
        model = build_model(
            "mlp", in_features=d.in_features, num_classes=d.num_classes, T=d.T, norm=args.norm
        )
    else:
        if d.x_train.dim() < 4:
            raise UsageError(f"--arch {arch} needs images; {d.name} is a vector task: use mlp")
        model = build_model(
            arch,
            num_classes=d.num_classes,
            T=d.T,
            in_channels=d.x_train.shape[-3],
            input_size=d.x_train.shape[-1],
            norm=args.norm,
            width=args.width,
        )
    cfg = config_from_args(TrainConfig, args)  # seed: the CLI's --seed
    cpu0 = time.process_time()
    try:
        res = train_model(
            model,
            d.x_train,
            d.y_train,
            d.x_test,
            d.y_test,
            cfg,
            device=args.device,
            progress=not args.quiet,
            desc=f"{d.name} {args.norm}",
            augment=d.x_train.dim() >= 4,  # crop + flip for CIFAR / DVS, as the official loaders
            pad_fill=d.pad_fill,  # CIFAR: pad as if before normalising, as the official loader
            log_dir=args.log_dir,
            checkpoint=Path(args.out) / "train_state.pt",
            resume=args.resume,
        )
        if is_main_process():
            out = Path(args.out)
            metrics = {"data": d.name, "norm": args.norm, "arch": arch, "T": d.T, **res.to_dict()}
            atomic_write_json(out / "metrics.json", metrics)
            model.cpu().save_pretrained(
                out / "model",
                provenance={
                    "command": app.command_line(args),
                    "seed": args.seed,
                    "steps": res.steps,
                    "epochs": args.epochs,
                    "cpu_seconds": round(time.process_time() - cpu0, 2),
                    "data": args.data,
                    "limit": args.limit,
                    "losses": res.train_loss,
                    "test_acc": res.test_acc,
                },
            )
            print(json.dumps({k: metrics[k] for k in ("data", "norm", "T", "test_acc", "firing_rate")}))
            print(f"wrote {out / 'metrics.json'} and the model folder {out / 'model'}")
    finally:
        cleanup_distributed()
    return 0


main = app.main

if __name__ == "__main__":  # torchrun --nproc_per_node 2 -m iclr24.tab_snn.cli train ...
    sys.exit(main())
