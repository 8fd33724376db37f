"""The ``fif`` command: a thin shell over the API.

fif train --data sine|s_curve|swiss_roll|mnist|PATH.npy [--latent-dim d] [--steps N] --out DIR
fif sample --checkpoint DIR/model --n 1000 --out DIR      (DIR/model.pt works too)
fif nll --checkpoint DIR/model --data PATH|sine --out DIR
fif reproduce [--smoke|--quick|--full]
fif bench [--smoke|--quick|--full]
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import atomic_write_bytes
from iclr24.paperkit import atomic_write_json
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

from . import bench
from .data import TOY_ALIASES
from .data import TOY_DATASETS
from .data import load_array
from .data import load_image_folder
from .data import standardize
from .data import toy_dataset
from .model import FIFModel
from .model import FreeFormInjectiveFlow
from .reproduce import PAPER
from .train import CHECKPOINT_FORMAT
from .train import TrainConfig
from .train import fit
from .train import load_checkpoint

app = App("fif", PAPER.title)
_NPZ_KEY = arg(
    "--npz-key",
    default=None,
    help="the array to read from a .npz holding several (default: its only array; several are refused)",
)
# the meta entries that must match for --resume to continue a run (the rest is derived from them)
_RESUME_KEYS = ("data", "kind", "data_dim", "latent_dim", "beta", "noise", "n_blocks", "width", "image_shape")
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)


def _load_data(
    spec: str, n: int, seed: int, data_dir, image_size: int | None = None, npz_key: str | None = None
) -> tuple[torch.Tensor, dict]:
    """Data by name or path, with the meta needed to rebuild the same model and preprocessing later."""
    spec = TOY_ALIASES.get(spec, spec)
    if spec in TOY_DATASETS:
        x = toy_dataset(spec, n, seed)
        (x,) = standardize(x)
        return x, {"data": spec, "kind": "toy", "image_shape": None}
    if spec == "mnist":
        from iclr24.paperkit.data.mnist import load_mnist

        x = torch.as_tensor(load_mnist(data_dir)["train"][0][:n])
        return x, {"data": "mnist", "kind": "image", "image_shape": [1, 28, 28]}
    p = Path(spec)
    if not p.exists():
        raise InputFileError(
            f"--data: {spec!r} is neither a built-in dataset ({', '.join(TOY_DATASETS)}, mnist) nor a file or folder"
        )
    if p.is_dir():
        x, shape = load_image_folder(p, size=image_size, max_images=n)
        return x, {
            "data": str(p),
            "kind": "image_folder",
            "image_shape": list(shape),
            "image_size": image_size,
        }
    x = load_array(p, key=npz_key)[:n]
    if x.shape[0] < 2:
        raise InputError(f"{p}: {x.shape[0]} row; a distribution needs at least 2 points")
    mean, std = x.mean(0), x.std(0)
    constant = (std == 0).nonzero().flatten().tolist()
    if len(constant) == x.shape[1]:
        raise InputError(
            f"{p}: every column is constant (all {x.shape[0]} rows are the same point): there is no distribution "
            "to learn"
        )
    if constant:  # a constant column is a flat direction of the manifold: centred, not scaled
        std = torch.where(std > 0, std, torch.ones_like(std))
        print(
            f"note: {len(constant)} constant column(s) of {p.name} (first: {constant[:5]}) are centred, not scaled",
            file=sys.stderr,
        )
    meta = {"data": str(p), "kind": "file", "image_shape": None, "mean": mean.tolist(), "std": std.tolist()}
    if npz_key is not None:
        meta["npz_key"] = npz_key
    return (x - mean) / std, meta


def _build(meta: dict) -> FIFModel:
    """The model of a run's meta: the package's conv pair for images, its residual MLP pair otherwise (the same
    networks, initialised from the same draws, as ``conv_pair`` / ``resnet_pair`` + ``FreeFormInjectiveFlow``)."""
    D, d = meta["data_dim"], meta["latent_dim"]
    common = dict(data_dim=D, latent_dim=d, beta=meta["beta"], noise=meta["noise"])
    if meta["image_shape"]:
        return FIFModel(net="conv", image_shape=list(meta["image_shape"]), ch_factor=meta["ch_factor"],
                        hidden=meta["width"], **common)  # fmt: skip
    return FIFModel(net="resnet", n_blocks=meta["n_blocks"], widths=[meta["width"]] * 2, **common)


@app.command(
    "train",
    "Train a free-form injective flow on a built-in dataset or a .npy/.npz/.csv file; writes the model folder "
    "OUT/model (FIFModel.from_pretrained), the resumable OUT/model.pt and plots.",
    arg(
        "--data",
        default="sine",
        help="sine | s_curve (scurve) | swiss_roll | mnist | PATH (.npy/.npz/.csv, rows = points; columns are "
        "standardised) | FOLDER of images",
    ),
    arg(
        "--image-size",
        type=positive_int,
        default=None,
        help="resize the images of an image folder to N x N (N a multiple of 4; default: keep their size)",
    ),
    arg(
        "--latent-dim",
        type=positive_int,
        default=None,
        help="d (default: the toy manifold's dim, 16 for mnist, D//2 for files)",
    ),
    field_arg(TrainConfig, "steps", type=positive_int, help="training steps"),
    field_arg(TrainConfig, "batch_size", type=positive_int, help="batch size"),
    field_arg(TrainConfig, "lr", type=positive_float, help="Adam learning rate (one-cycle peak)"),
    field_arg(FIFModel, "beta", type=nonneg_float, help="reconstruction weight (official toy/tabular: 10)"),
    field_arg(FIFModel, "noise", type=nonneg_float, help="SoftFlow noise std added to the data"),
    arg("--n-blocks", type=positive_int, default=2, help="residual blocks (MLP models)"),
    arg("--width", type=positive_int, default=128, help="hidden width"),
    arg("--n", type=positive_int, default=20000, help="number of training points to use"),
    arg("--resume", action="store_true", help="continue from OUT/model.pt if it exists"),
    _NPZ_KEY,
    device=True,
    data=True,
    log_dir=True,
    resume=lambda a: a.resume,
)
def _train(args: argparse.Namespace) -> int:
    import time

    cpu0 = time.process_time()
    x, meta = _load_data(args.data, args.n, args.seed, args.data_dir, args.image_size, args.npz_key)
    D = x.shape[1]
    default_d = 16 if meta["kind"] == "image_folder" else max(1, D // 2)
    d = args.latent_dim or {"sine": 1, "s_curve": 2, "swiss_roll": 2, "mnist": 16}.get(
        meta["data"], default_d
    )
    if d >= D:
        raise UsageError(f"--latent-dim must be < the data dimension D={D}, got {d}")
    if meta["kind"] == "image_folder" and any(v % 4 for v in meta["image_shape"][1:]):
        raise UsageError(
            f"the conv pair needs image height and width that are multiples of 4, got "
            f"{meta['image_shape'][1]}x{meta['image_shape'][2]}; pass --image-size N (e.g. 32) to resize"
        )
    meta.update(
        data_dim=D,
        latent_dim=d,
        beta=args.beta,
        noise=args.noise,
        n_blocks=args.n_blocks,
        width=args.width,
        ch_factor=16,
    )
    torch.manual_seed(args.seed)  # the initial weights follow --seed (they were drawn unseeded before)
    model = _build(meta)
    out = Path(args.out)
    cfg = config_from_args(TrainConfig, args, checkpoint_every=max(1, args.steps // 10))
    if args.resume and (out / "model.pt").exists():
        _check_resume(out / "model.pt", meta, model, cfg)  # before anything in OUT is written
    # the meta rides in every checkpoint, so model.pt always rebuilds itself; meta.json is written once it exists
    hist = fit(
        model,
        x,
        cfg,
        checkpoint=out / "model.pt",
        resume=args.resume,
        device=args.device,
        show_progress=not args.quiet,
        log_every=max(1, args.steps // 100),
        checkpoint_extra={"meta": meta},
        log_dir=args.log_dir,
    )
    atomic_write_json(out / "meta.json", meta)
    _save_model_folder(args, model, meta, hist, time.process_time() - cpu0)
    model.to("cpu").eval()
    n_eval = min(2000, x.shape[0])
    nll = float(model.exact_nll(x[:n_eval]).mean()) if d <= 64 else None
    summary = {
        "steps": args.steps,
        "final_loss": hist["loss"][-1] if hist["loss"] else None,
        "train_exact_nll": nll,
    }
    atomic_write_json(out / "train.json", summary)
    s = model.sample(n_eval, generator=torch.Generator().manual_seed(0))
    _plot_samples(s, meta, out / "samples.png", x[:n_eval])
    print(json.dumps(summary))
    print(f"wrote {out / 'model'} (FIFModel.from_pretrained) and {out / 'model.pt'}")
    return 0


def _save_model_folder(args: argparse.Namespace, model: FIFModel, meta: dict, hist: dict, cpu_seconds: float):
    """OUT/model: the trained flow as a model folder; provenance.json holds the run and the data meta (scaling,
    image shape) that sample and nll need."""
    every = max(1, len(hist["step"]) // 20)
    losses = [{"step": s + 1, "loss": v} for s, v in list(zip(hist["step"], hist["loss"]))[::every]]
    return model.save_pretrained(
        Path(args.out) / "model",
        provenance={
            "command": app.command_line(args),
            "seed": args.seed,
            "steps": args.steps,
            "cpu_seconds": round(cpu_seconds, 2),
            "meta": meta,
            "losses": losses,
            "skipped_steps": hist["skipped"],
        },
    )


def _check_resume(ckpt: Path, meta: dict, model: FreeFormInjectiveFlow, cfg: TrainConfig) -> None:
    """--resume: the run in OUT must be one of the same data and model, else nothing is written."""
    old = _stored_meta(ckpt)
    diff = [k for k in _RESUME_KEYS if old.get(k) != meta.get(k)]
    if diff:
        k = diff[0]
        raise UsageError(
            f"--resume: {ckpt.parent} holds a run with {k}={old.get(k)!r}, this command asks for {k}={meta.get(k)!r}; "
            "resume with the run's own settings, or train into another --out (nothing was written)"
        )
    ck = load_checkpoint(ckpt, model)
    steps = (ck.get("config") or {}).get("steps")
    if steps is not None and steps != cfg.steps:
        raise UsageError(
            f"--resume: {ckpt} was trained with --steps {steps} (the one-cycle schedule depends on it), got "
            f"--steps {cfg.steps} (nothing was written)"
        )


def _stored_meta(ckpt: Path) -> dict:
    """The meta of a run: the copy inside model.pt (this version writes one), else meta.json beside it."""
    from iclr24.paperkit.checkpoint import load_checkpoint as load_safely

    ck = load_safely(ckpt, format=CHECKPOINT_FORMAT, required={"model": dict}, what="fif checkpoint")
    if isinstance(ck.get("meta"), dict):
        return ck["meta"]
    meta_path = ckpt.parent / "meta.json"
    if not meta_path.exists():
        raise InputFileError(f"{meta_path} not found: it is written by `fif train` next to model.pt")
    return read_json_object(meta_path, "a valid fif meta file")


def _plot_samples(s: torch.Tensor, meta: dict, path: Path, x: torch.Tensor | None = None) -> None:
    """Samples ``s`` (and data ``x`` behind them, when given) as a scatter of the first and last column, or as an
    image grid."""
    from iclr24.paperkit.plots import pyplot
    from iclr24.paperkit.plots import save_figure

    plt = pyplot()
    if meta["image_shape"]:
        c, h, w = meta["image_shape"]
        k = min(32, s.shape[0])
        cols = min(16, k)
        rows = -(-k // cols)
        imgs = torch.zeros(rows * cols, c, h, w)
        imgs[:k] = s[:k].clamp(0, 1).reshape(k, c, h, w)
        grid = imgs.reshape(rows, cols, c, h, w).permute(0, 3, 1, 4, 2).reshape(rows * h, cols * w, c)
        fig, ax = plt.subplots(figsize=(12, 12 * rows * h / (cols * w) + 0.2))
        ax.imshow(grid[..., 0].numpy() if c == 1 else grid.numpy(), cmap="gray" if c == 1 else None)
        ax.set_axis_off()
    else:
        fig, ax = plt.subplots(figsize=(5, 4))
        if x is not None:
            ax.scatter(x[:, 0], x[:, -1], s=2, c="grey", alpha=0.3, label="data")
        ax.scatter(s[:, 0], s[:, -1], s=2, c="C1", alpha=0.4, label="samples")
        ax.set(xlabel="column 0", ylabel=f"column {s.shape[1] - 1}")
        ax.legend(markerscale=4)
    save_figure(fig, path)


def _load_model(ckpt: Path) -> tuple[FreeFormInjectiveFlow, dict]:
    """A trained flow and its data meta from a model folder (OUT/model), a training folder (OUT) or model.pt."""
    if not ckpt.exists():
        raise InputFileError(f"checkpoint not found: {ckpt} (write one with `fif train --out DIR`)")
    if ckpt.is_dir() and (ckpt / "model.pt").is_file() and not (ckpt / "config.json").is_file():
        ckpt = ckpt / "model.pt"
    if ckpt.is_dir():
        from iclr24.paperkit.pretrained import read_model_folder

        model = FIFModel.from_pretrained(ckpt)
        meta = read_model_folder(ckpt)[2].get("meta")
        if not isinstance(meta, dict):
            raise InputError(
                f"{ckpt / 'provenance.json'} holds no data meta ('meta'), which `fif train` writes"
            )
        return model.eval(), meta
    meta = _stored_meta(ckpt)
    try:
        model = _build(meta)
    except (KeyError, TypeError, ValueError) as e:
        raise InputError(
            f"the meta of {ckpt} does not describe a fif model ({type(e).__name__}: {e})"
        ) from None
    load_checkpoint(ckpt, model)
    return model.eval(), meta


# the trained flow that sample and nll read
_CHECKPOINT = arg(
    "--checkpoint",
    type=Path,
    required=True,
    help="the model folder OUT/model, or OUT/model.pt, written by `fif train`",
)


@app.command(
    "sample",
    "Draw samples x = g(z), z ~ N(0, tau^2 I), from a trained model; writes samples.npy (in data units) and "
    "samples.png.",
    _CHECKPOINT,
    arg("--n", type=positive_int, default=1000, help="number of samples"),
    arg("--latent-scale", type=nonneg_float, default=1.0, help="tau: latent temperature"),
)
def _sample(args: argparse.Namespace) -> int:
    model, meta = _load_model(args.checkpoint)
    s = model.sample(
        args.n, latent_scale=args.latent_scale, generator=torch.Generator().manual_seed(args.seed)
    )
    if meta.get("mean") is not None:
        s = s * torch.tensor(meta["std"]) + torch.tensor(meta["mean"])
    import io

    buf = io.BytesIO()
    np.save(buf, s.numpy())
    atomic_write_bytes(Path(args.out) / "samples.npy", buf.getvalue())
    _plot_samples(s, meta, Path(args.out) / "samples.png")
    print(f"wrote {Path(args.out) / 'samples.npy'} ({args.n} x {s.shape[1]}) and samples.png")
    return 0


@app.command(
    "nll",
    "Exact negative log-likelihood (decoder Jacobian, d forward passes) of data under a trained model.",
    _CHECKPOINT,
    arg(
        "--data",
        required=True,
        help="sine | s_curve | swiss_roll | mnist | PATH; files use the training scaling",
    ),
    arg("--n", type=positive_int, default=2000, help="number of points to evaluate"),
    _NPZ_KEY,
    data=True,
)
def _nll(args: argparse.Namespace) -> int:
    model, meta = _load_model(args.checkpoint)
    if args.data in TOY_DATASETS or args.data in TOY_ALIASES or args.data == "mnist":
        x, _ = _load_data(args.data, args.n, args.seed + 1, args.data_dir)
    elif Path(args.data).is_dir():
        x, _ = load_image_folder(args.data, size=meta.get("image_size"), max_images=args.n)
    else:
        x = load_array(args.data, key=args.npz_key)[: args.n]
        if meta.get("mean") is not None:
            x = (x - torch.tensor(meta["mean"])) / torch.tensor(meta["std"])
    if x.shape[1] != model.data_dim:
        raise InputError(f"--data has D={x.shape[1]} columns, the model was trained on D={model.data_dim}")
    nll = model.exact_nll(x)
    res = {
        "n": int(x.shape[0]),
        "mean_nll": float(nll.mean()),
        "std_nll": float(nll.std()) if len(nll) > 1 else 0.0,
    }
    atomic_write_json(Path(args.out) / "nll.json", res)
    print(json.dumps(res))
    return 0


main = app.main
