"""The ``sufo`` command: a thin shell over the API. Each analysis reads a model folder (default: the offline
all-MiniLM-L6-v2) and a labelled CSV/JSONL (default: the synthetic reports) and writes JSON + a plot into --out."""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.errors import InputError

from . import bench
from .features import extract_features
from .outliers import outliers_pc12
from .reproduce import PAPER
from .reproduce import ReproConfig
from .sparsity import explained_variance

app = App("sufo", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # every claim runs on the CPU
app.add_bench(bench.run_benchmarks)

_MODEL = arg(
    "--model", type=Path, default=None, help="Hugging Face encoder folder (default: all-MiniLM-L6-v2)"
)
_REF = arg(
    "--reference", type=Path, default=None, help="second model folder to compare with (default: --model)"
)
_DATA = arg(
    "--data", type=Path, default=None, help="CSV/JSONL with text,label (default: 400 synthetic reports)"
)
_N = arg("--max-examples", type=positive_int, default=400, help="use at most this many examples")
_LEN = field_arg(ReproConfig, "max_length", type=positive_int, help="tokens per text")
_POOL = field_arg(
    extract_features, "pooling", choices=["cls", "mean"], help="[CLS] (the paper) or masked mean"
)
_TASK = arg(
    "--task",
    choices=["synthetic", "icd10cm"],
    default="synthetic",
    help="built-in task when --data is not given: synthetic reports or ICD-10-CM descriptions -> chapter",
)


def _dataset(args: argparse.Namespace):
    from .data import icd10cm_chapters
    from .data import load_labelled
    from .data import synthetic_reports

    if args.data is not None:
        ds = load_labelled(args.data)
    elif getattr(args, "task", "synthetic") == "icd10cm":
        ds = icd10cm_chapters(args.max_examples, seed=args.seed)
    else:
        ds = synthetic_reports(args.max_examples, seed=args.seed)
    if len(ds) > args.max_examples:
        ds = ds.subset(np.random.default_rng(args.seed).permutation(len(ds))[: args.max_examples])
    return ds


def _features(path, ds, args, random_init: bool = False):
    from .features import load_encoder

    model, tok = load_encoder(path, num_labels=max(ds.n_classes, 2), random_init=random_init, seed=args.seed)
    return extract_features(
        model, tok, ds.texts, pooling=args.pooling, max_length=args.max_length, show_progress=not args.quiet
    )


@app.command(
    "probe",
    "S: logistic probes on every layer's standardised features (train/test split).",
    _MODEL,
    _DATA,
    _N,
    _LEN,
    _POOL,
)
def _probe(args: argparse.Namespace) -> int:
    from .data import split_indices
    from .probing import layerwise_probe

    ds = _dataset(args)
    counts = np.bincount(ds.labels, minlength=ds.n_classes)
    if counts.min() < 2:
        k = int(np.argmin(counts))
        raise UsageError(
            f"the probe needs at least 2 texts of every class (one to train on, one to test), class "
            f"{ds.label_names[k]!r} has {int(counts[k])} of {len(ds)} texts"
        )
    itr, ite = split_indices(ds, 0.3, seed=args.seed)
    unseen = sorted(set(ds.labels[ite].tolist()) - set(ds.labels[itr].tolist()))
    if unseen:
        raise UsageError(
            f"with {len(ds)} texts the 70/30 split leaves class {ds.label_names[unseen[0]]!r} without a training "
            "text; give more texts per class"
        )
    f = _features(args.model, ds, args)
    f1 = layerwise_probe(f[:, itr], ds.labels[itr], f[:, ite], ds.labels[ite])
    atomic_write_json(args.out / "probe.json", {"macro_f1_per_layer": f1.tolist()})
    for i, v in enumerate(f1):
        print(f"layer {i}: probe macro-F1 {v:.3f}")
    return 0


@app.command(
    "rsa",
    "U: RSA (Spearman of Euclidean RDMs) and linear CKA per layer between two models.",
    _MODEL,
    _REF,
    _DATA,
    _N,
    _LEN,
    _POOL,
    arg("--random-reference", action="store_true", help="compare with a random-init copy of --model"),
)
def _rsa(args: argparse.Namespace) -> int:
    from .similarity import constant_features
    from .similarity import layerwise_cka
    from .similarity import layerwise_rsa

    ds = _dataset(args)
    fa = _features(args.model, ds, args)
    fb = _features(args.reference or args.model, ds, args, random_init=args.random_reference)
    r, cka = layerwise_rsa(fa, fb), layerwise_cka(fa, fb)
    # a layer whose features are one point for every text (layer 0 at [CLS]: the [CLS] embedding) has neither
    # dissimilarities nor a variance: RSA and CKA are undefined there, written as null with the reason
    undefined = {}
    for i in range(len(fa)):
        if constant_features(fa[i]) or constant_features(fb[i]):
            undefined[str(i)] = "constant features: every text has the same state (e.g. the [CLS] embedding)"
        elif np.isnan(r[i]) or np.isnan(cka[i]):
            undefined[str(i)] = "constant dissimilarities: every pair of texts is equally far apart"
    atomic_write_json(
        args.out / "rsa.json",
        {
            "rsa": [None if np.isnan(v) else float(v) for v in r],
            "cka": [None if np.isnan(v) else float(v) for v in cka],
            "undefined_layers": undefined,
        },
    )
    for i, (a, b) in enumerate(zip(r, cka)):
        if str(i) in undefined:
            print(f"layer {i}: RSA n/a  CKA n/a  ({undefined[str(i)]})")
        else:
            print(f"layer {i}: RSA {a:.3f}  CKA {b:.3f}")
    return 0


@app.command(
    "sparsity",
    "F: cumulative explained variance of the top PCs of the last layer.",
    _MODEL,
    _DATA,
    _N,
    _LEN,
    _POOL,
    field_arg(explained_variance, "k", "--k", type=positive_int, help="PCs to report"),
)
def _sparsity(args: argparse.Namespace) -> int:
    from .sparsity import label_separation

    ds = _dataset(args)
    f = _features(args.model, ds, args)[-1]
    ev = explained_variance(f, args.k)
    sep = label_separation(f, ds.labels)
    atomic_write_json(args.out / "sparsity.json", {"cumulative_evr": ev.tolist(), **sep})
    print("cumulative explained variance:", " ".join(f"{v:.3f}" for v in ev))
    print(f"silhouette {sep['silhouette']:.3f}, 5-NN accuracy in PC1-2 {sep['knn_accuracy']:.3f}")
    return 0


@app.command(
    "outliers",
    "O: outliers of the last-layer features by the PC1 x PC2 cell rule, most isolated first.",
    _MODEL,
    _DATA,
    _N,
    _LEN,
    _POOL,
    field_arg(outliers_pc12, "rule", choices=["gap", "kmeans1d"], help="1-D clustering rule"),
    field_arg(outliers_pc12, "gap_factor", help="gap rule: split at gaps > factor x median gap"),
    arg("--show", type=positive_int, default=10, help="outliers to print"),
)
def _outliers(args: argparse.Namespace) -> int:
    ds = _dataset(args)
    f = _features(args.model, ds, args)[-1]
    rep = outliers_pc12(f, ds.n_classes, rule=args.rule, gap_factor=args.gap_factor)
    rows = [
        {"index": int(i), "label": ds.label_names[ds.labels[i]], "text": ds.texts[i]} for i in rep.outliers
    ]
    atomic_write_json(args.out / "outliers.json", {"outliers": rows, "kept_cells": rep.kept_cells})
    print(f"{len(rows)} outliers of {len(ds)} examples")
    for r in rows[: args.show]:
        print(f"  #{r['index']} [{r['label']}] {r['text'][:100]}")
    return 0


_EPOCHS = field_arg(
    ReproConfig, "epochs", type=positive_int, help="fine-tuning epochs (official: 25 on a 110M BERT)"
)
_LR = field_arg(
    ReproConfig,
    "lr",
    type=positive_float,
    help="peak learning rate (MiniLM, calibrated on seeds 100-102; official: 7.6e-6 on a 110M BERT)",
)
_BS = field_arg(ReproConfig, "batch_size", type=positive_int, help="fine-tuning batch size (official: 8)")


def _split3(args: argparse.Namespace):
    """train / validation (best epoch) / test (every measurement), stratified and seeded."""
    from .data import split

    ds = _dataset(args)
    if len(ds) < 10:
        raise InputError(f"need at least 10 labelled texts to split train/validation/test, got {len(ds)}")
    train, test = split(ds, 0.3, seed=args.seed)
    return ds, train, test


def _ft_config(args: argparse.Namespace):
    from .finetune import FineTuneConfig

    return config_from_args(FineTuneConfig, args)  # lr, batch size, epochs, max length and seed: the CLI's


@app.command(
    "dynamics",
    "F: fine-tune and track the last layer's PC1-2 projection of the test texts at every epoch.",
    _MODEL,
    _DATA,
    _TASK,
    _N,
    _LEN,
    _POOL,
    _EPOCHS,
    _LR,
    _BS,
    arg(
        "--save-model",
        action="store_true",
        help="also write the fine-tuned model (best epoch) to OUT/model: a Hugging Face folder (safetensors, "
        "tokenizer, provenance.json) that --model and load_encoder read",
    ),
    log_dir=True,
)
def _dynamics(args: argparse.Namespace) -> int:
    import time

    from iclr24.paperkit.plots import save_figure

    from .data import split
    from .dynamics import feature_dynamics
    from .dynamics import plot_dynamics
    from .features import load_encoder

    ds, train, test = _split3(args)
    fit, val = split(train, 0.2, seed=args.seed)
    model, tok = load_encoder(args.model, num_labels=max(ds.n_classes, 2), seed=args.seed)
    cpu0 = time.process_time()
    dyn = feature_dynamics(
        model, tok, fit, val, test, _ft_config(args), pooling=args.pooling, show_progress=not args.quiet,
        log_dir=args.log_dir,
    )  # fmt: skip
    atomic_write_json(args.out / "dynamics.json", dyn.to_dict())
    if args.save_model:
        from .features import save_encoder

        ft = dyn.finetune
        save_encoder(model, tok, args.out / "model", provenance={
            "command": app.command_line(args), "seed": args.seed,
            "steps": int(np.ceil(len(fit) / args.batch_size)) * args.epochs, "epochs": args.epochs,
            "cpu_seconds": round(time.process_time() - cpu0, 2), "base_model": str(args.model or "all-MiniLM-L6-v2"),
            "data": str(args.data) if args.data else args.task, "label_names": list(ds.label_names),
            "best_epoch": ft.best_epoch, f"best_val_{ft.best_metric}": ft.best_val_score, "history": ft.history,
        })  # fmt: skip
        print(f"wrote the fine-tuned model (epoch {ft.best_epoch}) to {args.out / 'model'}")
    save_figure(plot_dynamics(dyn), args.out / "dynamics.png")
    for e, s, k, v in zip(dyn.epochs, dyn.silhouette, dyn.knn_accuracy, dyn.evr_top2):
        print(f"epoch {e}: silhouette {s:.3f}  5-NN acc {k:.3f}  top-2 EVR {v:.3f}")
    return 0


@app.command(
    "report",
    "All four analyses (S, U, F, O) of one model on one task in report.md with every plot.",
    _MODEL,
    _DATA,
    _TASK,
    _N,
    _LEN,
    _EPOCHS,
    _LR,
    _BS,
)
def _report(args: argparse.Namespace) -> int:
    from .report import write_report
    from .reproduce import _task
    from .reproduce import analyse

    ds, train, test = _split3(args)
    c = config_from_args(ReproConfig, args)  # epochs, lr, batch size and max length: the CLI's
    res = analyse(train, test, c, args.seed, progress=not args.quiet, model_path=args.model)
    model = str(args.model) if args.model is not None else "all-MiniLM-L6-v2"
    builtin = {"synthetic": "synthetic pathology reports", "icd10cm": "ICD-10-CM descriptions -> chapter"}
    task = _task(train, test, args.data.name if args.data else builtin[args.task])
    path = write_report(res, args.out, args.data.stem if args.data else builtin[args.task], model, task)
    print(f"wrote {path}")
    return 0


main = app.main
