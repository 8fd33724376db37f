"""The ``fastervit`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.errors import InputFileError

from . import bench
from .reproduce import PAPER
from .train import TrainConfig

app = App("fastervit", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the claim checks run on the CPU (cfg.device unused)


@app.command(
    "bench",
    "CPU throughput (batch 1 and 16), params and MACs of FasterViT-0/1 vs ConvNeXt-T, Swin-T and EfficientViT-B2 "
    "in one round-robin run (1 pinned thread), the no-HAT ablation, and ours vs the authors' package when "
    "importable; writes bench.json, bench.md, throughput.md/png. Reports, never gates.",
    modes=True,
    seed=False,
)
def _bench(args: argparse.Namespace) -> int:
    """paperkit's standard bench command (bench.json, bench.md) plus the throughput table and plot in --out."""
    from iclr24.paperkit import atomic_write_text

    rep = bench.run_benchmarks(args.mode, out=args.out)
    table = (Path(args.out) / "throughput.md").read_text()
    text = rep.to_markdown() + "\n" + table
    print(text, end="")
    atomic_write_json(Path(args.out) / "bench.json", {"mode": args.mode, **rep.to_dict()})
    atomic_write_text(
        Path(args.out) / "bench.md",
        f"# fastervit bench ({args.mode})\n\n{text}\n![throughput](throughput.png)\n",
    )
    print(f"wrote bench.json, bench.md, throughput.md and throughput.png in {args.out}")
    return 0


def _json_dict(s: str) -> dict:
    try:
        d = json.loads(s)
    except json.JSONDecodeError as e:
        raise argparse.ArgumentTypeError(f"expected a JSON object, got {s!r} ({e.msg})") from None
    if not isinstance(d, dict):
        raise argparse.ArgumentTypeError(f"expected a JSON object like '{{\"dim\": 32}}', got {s!r}")
    return d


# the input side of info, predict and validate
_IMG_SIZE = arg("--img-size", type=positive_int, default=None, help="input side (default: the variant's)")


@app.command(
    "info",
    "Parameters, MACs, stage shapes and throughput here of a variant.",
    arg("model", help="a registered variant, e.g. faster_vit_0_224"),
    _IMG_SIZE,
    arg("--batch-size", type=positive_int, default=1, help="batch for the throughput measurement"),
    arg("--repeats", type=positive_int, default=3, help="timed forward passes"),
    seed=False,  # nothing here is random: no --seed
)
def _info(args: argparse.Namespace) -> int:
    import time

    import timm
    import torch

    from .registry import VARIANTS
    from .registry import _check_name

    _check_name(args.model)
    model = timm.create_model(args.model).eval()
    res = VARIANTS[args.model].get("resolution", 224)
    hw = (
        (args.img_size, args.img_size)
        if args.img_size
        else (tuple(res) if isinstance(res, tuple) else (res, res))
    )
    model.check_input(torch.zeros(1, 3, *hw))
    params = sum(p.numel() for p in model.parameters())
    macs = bench.count_macs(model, hw)
    x = torch.randn(args.batch_size, 3, *hw)
    with torch.inference_mode():
        feats = model.forward_intermediates(x[:1], intermediates_only=True)
        model(x)
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            model(x)
            times.append(time.perf_counter() - t0)
    best = sorted(times)[len(times) // 2]
    info = {
        "model": args.model,
        "input": [3, *hw],
        "params": params,
        "macs": macs,
        "stages": [list(f.shape[1:]) for f in feats],
        "batch_size": args.batch_size,
        "images_per_s": args.batch_size / best,
        "device": "cpu",
        "threads": torch.get_num_threads(),
    }
    print(f"{args.model}: {params:,} parameters, {macs / 1e9:.2f} GMACs at {hw[0]}x{hw[1]}")
    for i, s in enumerate(info["stages"]):
        print(f"  stage {i + 1}: {s[0]} x {s[1]} x {s[2]}")
    print(
        f"  throughput here: {info['images_per_s']:.2f} images/s (batch {args.batch_size}, "
        f"{info['threads']} CPU threads, median of {args.repeats})"
    )
    atomic_write_json(args.out / f"info_{args.model}.json", info)
    return 0


@app.command(
    "train",
    "Train a FasterViT on an ImageFolder tree (or built-in 'digits'); top-1/top-5 each epoch. Writes the model "
    "folder OUT/model (FasterViT.from_pretrained), OUT/checkpoint.pth (timm layout), OUT/metrics.json and "
    "OUT/train_state.pt (what --resume continues from). "
    "Data-parallel under torchrun: torchrun --nproc_per_node N -m iclr24.fastervit.cli train ...",
    arg("data", help="ImageFolder root (DIR/train/<class>/, DIR/val/<class>/ or DIR/<class>/) or 'digits'"),
    field_arg(TrainConfig, "model", help="a registered variant"),
    field_arg(TrainConfig, "epochs", type=positive_int, help="training epochs (the paper's)"),
    field_arg(TrainConfig, "batch_size", type=positive_int, help="images per process per step"),
    field_arg(TrainConfig, "lr", type=float, help="peak lr (default 5e-3 x global batch / 4096)"),
    field_arg(TrainConfig, "weight_decay", type=float, help="AdamW weight decay"),
    field_arg(TrainConfig, "warmup_epochs", type=float, help="linear warm-up before the cosine decay"),
    field_arg(TrainConfig, "img_size", type=positive_int, help="training/validation image side"),
    field_arg(TrainConfig, "max_steps_per_epoch", type=positive_int, help="cap the steps of each epoch"),
    field_arg(TrainConfig, "num_workers", help="DataLoader worker processes"),
    field_arg(
        TrainConfig,
        "init_checkpoint",
        "--checkpoint",
        dest="checkpoint",
        help="initialise from a model folder or a local checkpoint file (head replaced if the class count differs)",
    ),
    resume_arg(written="after every epoch"),
    field_arg(TrainConfig, "model_kwargs", type=_json_dict, help="JSON overrides, e.g. '{\"dim\": 32}'"),
    field_arg(TrainConfig, "mixup", type=float, help="mixup alpha, timm's Mixup (paper 0.8; 0 = off)"),
    field_arg(TrainConfig, "cutmix", type=float, help="cutmix alpha, timm's Mixup (paper 1.0; 0 = off)"),
    field_arg(
        TrainConfig,
        "rand_augment",
        help="timm RandAugment string, image folders only (paper rand-m9-mstd0.5-inc1; default off)",
    ),
    field_arg(
        TrainConfig, "reprob", type=float, help="random-erasing probability, timm's (paper 0.25; 0 = off)"
    ),
    field_arg(
        TrainConfig,
        "model_ema_decay",
        type=float,
        help="keep an EMA of the weights, timm's ModelEmaV3 (paper 0.9998; default off); evaluated, saved too",
    ),
    device=True,
    log_dir=True,
    resume=lambda a: a.resume,
)
def _train(args: argparse.Namespace) -> int:
    """Writes the model folder OUT/model, OUT/checkpoint.pth, OUT/metrics.json and OUT/train_state.pt."""
    from .registry import _check_name
    from .registry import check_model_kwargs
    from .train import train

    device = args.device  # resolved by the App
    _check_name(args.model)
    check_model_kwargs(args.model_kwargs, args.model)  # before any data is read
    if args.checkpoint and args.resume:
        raise UsageError(
            "--checkpoint starts a new run from weights, --resume continues one: give one of them"
        )
    if args.checkpoint and not Path(args.checkpoint).exists():
        raise InputFileError(f"--checkpoint {args.checkpoint} does not exist")
    cfg = config_from_args(TrainConfig, args, device=device, init_checkpoint=args.checkpoint)
    metrics = train(
        cfg,
        args.data,
        out=args.out,
        show_progress=not args.quiet,
        log_dir=args.log_dir,
        resume=args.resume,
        command=app.command_line(args),
    )
    if int(os.environ.get("RANK", "0")) != 0:  # under torchrun the summary comes from rank 0 alone
        return 0
    f = metrics["final"]
    resumed = metrics["resumed_from_epoch"]
    print(
        f"{args.model} on {args.data}: top-1 {f['top1']:.4f}, top-5 {f['top5']:.4f} after {args.epochs} epochs "
        + (f"(resumed after epoch {resumed}) " if resumed is not None else "")
        + f"({metrics['seconds']:.1f} s, {metrics['world_size']} process(es)); model folder {args.out / 'model'}, "
        f"checkpoint in {args.out}"
    )
    return 0


# the variant of a checkpoint (predict, validate)
_VARIANT = arg("--model", default=None, help="variant (read from the checkpoint when it records it)")


@app.command(
    "predict",
    "Top-5 classes of an image with a trained or official checkpoint.",
    arg("image", help="an image file (jpg/png/...)"),
    arg(
        "--checkpoint",
        required=True,
        help="the model folder OUT/model or OUT/checkpoint.pth from `fastervit train`, or an official checkpoint",
    ),
    _VARIANT,
    _IMG_SIZE,
    arg("--topk", type=positive_int, default=5, help="classes to print"),
    out=False,
    seed=False,
)
def _predict(args: argparse.Namespace) -> int:
    from .predict import predict

    rows = predict(args.image, args.checkpoint, model_name=args.model, img_size=args.img_size, topk=args.topk)
    print(f"top-{len(rows)} of {args.image}:")
    print(f"{'rank':>4}  {'probability':>11}  {'index':>5}  class")
    for i, r in enumerate(rows, 1):
        print(f"{i:>4}  {r['probability']:>11.4f}  {r['index']:>5}  {r['label']}")
    return 0


@app.command(
    "validate",
    "Top-1/top-5 of a checkpoint on an ImageFolder validation tree, with timm's eval transform (the variant's "
    "crop_pct, bicubic), as the official validate.py; writes OUT/validate.json.",
    arg(
        "--checkpoint",
        required=True,
        help="the model folder OUT/model or checkpoint.pth from `fastervit train`, or an official .pth.tar",
    ),
    arg(
        "--data",
        required=True,
        help="validation folder VAL/<class>/*.JPEG (ImageNet: the 1000 synset folders)",
    ),
    _VARIANT,
    arg("--batch-size", type=positive_int, default=64, help="images per forward pass"),
    _IMG_SIZE,
    arg(
        "--crop-pct",
        type=float,
        default=None,
        help="centre-crop fraction (default: the variant's, 0.875 or 1.0)",
    ),
    arg("--num-workers", type=int, default=0, help="DataLoader worker processes"),
    device=True,
    seed=False,  # nothing here is random: no --seed
)
def _validate(args: argparse.Namespace) -> int:
    from .validate import validate

    res = validate(
        args.checkpoint,
        args.data,
        model_name=args.model,
        batch_size=args.batch_size,
        img_size=args.img_size,
        crop_pct=args.crop_pct,
        num_workers=args.num_workers,
        device=args.device,
        show_progress=not args.quiet,
    )
    c = res["data_config"]
    print(
        f"{res['model']} on {res['data']}: top-1 {res['top1']:.4f}, top-5 {res['top5']:.4f} over {res['n']} images "
        f"({c['input_size'][1]}x{c['input_size'][2]}, crop_pct {c['crop_pct']}, {c['interpolation']})"
    )
    atomic_write_json(args.out / "validate.json", res)
    return 0


main = app.main


if __name__ == "__main__":
    raise SystemExit(main())
