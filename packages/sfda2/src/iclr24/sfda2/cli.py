"""The ``sfda2`` command: a thin shell over the API (train-source, adapt, reproduce, bench)."""

from __future__ import annotations

import argparse
from pathlib import Path

from iclr24.paperkit import load_checkpoint as _load_checked
from iclr24.paperkit import seed_everything
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import nonneg_int
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.io import atomic_torch_save
from iclr24.paperkit.io import atomic_write_json

from . import bench
from .adapt import METHODS
from .adapt import SOURCE_CPU
from .adapt import SFDA2Config
from .adapt import accuracy
from .adapt import adapt
from .adapt import predict
from .adapt import train_source
from .model import SFDAModel
from .model import check_timm_name
from .model import digits_model
from .model import pointnet_model
from .model import split_timm
from .reproduce import PAPER

app = App("sfda2", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)

ARCHS = "digits | pointnet | timm:<model name> (e.g. timm:resnet18, built without pretrained weights)"


def check_arch(arch: str) -> str:
    """``arch`` if it names a model :func:`build_model` can build (a known timm name included), else a one-line
    ``UsageError``: checked before any data is read."""
    if not isinstance(arch, str) or not (
        arch in ("digits", "pointnet") or arch.startswith("timm:") and len(arch) > 5
    ):
        raise UsageError(f"--arch must be {ARCHS}; got {arch!r}")
    if arch.startswith("timm:"):
        check_timm_name(arch[5:], flag="--arch timm:")
    return arch


def build_model(arch: str, num_classes: int, bottleneck_dim: int) -> SFDAModel:
    """The F/B/C model named by ``arch`` (see ``ARCHS``)."""
    check_arch(arch)
    if arch == "digits":
        return digits_model(num_classes=num_classes, bottleneck_dim=bottleneck_dim)
    if arch == "pointnet":
        return pointnet_model(num_classes=num_classes, bottleneck_dim=bottleneck_dim)
    if arch.startswith("timm:") and len(arch) > 5:
        return split_timm(arch[5:], num_classes=num_classes, bottleneck_dim=bottleneck_dim)
    raise UsageError(f"--arch must be {ARCHS}; got {arch!r}")


def image_views(arch: str, size: int):
    """``(adaptation view, evaluation view)`` of an image folder for ``arch``: the official ``image_train`` /
    ``image_test`` (resize to ``size * 256 / 224``, random or centre ``size`` crop, flip, ImageNet normalisation)
    for image backbones; the grey 8x8 view of the digits study (the same for both) for ``--arch digits``."""
    from .images import digits_transform
    from .images import eval_transform
    from .images import train_transform

    if arch == "digits":
        return digits_transform(8), digits_transform(8)
    resize = max(size, round(size * 256 / 224))
    return train_transform(resize, size), eval_transform(resize, size)


def load_domain(path: str, arch: str, size: int, class_names: list[str] | None = None, role: str = "target"):
    """``(x, x_eval, y, class_names)`` of a domain: ``digits`` (built-in shift: its source or target side; tensors),
    a folder of class subfolders of images (Office-31/Office-Home/VisDA layout: ``x`` and ``x_eval`` are lazy
    :class:`~iclr24.sfda2.images.ImageFolderDataset` views, see :func:`image_views`), or of ``.npy`` point clouds
    (with ``--arch pointnet``; tensors)."""
    if path == "digits":
        from .reproduce import _digits_target

        d = _digits_target(0)
        names = [str(i) for i in range(10)]
        x, y = (d.source_x, d.source_y) if role == "source" else (d.target_x, d.target_y)
        return x, x, y, names
    p = Path(path)
    if not p.exists():
        raise InputFileError(f"{role} folder not found: {p} (expected <folder>/<class>/<files>, or 'digits')")
    if not p.is_dir():
        raise InputError(f"{role} {p} is a file; expected a folder <class>/<files> (or 'digits')")
    if arch == "pointnet":
        from .data import point_cloud_folder

        x, y, names = point_cloud_folder(p)
        x_eval = x
    else:
        from .images import ImageFolderDataset

        train_view, eval_view = image_views(arch, size)
        x = ImageFolderDataset(p, train_view, class_names=class_names)
        x_eval, y, names = x.with_transform(eval_view), x.labels, list(x.classes)
    if class_names is not None and list(names) != list(class_names):
        raise InputError(
            f"the {role} classes {names[:5]}... do not match the checkpoint's {class_names[:5]}..."
        )
    return x, x_eval, y, names


CHECKPOINT_FORMAT = "iclr24.sfda2/1"
CHECKPOINT_KEYS = {
    "state_dict": dict,
    "meta": dict,
    "meta.arch": str,
    "meta.num_classes": int,
    "meta.bottleneck_dim": int,
    "meta.class_names": list,
}


def save_checkpoint(path: Path, model: SFDAModel, meta: dict) -> Path:
    return atomic_torch_save(
        {"format": CHECKPOINT_FORMAT, "state_dict": model.state_dict(), "meta": meta}, path
    )


def load_checkpoint(path: Path) -> tuple[SFDAModel, dict]:
    """A checkpoint written by ``sfda2 train-source`` or ``adapt`` (paperkit's ``load_checkpoint``:
    ``weights_only=True``, format tag and keys checked; an untagged file of an earlier version is accepted when it
    has every key)."""
    path = Path(path)
    if not path.is_file():
        raise InputFileError(f"source checkpoint not found: {path} (write one with `sfda2 train-source`)")
    ck = _load_checked(
        path, format=CHECKPOINT_FORMAT, required=CHECKPOINT_KEYS, what="sfda2 checkpoint", legacy=True
    )
    meta = ck["meta"]
    n, a, names = meta["num_classes"], meta["bottleneck_dim"], meta["class_names"]
    if n < 1 or a < 1 or len(names) != n:
        raise InputError(
            f"{path}: damaged sfda2 checkpoint: num_classes {n}, bottleneck_dim {a} and {len(names)} class names"
        )
    try:
        model = build_model(meta["arch"], n, a)
    except UsageError as e:
        raise InputError(f"{path}: the checkpoint's architecture cannot be built: {e}") from None
    try:
        model.load_state_dict(ck["state_dict"])
    except RuntimeError as e:
        raise InputError(
            f"{path}: weights do not fit the architecture {meta['arch']}: {str(e)[:200]}"
        ) from None
    return model, meta


def load_source(path: Path) -> tuple[SFDAModel, dict]:
    """``(model, meta)`` from a model folder (``sfda2 train-source`` / ``adapt`` write ``OUT/source``,
    ``OUT/target``) or from a checkpoint file of an earlier version (``source.pt``, ``target.pt``)."""
    path = Path(path)
    if not path.is_dir():
        model, meta = load_checkpoint(path)
        model.class_names, model.image_size = list(meta["class_names"]), int(meta.get("size", 224))
        return model, meta
    model = SFDAModel.from_pretrained(path)
    cfg = model.arch_config or {}
    if model.class_names is None:
        raise InputFileError(
            f"{path}: the model folder records no class_names (write it with sfda2 train-source)"
        )
    meta = {"arch": cfg.get("arch"), "num_classes": model.num_classes, "bottleneck_dim": model.bottleneck_dim,
            "class_names": list(model.class_names), "size": int(model.image_size or 224)}  # fmt: skip
    return model, meta


class _LossTrace:
    """The loss at every 20th of a run's iterations and at its last (for provenance.json)."""

    def __init__(self, total: int, key: str) -> None:
        self.every, self.total, self.key, self.rows = max(1, total // 20), total, key, []

    def __call__(self, step: int, metrics: dict) -> None:
        if self.key in metrics and (step % self.every == 0 or step == self.total - 1):
            self.rows.append({"step": int(step), self.key: round(float(metrics[self.key]), 5)})


def _loop_flags(config) -> list:
    """The flags of the two training loops (train-source, adapt): the batch size of ``config`` and the DataLoader
    workers."""
    return [
        field_arg(config, "batch_size", type=positive_int, help="batch size"),
        arg(
            "--workers",
            type=nonneg_int,
            default=None,
            help="DataLoader workers for image folders (default: 8 on CUDA, as the official code; 0 on the CPU)",
        ),
    ]


def _resume(state: str):
    """The ``--resume`` switch of a training loop that saves its state in ``OUT/<state>``."""
    return arg(
        "--resume",
        action="store_true",
        help=f"continue the interrupted run in --out from its OUT/{state} (saved after every epoch), exactly",
    )


@app.command(
    "train-source",
    "Train a source model with label smoothing (SHOT's recipe); writes the model folder OUT/source "
    "(model.safetensors, config.json, provenance.json) and OUT/source.json.",
    arg(
        "--source",
        default="digits",
        help="'digits' (built-in) or a folder <class>/<files> of labelled source data",
    ),
    arg("--arch", default="digits", help=ARCHS),
    arg(
        "--bottleneck", type=positive_int, default=64, help="bottleneck width A (the official code uses 256)"
    ),
    arg("--size", type=positive_int, default=224, help="image side for image folders"),
    field_arg(SOURCE_CPU, "epochs", type=positive_int, help="source epochs (official: 10)"),
    field_arg(SOURCE_CPU, "lr", type=positive_float, help="learning rate (official: 1e-3)"),
    field_arg(
        SOURCE_CPU,
        "backbone_lr_mult",
        type=nonneg_float,
        help="feature-extractor lr multiplier (official: 0.1)",
    ),
    field_arg(SOURCE_CPU, "label_smoothing", "--smooth", type=nonneg_float, help="label smoothing"),
    *_loop_flags(SOURCE_CPU),
    device=True,
    log_dir=True,
    resume=_resume("train_state.pt"),
)
def _train_source(args: argparse.Namespace) -> int:
    import math
    import time

    check_arch(args.arch)  # before any data is read
    x, x_eval, y, names = load_domain(args.source, args.arch, args.size, role="source")
    seed_everything(args.seed)  # the initialisation follows --seed
    model = build_model(args.arch, len(names), args.bottleneck)
    cfg = config_from_args(SOURCE_CPU, args)
    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import init_distributed

    info = init_distributed(device=args.device)  # under torchrun: DDP, each rank a share of every batch
    steps = cfg.epochs * math.ceil(len(y) / cfg.batch_size)
    trace = _LossTrace(steps, "loss")
    cpu0 = time.process_time()
    try:
        model = train_source(model, x, y, cfg, seed=args.seed, device=args.device, quiet=args.quiet,
                             num_workers=args.workers, callbacks=trace, log_dir=args.log_dir,
                             checkpoint=Path(args.out) / "train_state.pt", resume=args.resume)  # fmt: skip
    finally:
        cleanup_distributed()
    if not info.is_main:
        return 0
    cpu = time.process_time() - cpu0
    acc = accuracy(predict(model, x_eval, device=args.device, num_workers=args.workers)[1].argmax(1), y)
    meta = {
        "arch": args.arch,
        "num_classes": len(names),
        "bottleneck_dim": args.bottleneck,
        "class_names": names,
        "size": args.size,
    }
    model.class_names, model.image_size = names, args.size
    folder = model.cpu().save_pretrained(Path(args.out) / "source", provenance={
        "command": app.command_line(args), "seed": args.seed, "steps": steps, "epochs": cfg.epochs,
        "cpu_seconds": round(cpu, 2), "resumed_from_epoch": model.resumed_from_epoch_,
        "data": args.source, "source_train_accuracy": round(acc, 4), "config": vars_jsonable(cfg),
        "losses": trace.rows, "world_size": info.world_size,
    })  # fmt: skip
    atomic_write_json(
        Path(args.out) / "source.json", {**meta, "source_train_accuracy": acc, "config": vars_jsonable(cfg)}
    )
    print(f"source accuracy (train) {acc:.2f}%")
    print(f"wrote {folder}")
    return 0


def vars_jsonable(cfg) -> dict:
    from dataclasses import asdict

    return asdict(cfg)


@app.command(
    "adapt",
    "Adapt a source model to an unlabelled target (SF(DA)^2, AaD or SHOT-IM); writes the model folder OUT/target, "
    "summary.json and history.json.",
    arg(
        "--source-ckpt",
        type=Path,
        required=True,
        help="the model folder OUT/source of `sfda2 train-source` (or a source.pt / target.pt of an earlier version)",
    ),
    arg(
        "--target",
        default="digits",
        help="'digits' (built-in rotated digits) or a target folder <class>/<files>",
    ),
    field_arg(SFDA2Config, "method", choices=METHODS, help="objective"),
    arg(
        "--num-classes",
        type=positive_int,
        default=None,
        help="expected class count (checked against the checkpoint)",
    ),
    field_arg(SFDA2Config, "K", "--k", type=positive_int, help="neighbours in the augmentation graph"),
    field_arg(SFDA2Config, "alpha_1", type=nonneg_float, help="IFA weight"),
    field_arg(SFDA2Config, "alpha_2", type=nonneg_float, help="FD weight (official: 10)"),
    field_arg(SFDA2Config, "lambda_0", type=nonneg_float, help="IFA strength lambda_0"),
    field_arg(SFDA2Config, "lr", type=positive_float, help="learning rate (official: 1e-3)"),
    field_arg(SFDA2Config, "max_epoch", "--epochs", type=positive_int, help="adaptation epochs"),
    field_arg(
        SFDA2Config,
        "interval",
        type=positive_int,
        help="evaluations of the target accuracy over the run (official: 15)",
    ),
    *_loop_flags(SFDA2Config),
    device=True,
    log_dir=True,
    resume=_resume("adapt_state.pt"),
)
def _adapt(args: argparse.Namespace) -> int:
    import time

    model, meta = load_source(args.source_ckpt)
    if args.num_classes is not None and args.num_classes != int(meta["num_classes"]):
        raise InputError(
            f"--num-classes {args.num_classes} but the checkpoint {args.source_ckpt} has {meta['num_classes']} classes"
        )
    x, x_eval, y, _ = load_domain(
        args.target, meta["arch"], int(meta.get("size", 224)), list(meta["class_names"]), role="target"
    )
    cfg = config_from_args(SFDA2Config, args)
    cpu0 = time.process_time()
    res = adapt(
        model,
        x,
        cfg,
        labels=y,
        eval_data=x_eval,
        seed=args.seed,
        device=args.device,
        quiet=args.quiet,
        num_workers=args.workers,
        log_dir=args.log_dir,
        checkpoint=Path(args.out) / "adapt_state.pt",
        resume=args.resume,
    )
    cpu = time.process_time() - cpu0
    final = res.evals[-1]  # the evaluation view after the last iteration
    summary = {
        "method": args.method,
        "accuracy": final["acc"],
        "mean_class_accuracy": final["mean_class_acc"],
        "source_accuracy": res.evals[0]["acc"],
        "seconds": res.seconds,
        "nonfinite_iterations": res.nonfinite,
        "config": res.config,
    }
    out = Path(args.out)
    model.cpu().save_pretrained(out / "target", provenance={
        "command": app.command_line(args), "seed": args.seed, "steps": len(res.history), "cpu_seconds": round(cpu, 2),
        "method": args.method, "source_model": str(args.source_ckpt), "data": args.target,
        "accuracy": final["acc"], "mean_class_accuracy": final["mean_class_acc"], "evals": res.evals,
        "config": res.config,
    })  # fmt: skip
    atomic_write_json(out / "history.json", {"history": res.history, "evals": res.evals})
    atomic_write_json(out / "summary.json", summary)
    print(
        f"{args.method}: target accuracy {summary['source_accuracy']:.2f}% -> {summary['accuracy']:.2f}% "
        f"(mean-class {summary['mean_class_accuracy']:.2f}%) in {res.seconds:.1f}s"
    )
    print(f"wrote {out / 'target'}")
    return 0


@app.command(
    "synthetic-visda",
    "Write a synthetic VisDA-2017-format folder (<out>/<12 classes>/<name>.jpg) to test loaders and memory.",
    arg("--images", type=positive_int, default=3000, help="number of JPEGs (spread over the 12 classes)"),
    arg("--min-side", type=positive_int, default=160, help="smallest image width/height in pixels"),
    arg("--max-side", type=positive_int, default=400, help="largest image width/height in pixels"),
)
def _synthetic_visda(args: argparse.Namespace) -> int:
    from .images import VISDA_CLASSES
    from .images import synthetic_visda_folder

    if args.images < len(VISDA_CLASSES) or args.min_side > args.max_side:
        raise UsageError(
            f"need --images >= {len(VISDA_CLASSES)} and --min-side <= --max-side, got {args.images}, "
            f"{args.min_side}, {args.max_side}"
        )
    out = synthetic_visda_folder(args.out, args.images, side=(args.min_side, args.max_side), seed=args.seed)
    print(f"wrote {args.images} JPEGs in {len(VISDA_CLASSES)} class folders under {out}")
    return 0


main = app.main

if __name__ == "__main__":  # torchrun --nproc_per_node 2 -m iclr24.sfda2.cli train-source ...
    raise SystemExit(main())
