"""The ``srigl`` command: a thin shell over the API (train, condense, bench, reproduce)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import int_list
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.errors import InputFileError

from . import bench
from .reproduce import PAPER
from .train import TrainConfig

app = App("srigl", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the claims run on the CPU only
app.add_bench(bench.run_benchmarks)

CKPT_VERSION = 1


def _sparsity(s: str) -> float:
    try:
        v = float(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a sparsity in [0, 1), got {s!r}") from None
    if not 0.0 <= v < 1.0:
        raise argparse.ArgumentTypeError(f"expected a sparsity in [0, 1) (e.g. 0.9), got {s!r}")
    return v


_epochs_list = int_list("epochs", "such as 30,70,90", increasing=True)


@app.command(
    "train",
    "Train a model with SRigL, RigL, a static mask or densely; write the model folder OUT/model "
    "(SparseModel.from_pretrained: weights and masks), OUT/checkpoint.pt, OUT/train.json and OUT/train_state.pt "
    "(what --resume continues from).",
    arg(
        "--data",
        default="digits",
        help="'digits' (built in), 'mnist' (from the data folder: `iclr24 data get mnist`) or an .npz file with "
        "arrays x, y",
    ),
    field_arg(
        TrainConfig,
        "model",
        help="'mlp', 'cnn' (small CNN, image data) or 'timm:<name>' (e.g. timm:resnet18, untrained; on digits "
        "about 10-20 s per epoch on one idle core, so start with --epochs 2)",
    ),
    field_arg(
        TrainConfig,
        "method",
        choices=["srigl", "rigl", "static", "static-cfi", "dense"],
        help="sparse training method (static-cfi: a fixed random constant fan-in mask)",
    ),
    field_arg(TrainConfig, "sparsity", type=_sparsity, help="overall sparsity S in [0, 1)"),
    field_arg(TrainConfig, "gamma_sal", type=nonneg_float, help="SRigL's ablation threshold (0 disables)"),
    arg(
        "--distribution",
        default=None,
        choices=["uniform", "erk"],
        help="layer densities (default: uniform for mlp, erk for timm models)",
    ),
    arg(
        "--epochs",
        type=positive_int,
        default=None,
        help="epochs (default: 60, or 30 with --quick, 2 with --smoke)",
    ),
    field_arg(TrainConfig, "batch_size", type=positive_int, help="training batch size"),
    field_arg(TrainConfig, "lr", type=float, help="SGD learning rate"),
    field_arg(TrainConfig, "delta_t", type=positive_int, help="steps between mask updates"),
    field_arg(TrainConfig, "weight_decay", type=nonneg_float, help="SGD weight decay (official CIFAR: 5e-4)"),
    field_arg(
        TrainConfig,
        "scheduler",
        choices=["cosine", "step"],
        help="lr schedule after warm-up: cosine to 0, or x gamma at each --milestones epoch",
    ),
    field_arg(TrainConfig, "warmup_epochs", type=int, help="linear lr warm-up epochs (official ImageNet: 5)"),
    field_arg(
        TrainConfig,
        "milestones",
        type=_epochs_list,
        help="epochs at which --scheduler step multiplies lr by --gamma, comma-separated",
    ),
    field_arg(
        TrainConfig, "gamma", type=float, help="step-schedule factor (official: 0.2 CIFAR, 0.1 ImageNet)"
    ),
    field_arg(
        TrainConfig,
        "label_smoothing",
        type=nonneg_float,
        help="cross-entropy label smoothing (ImageNet: 0.1)",
    ),
    field_arg(TrainConfig, "augment", help="images: random crop after 4-px padding + horizontal flip"),
    field_arg(
        TrainConfig,
        "keep_first_layer_dense",
        help="keep the first prunable layer dense (the official config's keep_first_layer_dense)",
    ),
    arg(
        "--data-dir",
        type=Path,
        default=None,
        help="folder of the real datasets for --data mnist (default: $ICLR24_DATA, else ~/.cache/iclr24/data)",
    ),
    modes=True,
    device=True,
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _train(args: argparse.Namespace) -> int:
    from .data import load_data
    from .train import train

    image = args.model.startswith("timm:") or args.model == "cnn"
    data = load_data(args.data, seed=0, flatten=not image, data_dir=args.data_dir)
    epochs = args.epochs or {"smoke": 2, "quick": 30, "full": 60}[args.mode]
    cfg = config_from_args(  # the field_arg flags, seed and device: the CLI's
        TrainConfig,
        args,
        sparsity=0.0 if args.method == "dense" else args.sparsity,
        distribution=args.distribution or ("erk" if image else "uniform"),
        epochs=epochs,
    )
    t0, cpu0 = time.perf_counter(), time.process_time()
    out = args.out
    state = out / "train_state.pt"
    if args.resume and not state.is_file():
        raise InputFileError(
            f"nothing to resume: {state} does not exist (train writes it after every epoch; start without --resume)",
            state,
        )
    r = train(
        cfg, data, show_progress=not args.quiet, log_dir=args.log_dir, checkpoint=state, resume=args.resume
    )
    ckpt = {
        "version": CKPT_VERSION,
        "config": r.config,
        "data": args.data,
        "input_shape": list(data.input_shape),
        "n_classes": data.n_classes,
        "model": r.model.state_dict(),
        "sparsifier": r.sparsifier.state_dict(),
        "accuracy": r.accuracy,
    }
    path = atomic_torch_save(ckpt, out / "checkpoint.pt")
    folder = r.save_pretrained(
        out / "model",
        provenance={
            "command": app.command_line(args),
            "data": args.data,
            "cpu_seconds": round(time.process_time() - cpu0, 2),
            "resumed_from_epoch": r.resumed_from_epoch,
        },
    )
    summ = {
        "accuracy": r.accuracy,
        "method": args.method,
        "sparsity": cfg.sparsity,
        "density": r.sparsifier.density(),
        "ablated_hidden_neurons": r.n_ablated,
        "invariants_ok": r.invariants_ok,
        "itop_rate": r.sparsifier.itop_rate(),
        "active_neurons": r.sparsifier.active_neurons(),
        "device": args.device,
        "steps": r.steps,
        "seconds": time.perf_counter() - t0,
        "layers": r.sparsifier.summary(),
        "updates": r.log,
    }
    atomic_write_json(out / "train.json", summ)
    print(
        f"{args.method} S={cfg.sparsity}: test accuracy {100 * r.accuracy:.2f}%, density {summ['density']:.4f}, "
        f"ITOP rate {summ['itop_rate']:.3f}, ablated hidden neurons {r.n_ablated}, {r.steps} steps in "
        f"{summ['seconds']:.1f} s"
    )
    print(f"wrote {folder} (SparseModel.from_pretrained) and {path}")
    return 0


@app.command(
    "build-kernel",
    "Build the optional fused C++ kernel of the condensed layers now, in the foreground (1-2 minutes, once per "
    "torch installation; needs a C++ compiler and ninja). condense(variant='auto') uses it from then on; without "
    "it the numba kernels run.",
    arg("--verbose", action="store_true", help="show the compiler's output"),
    out=False,
    seed=False,
)
def _build_kernel(args: argparse.Namespace) -> int:
    import threading

    from iclr24.paperkit import progress

    from .kernels import build_directory
    from .kernels import build_kernel
    from .kernels import kernel_status

    status = kernel_status()
    if status == "built":
        print(f"the C++ kernel is already built ({build_directory()}); condense(variant='auto') uses it")
        return 0
    if status != "not built yet" and not status.startswith("failed"):
        raise UsageError(f"the C++ kernel cannot be built here: {status}")
    print(f"building the fused C++ kernel in {build_directory()} (1-2 minutes, once) ...", flush=True)
    result: dict = {}

    def run() -> None:
        try:
            result["dir"] = build_kernel(verbose=args.verbose)
        except RuntimeError as e:
            result["error"] = str(e)

    t0 = time.perf_counter()
    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    bar = progress(total=None, desc="compiling", unit="s", disable=args.quiet or args.verbose or None)
    while worker.is_alive():
        worker.join(1.0)
        bar.update(1)
    bar.close()
    if "error" in result:
        raise UsageError(result["error"])
    print(f"built in {time.perf_counter() - t0:.0f} s: {result['dir']}; condense(variant='auto') now uses it")
    return 0


@app.command(
    "condense",
    "Condense a checkpoint from `srigl train` for inference; check it against the masked model.",
    arg(
        "checkpoint",
        type=Path,
        help="the model folder OUT/model (or OUT/checkpoint.pt) written by `srigl train`",
    ),
    arg(
        "--variant",
        default="auto",
        choices=["auto", "gather", "gather_kmajor", "embedding_bag", "fused", "dense"],
        help="condensed layer implementation (auto: per layer by the measured crossovers; fused: the C++ kernel; "
        "dense: the masked dense product)",
    ),
)
def _condense(args: argparse.Namespace) -> int:
    from .convert import condense
    from .convert import plan_table
    from .data import load_data
    from .model import build_model
    from .train import evaluate

    p = args.checkpoint
    if not p.exists():
        raise InputFileError(
            f"checkpoint {p} does not exist; create one with `srigl train --out DIR` (DIR/model, or DIR/checkpoint.pt)"
        )
    if p.is_dir():
        import json

        from iclr24.paperkit.pretrained import PROVENANCE_FILE

        from .model import SparseModel

        sm = SparseModel.from_pretrained(p)
        prov = json.loads((p / PROVENANCE_FILE).read_text(encoding="utf-8"))
        spec, masks, model = sm.spec, sm.mask_dict(), sm.net
        data_name = prov.get("data")
        if not isinstance(data_name, str):
            raise UsageError(f"{p / PROVENANCE_FILE} does not record the data it was trained on ('data')")
    else:
        try:
            ckpt = torch.load(p, map_location="cpu", weights_only=True)
        except Exception as e:  # noqa: BLE001 - unreadable file: a user error
            raise UsageError(f"cannot read {p} as a torch checkpoint ({type(e).__name__})") from None
        if not isinstance(ckpt, dict) or ckpt.get("version") != CKPT_VERSION or "sparsifier" not in ckpt:
            raise UsageError(f"{p} is not a checkpoint written by `srigl train`")
        cfg = ckpt["config"]
        spec, data_name = cfg["model"], ckpt["data"]
        model = build_model(spec, ckpt["input_shape"], ckpt["n_classes"], tuple(cfg["hidden"]))
        model.load_state_dict(ckpt["model"])
        masks = {n: rec["mask"] for n, rec in ckpt["sparsifier"]["layers"].items()}
    small = condense(model, masks, variant=args.variant)
    image = spec.startswith("timm:") or spec == "cnn"
    data = load_data(data_name, seed=0, flatten=not image)
    model.eval()
    with torch.no_grad():
        ref = model(data.x_test)
        diff = float((small(data.x_test) - ref).abs().max())
        rel = diff / max(float(ref.abs().max()), 1e-30)
    n_dense = sum(p.numel() for p in model.parameters())
    n_small = sum(p.numel() for p in small.parameters())
    out = args.out
    path = atomic_torch_save(small, out / "condensed.pt")
    info = {
        "max_abs_diff_vs_masked": diff,
        "max_rel_diff_vs_masked": rel,
        "accuracy_masked": evaluate(model, data.x_test, data.y_test),
        "accuracy_condensed": evaluate(small, data.x_test, data.y_test),
        "params_dense": n_dense,
        "params_condensed": n_small,
        "plan": small.condense_plan,
        "modules": str(small),
    }
    atomic_write_json(out / "condense.json", info)
    print(plan_table(small.condense_plan), end="")
    print(
        f"max |condensed - masked dense| = {diff:.2e} ({rel:.1e} of max |output|); accuracy {100 * info['accuracy_condensed']:.2f}% "
        f"(masked {100 * info['accuracy_masked']:.2f}%); parameters {n_small} (dense {n_dense})"
    )
    print(f"wrote {path}")
    return 0


main = app.main

__all__ = ["app", "main"]
