"""The ``asmr`` command: a thin shell over the API.

asmr fit IMAGE.png --bases "4,4,4,8;4,4,6,8" --hidden 256 --checkpoint model [--log-dir LOGS] [--resume]
asmr render model out.png
asmr macs --bases "4,4,4,8;4,4,4,8" --hidden 256
asmr reproduce --quick
asmr bench --quick
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import seed_everything
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from . import bench
from .data import load_signal
from .data import save_signal
from .decomposition import format_bases
from .decomposition import parse_bases
from .decomposition import suggest_bases
from .macs import CONVENTIONS
from .macs import asmr_macs_per_point
from .macs import macs_per_point
from .macs import mlp_macs_per_point
from .model import ASMR
from .model import MODULATORS
from .model import SIREN
from .model import build_model
from .reproduce import PAPER
from .train import fit

app = App("asmr", PAPER.title)
app.add_reproduce(lambda: PAPER)  # asmr reproduce [--smoke|--quick|--full] [--out DIR] [--device D]
app.add_bench(bench.run_benchmarks)  # asmr bench [--smoke|--quick|--full] [--out DIR]


def _bases_for(shape: tuple[int, ...], text: str | None, levels: int) -> list[list[int]]:
    if text is None:
        return [suggest_bases(s, levels) for s in shape]
    return parse_bases(text)


@app.command(
    "fit",
    "Fit ASMR (or the SIREN baseline) to an image, WAV audio or NPY/frame-folder video; save the model folder "
    "(model.safetensors, config.json, provenance.json).",
    arg(
        "input",
        type=Path,
        help="image (PNG/JPEG/...), .wav, .npy (image or (T,H,W[,C]) video) or frame folder",
    ),
    arg("--model", choices=("asmr", "siren"), default="asmr", help="the network"),
    arg(
        "--bases",
        default=None,
        help="per-axis bases, axes separated by ';', e.g. '4,4,4,8;4,4,6,8' for a "
        "512x768 image (each axis's bases multiply to its size); default: suggest_bases(size, --levels)",
    ),
    arg(
        "--levels",
        type=positive_int,
        default=4,
        help="levels (= linear layers) when --bases is not given; also the SIREN's layer count",
    ),
    field_arg(ASMR, "hidden", type=positive_int, help="hidden width"),
    field_arg(ASMR, "modulator", choices=MODULATORS, help="ASMR modulator"),
    field_arg(ASMR, "omega0", type=positive_float, help="SIREN frequency omega0"),
    field_arg(fit, "steps", type=positive_int, help="optimiser steps (paper: 10,000)"),
    field_arg(fit, "lr", type=positive_float, help="Adam learning rate (cosine-annealed)"),
    field_arg(fit, "lr_min", type=nonneg_float, help="final learning rate of the cosine schedule"),
    field_arg(fit, "batch_size", type=positive_int, help="points per step (default: full batch)"),
    field_arg(
        fit,
        "sampler",
        choices=("random", "grid"),
        help="with --batch-size: random points each step, or the official uniform grid sampler (16 cells per axis, "
        "whole epochs over fixed batches; --steps must be a multiple of the batches per epoch)",
    ),
    arg(
        "--checkpoint",
        type=Path,
        default=Path("model"),
        metavar="PATH",
        help="the model folder to write (a path ending in .pt writes the older single-file checkpoint)",
    ),
    field_arg(
        fit,
        "checkpoint_every",
        type=positive_int,
        help="steps between saves of the training state (PATH.train_state.pt, removed when the fit ends)",
    ),
    arg("--resume", action="store_true", help="continue an interrupted fit from its PATH.train_state.pt"),
    device=True,
    out=False,
    log_dir=True,
)
def _fit(args: argparse.Namespace) -> int:  # --seed: model init and batch sampling
    from iclr24.paperkit.pretrained import CONFIG_FILE

    legacy = args.checkpoint.suffix in (".pt", ".pth")
    if legacy and args.checkpoint.is_dir():
        raise UsageError(f"--checkpoint {args.checkpoint} is a folder; give a file name, e.g. model.pt")
    if not legacy and args.checkpoint.is_file():
        raise UsageError(f"--checkpoint {args.checkpoint} is a file; give a folder for the model, e.g. model")
    if not legacy and args.checkpoint.is_dir() and any(args.checkpoint.iterdir()):
        if not (args.checkpoint / CONFIG_FILE).is_file():
            raise UsageError(f"--checkpoint {args.checkpoint} is a folder of other files; give a new folder")
    state = args.checkpoint.with_name(args.checkpoint.name + ".train_state.pt")
    signal = load_signal(args.input)
    device = args.device
    seed_everything(args.seed)
    shape, dim = signal.shape, len(signal.shape)
    if args.model == "asmr":
        bases = _bases_for(shape, args.bases, args.levels)
        model = ASMR(dim, signal.channels, shape, bases, args.hidden, args.omega0, args.modulator)
    else:
        model = SIREN(dim, signal.channels, shape, args.hidden, args.levels, args.omega0)
    model = model.to(device)
    res = fit(
        model,
        torch.from_numpy(signal.values),
        args.steps,
        lr=args.lr,
        lr_min=args.lr_min,
        batch_size=args.batch_size,
        sampler=args.sampler,
        value_range=signal.value_range,
        seed=args.seed,
        show_progress=not args.quiet,
        log_dir=args.log_dir,
        checkpoint=state,
        resume=args.resume,
        checkpoint_every=args.checkpoint_every,
    )
    signal_meta = {
        "kind": signal.kind,
        "sample_rate": signal.sample_rate,
        "value_range": list(signal.value_range),
        "source": str(args.input),
    }
    if not legacy:
        import shlex

        model.save_pretrained(args.checkpoint, provenance={
            "command": shlex.join(["asmr", *args._argv]),
            "seed": args.seed, "steps": args.steps, "steps_unit": "Adam steps", "cpu_seconds": round(res.cpu_seconds, 2),
            "signal": signal_meta, "fit": res.to_dict(),
            "losses": {str(k): v for k, v in list(enumerate(res.losses))[:: max(1, len(res.losses) // 20)]},
        })  # fmt: skip
        state.unlink(missing_ok=True)
        _report(args, model, signal, shape, res)
        return 0
    ckpt = {
        "config": model.config(),
        "state_dict": {k: v.detach().cpu() for k, v in model.state_dict().items()},
        "signal": signal_meta,
        "fit": res.to_dict(),
    }
    atomic_torch_save(ckpt, args.checkpoint)
    state.unlink(missing_ok=True)
    _report(args, model, signal, shape, res)
    return 0


def _report(args: argparse.Namespace, model, signal, shape, res) -> None:
    desc = f"bases {format_bases(model.bases)}" if isinstance(model, ASMR) else f"{args.levels}x{args.hidden}"
    ssim_s = f", SSIM {res.ssim:.4f}" if res.ssim is not None else ""
    print(
        f"{args.model} ({desc}, hidden {args.hidden}) on {signal.kind} {shape}x{signal.channels}: "
        f"PSNR {res.psnr:.2f} dB{ssim_s}, {macs_per_point(model):,.2f} MAC/point, {res.seconds:.1f} s; "
        f"wrote {args.checkpoint}"
    )


def load_checkpoint(path: str | Path, device: str = "cpu") -> tuple[ASMR | SIREN, dict]:
    """A model and its signal metadata from what ``asmr fit`` wrote: a model folder (the signal's kind and range
    from its ``provenance.json``) or an older single-file checkpoint."""
    p = Path(path)
    if p.is_dir():
        from iclr24.paperkit.pretrained import PROVENANCE_FILE
        from iclr24.paperkit.pretrained import load_pretrained

        model = load_pretrained(p)  # checks the folder, the weights' digest, the class
        if not isinstance(model, ASMR | SIREN):
            raise InputFileError(f"{p} holds a {type(model).__name__}, not an ASMR or SIREN model", p)
        prov = json.loads((p / PROVENANCE_FILE).read_text(encoding="utf-8"))
        meta = prov.get("signal") if isinstance(prov, dict) and isinstance(prov.get("signal"), dict) else None
        return model.to(device).eval(), meta or {"kind": "image", "value_range": [0.0, 1.0]}
    if not p.is_file():
        raise InputFileError(f"{p}: no such checkpoint; write one with `asmr fit INPUT --checkpoint {p}`")
    try:
        ckpt = torch.load(p, map_location=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - any unpickling failure means "not our checkpoint"
        raise InputError(f"{p}: not a checkpoint written by `asmr fit` ({type(e).__name__})") from None
    if not isinstance(ckpt, dict) or "config" not in ckpt or "state_dict" not in ckpt:
        raise InputError(f"{p}: not a checkpoint written by `asmr fit` (no config/state_dict)")
    model = build_model(ckpt["config"]).to(device)
    model.load_state_dict(ckpt["state_dict"])
    model.eval()
    return model, ckpt.get("signal", {"kind": "image", "value_range": [0.0, 1.0]})


@app.command(
    "render",
    "Render a fitted model's full grid (activation sharing for ASMR) to PNG / WAV / NPY.",
    arg("checkpoint", type=Path, help="a checkpoint written by `asmr fit`"),
    arg("output", type=Path, help="out.png for images, out.wav for audio, out.npy for anything"),
    arg(
        "--chunk-size", type=positive_int, default=1 << 20, help="max cells per hidden block (bounds memory)"
    ),
    device=True,
    out=False,
    seed=False,  # nothing here is random: no --seed
)
def _render(args: argparse.Namespace) -> int:
    model, meta = load_checkpoint(args.checkpoint, args.device)
    kind = meta.get("kind", "image")
    lo, hi = meta.get("value_range", [0.0, 1.0])
    suffix = args.output.suffix.lower()
    allowed = {"image": (".png", ".jpg", ".jpeg", ".npy"), "audio": (".wav", ".npy"), "video": (".npy",)}[
        kind
    ]
    if suffix not in allowed:
        raise UsageError(f"a {kind} renders to {' / '.join(allowed)}, got {args.output.name}")
    with torch.no_grad():
        y = model.render(chunk_size=args.chunk_size).clamp(lo, hi)
    values = y.reshape(*model.data_shape, model.dim_out).cpu().numpy()
    save_signal(values, args.output, kind, meta.get("sample_rate"))
    print(f"wrote {args.output} ({kind} {tuple(model.data_shape)}x{model.dim_out})")
    return 0


@app.command(
    "macs",
    "MACs per point of ASMR (the paper's formula) against an MLP/SIREN baseline.",
    arg(
        "--bases",
        default=None,
        help="per-axis bases, e.g. '4,4,4,8;4,4,4,8' (the grid size is their product)",
    ),
    arg("--size", default=None, help="grid size instead of --bases, e.g. 512x768 (bases from --levels)"),
    arg("--levels", type=positive_int, default=4, help="levels when --size is given"),
    field_arg(ASMR, "hidden", type=positive_int, help="ASMR hidden width"),
    field_arg(asmr_macs_per_point, "dim_out", type=positive_int, help="output channels"),
    field_arg(asmr_macs_per_point, "modulator", choices=MODULATORS, help="ASMR modulator"),
    field_arg(
        asmr_macs_per_point,
        "convention",
        choices=CONVENTIONS,
        help="official: the paper's profiler (modulation adds counted at N_i); exact: at N_{i+1}",
    ),
    arg(
        "--mlp-layers", type=positive_int, default=None, help="baseline MLP depth (default: the level count)"
    ),
    arg("--mlp-hidden", type=positive_int, default=None, help="baseline MLP width (default: --hidden)"),
    arg("--json", action="store_true", help="print JSON"),
    common=False,
)
def _macs(args: argparse.Namespace) -> int:
    if (args.bases is None) == (args.size is None):
        raise UsageError("give exactly one of --bases '4,4,4,8;4,4,4,8' or --size 512x512")
    if args.bases is not None:
        bases = parse_bases(args.bases)
    else:
        try:
            shape = [int(s) for s in args.size.lower().replace(",", "x").split("x")]
        except ValueError:
            raise UsageError(f"--size must look like 512x768, got {args.size!r}") from None
        if min(shape) < 1:
            raise UsageError(f"--size must be positive, got {args.size!r}")
        bases = [suggest_bases(s, args.levels) for s in shape]
    n_levels = len(bases[0])
    a = asmr_macs_per_point(bases, args.hidden, args.dim_out, args.modulator, args.convention)
    layers = args.mlp_layers or n_levels
    width = args.mlp_hidden or args.hidden
    m = mlp_macs_per_point(len(bases), width, layers, args.dim_out)
    shape = [math.prod(r) for r in bases]
    rec = {
        "bases": bases,
        "shape": shape,
        "hidden": args.hidden,
        "dim_out": args.dim_out,
        "modulator": args.modulator,
        "convention": args.convention,
        "asmr_macs_per_point": a,
        "mlp": f"{layers}x{width}",
        "mlp_macs_per_point": m,
        "ratio": m / a,
    }
    if args.json:
        print(json.dumps(rec))
    else:
        print(
            f"grid {'x'.join(map(str, shape))}, bases {format_bases(bases)}, L={n_levels}, h={args.hidden}, "
            f"{args.modulator} modulator"
        )
        print(f"ASMR: {a:,.2f} MAC/point ({args.convention})")
        print(f"MLP {layers}x{width}: {m:,} MAC/point ({m / a:.1f}x more)")
    return 0


main = app.main
