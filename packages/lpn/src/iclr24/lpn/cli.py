"""The ``lpn`` command: a thin shell over the API (train, denoise, prior, solve, reproduce, bench)."""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import seed_everything
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability
from iclr24.paperkit.errors import InputError

from . import bench
from .data import digits_split
from .data import image_to_tensor
from .data import laplace_sampler
from .data import load_image
from .data import load_image_folder
from .data import psnr
from .data import save_image
from .experiments import ConvDenoiser
from .icnn import ARCHITECTURES
from .icnn import as_image_denoiser
from .icnn import build_model
from .pnp import denoising_operator
from .pnp import gaussian_blur_operator
from .pnp import inpainting_operator
from .pnp import pnp_admm
from .pnp import pnp_pgd
from .prior import INVERSION_METHODS
from .prior import evaluate_prior
from .reproduce import PAPER
from .train import CHECKPOINT_NAME
from .train import NonFiniteLossError
from .train import TrainConfig
from .train import load_model
from .train import train

BASELINE_ARCH = (
    "conv-denoiser"  # `lpn train --arch conv-denoiser`: the unconstrained conv baseline (ConvDenoiser)
)
app = App("lpn", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the claim checks run on the CPU
app.add_bench(bench.run_benchmarks)


def _training_data(args: argparse.Namespace) -> tuple[object, dict]:
    """(data, model kwargs) for ``lpn train``."""
    conv_baseline = args.arch == BASELINE_ARCH
    if args.data == "laplace":
        if args.arch != "mlp":
            raise UsageError("--data laplace needs --arch mlp (1-D samples)")
        return laplace_sampler(1.0), {"in_dim": 1}
    if args.data == "digits":
        if args.arch not in ("mlp", BASELINE_ARCH):
            raise UsageError(
                "--data digits (8x8 images) needs --arch mlp (or conv-denoiser); for conv28/patch128 give an "
                "image folder"
            )
        tr, _ = digits_split(1500, seed=args.seed)
        if conv_baseline:
            return tr.reshape(-1, 1, 8, 8), {"in_channels": 1}
        return tr, {"in_dim": 64}
    if args.data == "mnist":
        if args.arch not in ("conv28", BASELINE_ARCH):
            raise UsageError("--data mnist (28x28 images) needs --arch conv28 (or conv-denoiser)")
        from iclr24.paperkit.data.mnist import load_mnist

        try:
            x = load_mnist()["train"][0]
        except Exception as e:  # DataMissing names ``iclr24 data get mnist``
            raise UsageError(" ".join(str(e).split())) from None
        return torch.as_tensor(x).reshape(-1, 1, 28, 28), {"in_channels": 1}
    folder = Path(args.data)
    gray = args.channels == 1
    if args.arch == "conv28":
        size = 28
    else:
        size = args.image_size
    x = load_image_folder(folder, size, gray=gray, patches_per_image=args.patches_per_image, seed=args.seed)
    if args.arch == "mlp":
        return x.reshape(len(x), -1), {"in_dim": x[0].numel()}
    if args.arch in ("conv28", BASELINE_ARCH):
        return x, {"in_channels": x.shape[1]}
    return x, {"in_channels": x.shape[1], "image_size": size}


@app.command(
    "train",
    "Train an LPN denoiser (official schedule: l1 pre-training, then proximal matching); resumable; "
    "works under torchrun for data-parallel training.",
    arg(
        "--arch",
        choices=[*sorted(ARCHITECTURES), BASELINE_ARCH],
        default="mlp",
        help="architecture (conv-denoiser: the unconstrained conv baseline, not an LPN)",
    ),
    arg(
        "--data",
        default="digits",
        help="'digits', 'laplace' (1-D toy), 'mnist' (real MNIST from the data folder, --arch conv28) or a "
        "folder of images",
    ),
    arg(
        "--steps", type=positive_int, default=None, help="total steps (default: 40000, or by --smoke/--quick)"
    ),
    arg("--pretrain-steps", type=int, default=None, help="l1 pre-training steps (default: half of --steps)"),
    field_arg(TrainConfig, "num_stages", "--stages", type=positive_int, help="proximal-matching stages"),
    field_arg(
        TrainConfig, "loss", choices=["pm", "l1", "l2"], help="pm: the official schedule; l1/l2: baselines"
    ),
    field_arg(TrainConfig, "sigma_noise", "--sigma", type=nonneg_float, help="training noise level"),
    field_arg(
        TrainConfig, "batch_size", type=positive_int, help="samples per step (split across torchrun ranks)"
    ),
    field_arg(TrainConfig, "lr", type=positive_float, help="learning rate of the PM stages"),
    field_arg(TrainConfig, "pretrain_lr", type=positive_float, help="learning rate of the l1 pre-training"),
    arg("--hidden", type=positive_int, default=None, help="hidden width (default per architecture)"),
    arg(
        "--layers", type=positive_int, default=None, help="hidden layers (mlp: 3) / convs (conv-denoiser: 5)"
    ),
    arg("--beta", type=positive_float, default=None, help="softplus beta (default per architecture)"),
    arg("--alpha", type=nonneg_float, default=None, help="strong convexity alpha (default per architecture)"),
    arg("--channels", type=int, choices=[1, 3], default=1, help="image channels (image folders)"),
    arg(
        "--image-size", type=positive_int, default=128, help="patch size for patch128 / mlp on image folders"
    ),
    arg("--patches-per-image", type=positive_int, default=8, help="random crops per folder image"),
    field_arg(TrainConfig, "checkpoint_every", type=positive_int, help="steps between checkpoints"),
    arg(
        "--no-resume",
        action="store_true",
        help="start afresh (into an --out that holds a run: with --overwrite, which replaces it)",
    ),
    default_out="runs/lpn",
    modes=True,
    device=True,
    log_dir=True,
    resume=lambda a: not a.no_resume,
)
def _train(args: argparse.Namespace) -> int:
    import time

    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import init_distributed

    cpu0 = time.process_time()
    info = init_distributed(device=args.device)
    try:
        seed_everything(args.seed)
        data, kw = _training_data(args)
        defaults = {
            "mlp": {"hidden": 256, "beta": 10.0, "alpha": 0.01, "layers": args.layers or 3},
            "conv28": {"hidden": 64, "beta": 10.0, "alpha": 0.01},
            "patch128": {"hidden": 256, "beta": 100.0, "alpha": 1e-6},
            BASELINE_ARCH: {"hidden": 32, "beta": 10.0, "depth": args.layers or 5},
        }[args.arch]
        for k in ("hidden", "beta", "alpha"):
            if getattr(args, k) is not None:
                if k not in defaults:
                    raise UsageError(f"--{k} does not apply to --arch {args.arch}")
                defaults[k] = getattr(args, k)
        if args.arch == BASELINE_ARCH:
            model = ConvDenoiser(**defaults, **kw)
        else:
            model = build_model(args.arch, **defaults, **kw)
        steps = args.steps or {"smoke": 20, "quick": 2000, "full": 40000}[args.mode]
        pre = args.pretrain_steps if args.pretrain_steps is not None else steps // 2
        if args.loss == "pm" and not 0 <= pre < steps:
            raise UsageError(f"--pretrain-steps must be in [0, --steps), got {pre} with --steps {steps}")
        cfg = config_from_args(  # the stages, rates, batch size, noise, loss and seed: the CLI's
            TrainConfig,
            args,
            num_steps=steps,
            num_steps_pretrain=pre,
            checkpoint_dir=str(args.out),
            resume=not args.no_resume,
        )
        try:
            res = train(
                model, data, cfg, show_progress=not args.quiet, device=info.device, log_dir=args.log_dir
            )
        except NonFiniteLossError as e:
            print(f"lpn train: stopped: {e}")
            return 1
        if info.is_main:
            last = np.mean(res.losses[-50:]) if res.losses else float("nan")
            folder = _save_model_folder(args, model, res, cfg, time.process_time() - cpu0, info.world_size)
            print(
                f"trained {args.arch} steps {res.start_step}->{res.end_step} on {info.world_size} process(es); "
                f"final loss {last:.4g}; model folder {folder}, checkpoint {Path(args.out) / CHECKPOINT_NAME}"
            )
        return 0
    finally:
        cleanup_distributed()


def provenance_losses(losses: list[float], start: int, end: int, num_steps: int) -> dict[str, float]:
    """The training losses a model folder's provenance records, as ``{str(step): loss}`` (1-based steps): every
    step up to 20 (what a retrain of the first steps is compared with), then every ``num_steps // 20`` steps and
    the last one."""
    every = max(1, num_steps // 20)
    out = {}
    for i, loss in enumerate(losses):
        step = start + i + 1
        if step <= 20 or step % every == 0 or step == end:
            out[str(step)] = float(loss)
    return out


def _save_model_folder(args, model, res, cfg: TrainConfig, cpu_seconds: float, world: int) -> Path:
    """OUT/model: the trained LPN as a model folder, with how it was trained in provenance.json."""
    losses = provenance_losses(res.losses, res.start_step, res.end_step, cfg.num_steps)
    return model.save_pretrained(
        Path(args.out) / "model",
        provenance={
            "command": app.command_line(args),
            "seed": args.seed,
            "steps": res.end_step,
            "resumed_from_step": res.start_step or None,
            "cpu_seconds": round(cpu_seconds, 2),
            "world_size": world,
            "data": str(args.data),
            # the checkpoint folder is the command's --out: not recorded twice (a shipped file names no machine path)
            "train_config": {**cfg.to_dict(), "checkpoint_dir": None},
            "losses": losses,  # {step: loss}: steps 1-20, then every num_steps / 20 (this process's part)
        },
    )


def _image_batch(path: Path) -> torch.Tensor:
    return image_to_tensor(load_image(path)).unsqueeze(0)


def _check_channels(model, x: torch.Tensor, path: Path) -> torch.Tensor:
    c_model = model.input_shape[0] if model.arch != "mlp" else None
    if c_model is not None and x.shape[1] != c_model:
        if c_model == 1 and x.shape[1] == 3:
            return x.mean(1, keepdim=True)
        raise InputError(f"{path}: the model takes {c_model}-channel images, got {x.shape[1]} channel(s)")
    return x


# the trained LPN that denoise, prior and solve use
_CHECKPOINT = arg(
    "--checkpoint",
    type=Path,
    required=True,
    help="model folder (OUT/model), training folder or checkpoint file",
)


def _image_to_image(input_help: str, output_help: str) -> list:
    """The flags of a command that maps an image to an image with the trained LPN (denoise, solve)."""
    return [
        _CHECKPOINT,
        arg("--input", type=Path, required=True, help=input_help),
        arg("--output", type=Path, required=True, help=output_help),
    ]


@app.command(
    "denoise",
    "Denoise an image (PNG/NPY in [0, 1]) with a trained LPN.",
    *_image_to_image("image (.png/.npy)", "denoised image (.png/.npy)"),
    arg("--add-noise", type=nonneg_float, default=0.0, help="add N(0, s^2) noise first (a demo), seeded"),
    out=False,
)
def _denoise(args: argparse.Namespace) -> int:
    model = load_model(args.checkpoint)
    x = _check_channels(model, _image_batch(args.input), args.input)
    if args.add_noise > 0:
        g = torch.Generator().manual_seed(args.seed)
        x = x + args.add_noise * torch.randn(x.shape, generator=g)
    out = as_image_denoiser(model)(x).clamp(0, 1)
    save_image(args.output, out[0])
    print(f"wrote {args.output}")
    return 0


@app.command(
    "prior",
    "Evaluate the learned prior R(x) at images (inverts the LPN; R is defined on its range).",
    _CHECKPOINT,
    arg("--input", type=Path, nargs="+", required=True, help="images (.png/.npy) of the model's input size"),
    field_arg(
        evaluate_prior, "method", choices=INVERSION_METHODS, help="how f is inverted to find y = f^-1(x)"
    ),
    out=False,
    seed=False,  # nothing here is random: no --seed
)
def _prior(args: argparse.Namespace) -> int:
    model = load_model(args.checkpoint)
    xs = []
    for p in args.input:
        x = _check_channels(model, _image_batch(p), p)
        if model.arch == "mlp":
            if x[0].numel() != model.input_shape[0]:
                raise InputError(
                    f"{p}: the model takes {model.input_shape[0]} values, the image has {x[0].numel()}"
                )
            x = x.reshape(1, -1)
        elif tuple(x.shape[1:]) != tuple(model.input_shape):
            raise InputError(
                f"{p}: the prior is defined on images of shape {tuple(model.input_shape)}, got "
                f"{tuple(x.shape[1:])}"
            )
        xs.append(x)
    r, _, fy = evaluate_prior(
        model, torch.cat(xs), args.method, return_inverse=True, show_progress=not args.quiet
    )
    x_all = torch.cat(xs).double()
    for p, ri, e in zip(args.input, r.tolist(), (fy - x_all).abs().flatten(1).max(1).values.tolist()):
        print(f"{p}\tR={ri:.6g}\tinversion |f(y)-x|_inf={e:.2e}")
    return 0


@app.command(
    "solve",
    "Simulate an inverse problem on an image and solve it with PnP (the LPN as the prox).",
    *_image_to_image("clean image (.png/.npy in [0, 1])", "reconstruction (.png/.npy)"),
    arg(
        "--operator", choices=["inpaint", "blur", "denoise"], default="inpaint", help="the forward operator A"
    ),
    field_arg(inpainting_operator, "missing", type=probability, help="fraction of pixels removed (inpaint)"),
    arg("--blur-sigma", type=positive_float, default=1.0, help="Gaussian blur std in pixels (blur)"),
    arg("--noise", type=nonneg_float, default=0.0, help="measurement noise std"),
    arg("--solver", choices=["pgd", "admm"], default="pgd", help="PnP-PGD or PnP-ADMM"),
    field_arg(
        pnp_pgd, "num_iter", "--iters", dest="iters", type=positive_int, help="solver iterations (PGD's)"
    ),
    field_arg(pnp_pgd, "step", type=positive_float, help="PGD step size"),
    field_arg(pnp_admm, "rho", type=positive_float, help="ADMM penalty"),
    field_arg(pnp_admm, "scale", type=positive_float, help="ADMM data-term weight"),
    arg("--measurement-out", type=Path, default=None, help="also write the measurement (A^T y)"),
    out=False,
)
def _solve(args: argparse.Namespace) -> int:
    model = load_model(args.checkpoint)
    x = _check_channels(model, _image_batch(args.input), args.input)
    if args.operator == "inpaint":
        if args.missing >= 1:
            raise UsageError("--missing must be < 1")
        op = inpainting_operator(tuple(x.shape[1:]), args.missing, seed=args.seed)
    elif args.operator == "blur":
        op = gaussian_blur_operator(args.blur_sigma)
    else:
        op = denoising_operator()
    g = torch.Generator().manual_seed(args.seed)
    y = op.A(x) + args.noise * torch.randn(x.shape, generator=g)
    den = as_image_denoiser(model)
    den(x[:1])  # shape check before iterating
    if args.solver == "pgd":
        res = pnp_pgd(y, op.A, op.At, den, step=args.step, num_iter=args.iters, show_progress=not args.quiet)
    else:
        res = pnp_admm(
            y,
            op.A,
            op.At,
            den,
            rho=args.rho,
            scale=args.scale,
            num_iter=args.iters,
            show_progress=not args.quiet,
        )
    out = res.x.clamp(0, 1)
    save_image(args.output, out[0])
    if args.measurement_out is not None:
        save_image(args.measurement_out, op.At(y)[0].clamp(0, 1))
    p_meas, p_rec = float(psnr(op.At(y).clamp(0, 1), x)), float(psnr(out, x))
    last = res.step_norms[-1]
    print(
        f"{op.name}, {args.solver} x{len(res.step_norms)}: PSNR measurement {p_meas:.2f} dB -> reconstruction "
        f"{p_rec:.2f} dB; final ||x_k+1 - x_k|| = {last:.2e}" + ("" if math.isfinite(last) else " (diverged)")
    )
    print(f"wrote {args.output}")
    return 0


main = app.main


if __name__ == "__main__":  # ``python -m iclr24.lpn.cli`` (used under torchrun)
    raise SystemExit(main())
