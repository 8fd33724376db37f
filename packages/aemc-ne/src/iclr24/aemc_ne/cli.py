"""The ``aemc-ne`` command: a thin shell over the API (train, predict, reproduce, bench)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import int_list
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from . import bench
from .checkpoint import load_model
from .completion import AEMC
from .completion import AEMCNE
from .completion import AutoRec
from .completion import MatrixFactorization
from .completion import relative_rmse
from .completion import rmse
from .config import FitConfig
from .data import RESPONSES
from .data import Ratings
from .data import load_monti
from .data import load_movielens
from .data import load_movielens_split
from .data import make_synthetic
from .data import movielens_100k_u1
from .reproduce import PAPER

app = App("aemc-ne", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(bench.run_benchmarks)

MODELS = ("aemcne", "aemc", "autorec", "mf")


_widths = int_list("layer widths", "like 500 or 30,30")


def _clip(text: str) -> tuple[float, float] | None:
    if text.lower() == "none":
        return None
    try:
        lo, hi = (float(t) for t in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected LOW,HIGH such as 1,5 (or none), got {text!r}") from None
    return lo, hi


def load_data(spec: str, data_dir: Path | None, seed: int) -> tuple[Ratings, Ratings | None, str]:
    """``synthetic[:RESPONSE]``, ``movielens-100k`` (the data folder), ``movielens:PATH`` (a ratings file, or a
    folder with ``u1.base``/``u1.test``), ``monti:PATH`` (Douban/Flixster ``.mat``). Returns (train, test, what)."""
    kind, _, rest = spec.partition(":")
    if kind == "synthetic":
        response = rest or "sigmoid5"
        if response not in RESPONSES:
            raise UsageError(f"--data synthetic:RESPONSE needs one of {sorted(RESPONSES)}, got {response!r}")
        d = make_synthetic(response=response, seed=seed)
        return d.train, d.test, f"synthetic {response} {d.x.shape}"
    if kind == "movielens-100k" and not rest:
        from iclr24.paperkit.data.folder import require_data

        train, test = movielens_100k_u1(require_data("movielens-100k", data_dir))
        return train, test, "MovieLens-100K u1 split"
    if kind == "movielens" and rest:
        p = Path(rest)
        if p.is_dir():
            if (p / "u1.base").is_file():
                train, test = load_movielens_split(p / "u1.base", p / "u1.test")
                return train, test, f"{p} u1.base/u1.test"
            files = [p / n for n in ("u.data", "ratings.dat", "ml-100k.inter") if (p / n).is_file()]
            if not files:
                raise InputFileError(
                    f"{p} holds neither u1.base/u1.test, u.data, ratings.dat nor ml-100k.inter"
                )
            p = files[0]
        ratings = load_movielens(p)
        if len(ratings) == 100_000:
            train, test = movielens_100k_u1(p)
            return train, test, f"{p} (u1 split: first 20,000 rows as test)"
        train, test = ratings.split(0.1, seed=seed)  # the ML-1M protocol: random 90/10
        return train, test, f"{p} (random 90/10 split, seed {seed})"
    if kind == "monti" and rest:
        train, test = load_monti(rest)
        return train, test, f"{rest} (Monti et al. split)"
    raise UsageError(
        f"--data must be synthetic[:RESPONSE], movielens-100k, movielens:PATH or monti:PATH; got {spec!r}"
    )


@app.command(
    "train",
    "Train AEMC-NE (or a baseline) on a ratings matrix; writes the model folder OUT/model (model.safetensors, "
    "config.json, provenance.json) and metrics.json.",
    arg(
        "--data",
        default="synthetic",
        help="synthetic[:RESPONSE] | movielens-100k | movielens:PATH | monti:PATH",
    ),
    arg(
        "--model", choices=MODELS, default="aemcne", help="aemcne, aemc (no g), autorec (1 sigmoid layer), mf"
    ),
    field_arg(AEMCNE, "orientation", choices=("item", "user"), help="which side are the samples"),
    field_arg(AEMCNE, "main_hidden", type=_widths, help="hidden widths of the main autoencoder, e.g. 500"),
    field_arg(AEMCNE, "elem_hidden", type=_widths, help="hidden widths of the element-wise net g"),
    field_arg(AEMCNE, "activation", choices=("tanh", "sigmoid", "relu", "elu"), help="main-net activation"),
    arg("--per-output", action="store_true", help="one g per output row instead of one shared g"),
    field_arg(AEMCNE, "skip", help="g(y) = E(y) + skip * y"),
    field_arg(MatrixFactorization, "rank", type=positive_int, help="rank of the mf baseline"),
    field_arg(FitConfig, "epochs", type=positive_int, help="training epochs"),
    field_arg(FitConfig, "lr", type=positive_float, help="AdamW learning rate"),
    field_arg(FitConfig, "weight_decay", type=nonneg_float, help="AdamW decoupled weight decay"),
    field_arg(FitConfig, "l2", type=nonneg_float, help="AutoRec-style L2 penalty lambda on the weights"),
    field_arg(
        FitConfig, "batch_size", type=positive_int, help="samples (columns) per step; unset = full batch"
    ),
    field_arg(FitConfig, "val_fraction", help="training ratings held out to select the epoch"),
    field_arg(FitConfig, "eval_every", type=positive_int, help="epochs between validation checks"),
    field_arg(FitConfig, "standardize", help="train on standardised values (synthetic data)"),
    field_arg(FitConfig, "clip", type=_clip, help="clamp predictions to LOW,HIGH (e.g. 1,5), or none"),
    data=True,
    device=True,
    log_dir=True,
    resume=resume_arg(written="at every validation check"),
)
def _train(args: argparse.Namespace) -> int:
    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import init_distributed

    train, test, what = load_data(args.data, args.data_dir, args.seed)
    if args.model == "mf":
        model = MatrixFactorization(rank=args.rank)
    elif args.model == "autorec":
        model = AutoRec(args.orientation, args.main_hidden[0])
    elif args.model == "aemc":
        model = AEMC(main_hidden=args.main_hidden, activation=args.activation, orientation=args.orientation)
    else:
        model = AEMCNE(main_hidden=args.main_hidden, activation=args.activation, elem_hidden=args.elem_hidden,
                       skip=args.skip, shared=not args.per_output, orientation=args.orientation)  # fmt: skip
    fit = dict(epochs=args.epochs, lr=args.lr, l2=args.l2, val_fraction=args.val_fraction,
               eval_every=args.eval_every, clip=args.clip, seed=args.seed, quiet=args.quiet)  # fmt: skip
    if args.model != "mf":
        fit.update(weight_decay=args.weight_decay, batch_size=args.batch_size, standardize=args.standardize,
                   device=args.device, checkpoint=Path(args.out) / "train_state.pt", resume=args.resume)  # fmt: skip
    elif args.resume:
        raise UsageError("--resume is for the autoencoders (aemcne, aemc, autorec); mf trains in seconds")
    info = init_distributed(
        device=args.device
    )  # under torchrun: each rank trains on its share of the samples
    try:
        if info.world_size > 1 and args.model == "mf":
            raise UsageError("torchrun training is for the autoencoders (aemcne, aemc, autorec), not mf")
        cpu0 = time.process_time()
        model.fit(train, log_dir=args.log_dir if info.is_main else None, **fit)
        if info.is_main:
            _write_train(args, model, train, test, what, time.process_time() - cpu0)
    finally:
        cleanup_distributed()
    return 0


def _write_train(
    args: argparse.Namespace, model, train: Ratings, test: Ratings | None, what: str, cpu_seconds: float
) -> None:
    from dataclasses import asdict

    from iclr24.paperkit.io import atomic_write_json

    out = Path(args.out)
    metrics = {"data": what, "model": args.model, "n_train": len(train), "best_epoch": model.best_epoch_,
               "val_rmse": model.best_val_rmse_, "fit_seconds": model.fit_seconds_}  # fmt: skip
    if test is not None and len(test):
        pred = model.predict(test.users, test.items)
        metrics.update(test_rmse=rmse(pred, test.values), test_relative_rmse=relative_rmse(pred, test.values))
    if args.model != "mf":
        fit_config = asdict(model.cfg_)
        model.save_pretrained(out / "model", provenance={
            "command": app.command_line(args), "seed": args.seed, "steps": model.history[-1]["epoch"],
            "steps_unit": "epochs", "cpu_seconds": round(cpu_seconds, 2),
            "resumed_after_epoch": model.resumed_from_, "data": what, "fit_config": fit_config,
            "best_epoch": model.best_epoch_, "val_rmse": model.best_val_rmse_, "test_rmse": metrics.get("test_rmse"),
            "losses": [{"epoch": h["epoch"], "train_loss": h["train_loss"], "val_rmse": h["val_rmse"]}
                       for h in model.history],
        })  # fmt: skip
    atomic_write_json(out / "metrics.json", metrics)
    print(" ".join(f"{k}={v:.4f}" if isinstance(v, float) else f"{k}={v}" for k, v in metrics.items()))
    print(f"wrote {out}")


@app.command(
    "predict",
    "Predict ratings for (user, item) index pairs with a model written by `aemc-ne train`.",
    arg(
        "--model",
        type=Path,
        required=True,
        help="the model folder OUT/model written by aemc-ne train (or an older model.pt checkpoint)",
    ),
    arg(
        "--pairs", type=Path, required=True, help="text file of 0-based 'user item' index pairs, one per line"
    ),
    seed=False,
)
def _predict(args: argparse.Namespace) -> int:
    from iclr24.paperkit.io import atomic_write_text

    model = load_model(args.model)
    if not args.pairs.is_file():
        raise InputFileError(f"pairs file not found: {args.pairs}")
    try:
        pairs = np.loadtxt(args.pairs, dtype=np.int64, ndmin=2, delimiter=None)
    except ValueError as e:
        raise InputError(f"{args.pairs}: expected two integer columns 'user item' per line ({e})") from None
    if pairs.shape[1] != 2:
        raise InputError(f"{args.pairs}: expected two columns 'user item', got {pairs.shape[1]}")
    pred = model.predict(pairs[:, 0], pairs[:, 1])
    lines = ["user,item,prediction"] + [f"{u},{i},{p:.6f}" for (u, i), p in zip(pairs, pred)]
    atomic_write_text(Path(args.out) / "predictions.csv", "\n".join(lines) + "\n")
    print(f"wrote {len(pred)} predictions to {Path(args.out) / 'predictions.csv'}")
    return 0


main = app.main

if __name__ == "__main__":  # torchrun --nproc_per_node 2 -m iclr24.aemc_ne.cli train ...
    raise SystemExit(main())
