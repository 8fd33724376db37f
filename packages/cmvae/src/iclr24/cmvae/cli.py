"""The ``cmvae`` command: a thin shell over the API (train, cluster, sample, reproduce, bench)."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.errors import InputError

from . import bench
from .experiments import ExperimentConfig
from .reproduce import PAPER
from .train import fit

app = App("cmvae", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # CPU-scale claims
app.add_bench(bench.run_benchmarks)

_DATA = (
    arg("--data", choices=("poly_digits", "poly_mnist", "npz", "polymnist"), default="poly_digits",
        help="built-in poly_digits (sklearn digits), poly_mnist (MNIST from the data folder), your own .npz "
             "(x0, x1, ..., labels) or PolyMNIST folders"),
    arg("--path", type=Path, default=None, help="the .npz file or PolyMNIST root for --data npz / polymnist"),
    arg("--n-train", type=positive_int, default=6000, help="train tuples of poly_digits / poly_mnist"),
    arg("--n-test", type=positive_int, default=1000, help="test tuples of poly_digits / poly_mnist"),
    arg("--modalities", type=positive_int, default=3, help="modalities of poly_digits / poly_mnist"),
)  # fmt: skip


def _load(args: argparse.Namespace):
    from .data import load_multimodal_npz
    from .data import load_polymnist
    from .data import poly_digits
    from .data import poly_mnist

    if args.data in ("npz", "polymnist") and args.path is None:
        raise UsageError(f"--data {args.data} needs --path")
    if args.data == "poly_digits":
        return poly_digits(args.n_train, args.n_test, args.modalities, seed=args.seed)
    if args.data == "poly_mnist":
        return poly_mnist(args.data_dir, args.n_train, args.n_test, args.modalities, seed=args.seed)
    if args.data == "npz":
        return load_multimodal_npz(args.path, seed=args.seed)
    return load_polymnist(args.path)


LOSSES_UNIT = (
    "the mini-batch loss (the negative objective, mean over the batch) after Adam step s: every step up to 20, "
    "then every steps // 20 and the last step"
)


class StepLosses:
    """The step callback of ``cmvae train`` that keeps the mini-batch loss at fixed steps for provenance.json:
    every step up to 20, then every ``total_steps // 20`` and the last, keyed by the step as a string. The steps
    kept do not depend on the run's length up to step 20 (a retrain of the first steps compares them)."""

    def __init__(self, total_steps: int) -> None:
        self.total, self.every = total_steps, max(1, total_steps // 20)
        self.losses: dict[str, float] = {}

    def __call__(self, step: int, metrics: dict) -> None:
        if step <= 20 or step % self.every == 0 or step == self.total:
            self.losses[str(step)] = float(metrics["loss"])


@app.command(
    "train",
    "Train a CMVAE (MLP encoders/decoders) on a multimodal data set; writes the model folder OUT/model "
    "(model.safetensors, config.json, provenance.json) and train.json.",
    *_DATA,
    arg(
        "--model",
        choices=("cmvae", "mmvae"),
        default="cmvae",
        help="cmvae, or mmvae: the MMVAE+ baseline (the same model with one cluster at mu = 0)",
    ),
    field_arg(
        ExperimentConfig, "n_clusters_max", type=positive_int, help="clusters to start from (K_max, >= 2)"
    ),
    field_arg(ExperimentConfig, "latent_dim", type=positive_int, help="shared latent size d"),
    field_arg(
        ExperimentConfig, "modality_latent_dim", type=positive_int, help="modality-specific latent size d_w"
    ),
    field_arg(ExperimentConfig, "hidden", type=positive_int, nargs="+", help="MLP hidden widths"),
    arg("--beta", type=positive_float, default=2.5, help="weight of the regulariser"),
    field_arg(
        ExperimentConfig, "likelihood", choices=("laplace", "normal", "bernoulli"), help="p(x_m|z, w_m)"
    ),
    field_arg(
        ExperimentConfig,
        "likelihood_scale",
        type=positive_float,
        help="scale of the Laplace / normal likelihood",
    ),
    field_arg(ExperimentConfig, "K", "--K", type=positive_int, help="importance samples per modality"),
    field_arg(
        ExperimentConfig,
        "estimator",
        choices=("iwae_looser", "dreg_looser", "dreg_detached"),
        help="objective estimator (dreg_looser: the official cmvae_dreg; dreg_detached: detached posteriors)",
    ),
    arg(
        "--latent",
        choices=("laplace", "normal"),
        default="laplace",
        help="latent densities (official PolyMNIST: laplace; CUBICC: normal)",
    ),  # fmt: skip
    field_arg(
        ExperimentConfig,
        "selection_rule",
        choices=("official", "active", "multivae"),
        help="cluster-selection rule of --select",
    ),  # fmt: skip
    arg(
        "--scale-eps",
        type=positive_float,
        default=1e-6,
        help="epsilon added to every latent scale (softmax * D + eps); the official code's Constants.eta is 1e-20",
    ),
    field_arg(ExperimentConfig, "epochs", type=positive_int, help="training epochs"),
    field_arg(ExperimentConfig, "batch_size", type=positive_int, help="mini-batch size"),
    field_arg(fit, "lr", type=positive_float, help="Adam (amsgrad) learning rate"),
    field_arg(
        fit,
        "prior_lr",
        type=positive_float,
        help="learning rate of the cluster logits and means (default: --lr)",
    ),
    arg(
        "--select",
        action="store_true",
        help="select the number of clusters after training on the first 20%% of "
        "the test tuples (held out; the rest are scored) and keep K*",
    ),  # fmt: skip
    data=True,
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _train(args: argparse.Namespace) -> int:
    import torch

    from .metrics import clustering_scores
    from .model import build_mlp_model

    if args.n_clusters_max < 2:
        raise UsageError(f"--n-clusters-max must be >= 2, got {args.n_clusters_max}")
    if args.scale_eps > 1e-2:
        raise UsageError(f"--scale-eps must be at most 1e-2, got {args.scale_eps}")
    clustered = args.model == "cmvae"
    if args.select and not clustered:
        raise UsageError("--select selects the number of clusters of a CMVAE; --model mmvae has one cluster")
    data = _load(args)
    torch.manual_seed(args.seed)
    extra = {} if args.scale_eps == 1e-6 else {"scale_eps": args.scale_eps}
    model = build_mlp_model(
        data.input_dims, latent_dim=args.latent_dim, modality_latent_dim=args.modality_latent_dim,
        hidden=tuple(args.hidden), n_clusters_max=args.n_clusters_max, beta=args.beta, likelihood=args.likelihood,
        likelihood_scale=args.likelihood_scale, K=args.K, estimator=args.estimator, latent=args.latent,
        clustered=clustered, **extra,
    )  # fmt: skip
    out = Path(args.out)
    n_train = len(data.train_labels)
    total_steps = args.epochs * -(-n_train // args.batch_size)
    step_losses = StepLosses(total_steps)
    cpu0 = time.process_time()
    hist = fit(model, data.tensors("train"), epochs=args.epochs, batch_size=args.batch_size, lr=args.lr,
               prior_lr=args.prior_lr, seed=args.seed, show_progress=not args.quiet, log_dir=args.log_dir,
               checkpoint=out / "train_state.pt", resume=args.resume, callbacks=step_losses)  # fmt: skip
    cpu_fit = time.process_time() - cpu0
    info: dict = {"data": data.name, "model": args.model, "epochs": args.epochs, "final_loss": hist[-1],
                  "loss_per_epoch": hist}  # fmt: skip
    if args.select:
        from .experiments import hold_out_validation

        n_val = max(1, len(data.test_labels) // 5)
        data, val = hold_out_validation(data, n_val)
        sel = model.select_num_clusters(val, apply=True, seed=args.seed, rule=args.selection_rule)
        info["k_star"], info["h"] = sel.k_star, [None if v == float("inf") else v for v in sel.h]
        info["selection"] = {"rule": sel.rule, "validation_tuples": n_val}
    if (data.test_labels >= 0).all() and clustered:
        info["test_scores"] = clustering_scores(
            data.test_labels, model.predict_clusters(data.tensors("test")).clusters
        )
    model.save_pretrained(out / "model", provenance={
        "command": app.command_line(args), "seed": args.seed, "steps": total_steps,
        "steps_unit": "Adam steps", "epochs": args.epochs, "cpu_seconds": round(cpu_fit, 2), "data": data.name,
        "n_train": n_train, "final_loss": hist[-1], "losses": step_losses.losses, "losses_unit": LOSSES_UNIT,
        "loss_per_epoch": hist, "k_star": info.get("k_star"), "test_scores": info.get("test_scores"),
    })  # fmt: skip
    atomic_write_json(out / "train.json", info)
    print(f"final loss {hist[-1]:.3f}" + (f", K* = {info['k_star']}" if "k_star" in info else ""))
    if "test_scores" in info:
        print("test " + ", ".join(f"{k.upper()} {v:.3f}" for k, v in info["test_scores"].items()))
    print(f"wrote {out / 'model'} and {out / 'train.json'}")
    return 0


# the trained model that cluster and sample read
_CHECKPOINT = arg(
    "checkpoint",
    type=Path,
    help="the model folder OUT/model written by `cmvae train` (or an older model.pt)",
)


@app.command(
    "cluster",
    "Cluster a data set with a trained model; optionally select the number of clusters first (h(K) curve).",
    _CHECKPOINT,
    *_DATA,
    arg("--split", choices=("train", "test"), default="test", help="which split to cluster"),
    arg("--select", action="store_true", help="select K* on the train split before clustering"),
    data=True,
)
def _cluster(args: argparse.Namespace) -> int:
    import numpy as np

    from .checkpoint import load_checkpoint
    from .metrics import clustering_scores
    from .plots import plot_selection

    model = load_checkpoint(args.checkpoint)
    data = _load(args)
    if data.input_dims != list(model.spec["input_dims"]):
        raise InputError(
            f"the model expects modalities of sizes {model.spec['input_dims']}, the data has {data.input_dims}"
        )
    out = Path(args.out)
    info: dict = {}
    if args.select:
        from iclr24.paperkit import save_figure

        sel = model.select_num_clusters(data.tensors("train"), apply=True, seed=args.seed)
        info.update(
            k_star=sel.k_star, h=[None if v == float("inf") else v for v in sel.h], removed=sel.removed
        )
        save_figure(plot_selection([sel.h]), out / "cluster_selection.png")
        print(f"K* = {sel.k_star}")
    pred = model.predict_clusters(data.tensors(args.split), seed=args.seed)
    labels = getattr(data, f"{args.split}_labels")
    info["clusters"] = pred.clusters.tolist()
    info["cluster_sizes"] = np.bincount(pred.clusters, minlength=model.n_clusters_max).tolist()
    if (labels >= 0).all():
        info["scores"] = clustering_scores(labels, pred.clusters)
        print(", ".join(f"{k.upper()} {v:.3f}" for k, v in info["scores"].items()))
    atomic_write_json(out / "clusters.json", info)
    print(f"wrote {out / 'clusters.json'}")
    return 0


@app.command(
    "sample",
    "Generate samples of every modality from a trained model: from the prior or from one cluster.",
    _CHECKPOINT,
    arg("--n", type=positive_int, default=8, help="samples (per cluster for the figure)"),
    arg("--cluster", type=int, default=None, help="sample from this cluster only (default: c ~ p(c))"),
    arg(
        "--side",
        type=positive_int,
        default=None,
        help="image side for the figure (default: sqrt of the size)",
    ),
)
def _sample(args: argparse.Namespace) -> int:
    import numpy as np

    from iclr24.paperkit import save_figure
    from iclr24.paperkit.io import atomic_write_bytes

    from .checkpoint import load_checkpoint
    from .plots import plot_samples_per_cluster

    model = load_checkpoint(args.checkpoint)
    outs = model.sample(args.n, cluster=args.cluster, seed=args.seed)
    out = Path(args.out)
    import io

    buf = io.BytesIO()
    np.savez(buf, **{f"x{m}": o.numpy() for m, o in enumerate(outs)})
    atomic_write_bytes(out / "samples.npz", buf.getvalue())
    side = args.side or int(round(model.spec["input_dims"][0] ** 0.5))
    if side * side == model.spec["input_dims"][0]:
        save_figure(
            plot_samples_per_cluster(model, side, n_per=min(args.n, 6), seed=args.seed),
            out / "samples_per_cluster.png",
        )
    print(f"wrote {out / 'samples.npz'}")
    return 0


main = app.main
