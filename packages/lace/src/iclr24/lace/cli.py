"""The ``lace`` command: a thin shell over the API (train, sample, eval, reproduce, bench)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.errors import InputError

from .bench import run_benchmarks
from .layout import DEFAULT_CATEGORIES
from .model import LaceConfig
from .reproduce import PAPER

app = App("lace", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(run_benchmarks)


_DATA = arg(
    "--data",
    nargs=2,
    metavar=("NAME", "PATH"),
    default=None,
    help="real layouts: publaynet|rico|rico25|rico13 and the folder (or .pt file) of the official preprocessed "
    "splits (<PATH>/<name>-max25/processed/<split>.pt); without it, the built-in synthetic layouts",
)


def _real(args: argparse.Namespace, split: str, limit: int):
    """(name, categories, (bbox, labels, mask)) of ``--data NAME PATH``, or None without ``--data``."""
    if args.data is None:
        return None
    from .real_data import CATEGORIES
    from .real_data import dataset_name
    from .real_data import load_official_layouts

    name = dataset_name(args.data[0])
    return name, CATEGORIES[name], load_official_layouts(args.data[1], name, split, limit=limit)


@app.command(
    "train",
    "Train a LACE model on the built-in synthetic aligned layouts or, with --data, on real layouts (the official "
    "PubLayNet / Rico train split); writes the model folder OUT/model (model.safetensors, config.json, "
    "provenance.json) and history.json.",
    _DATA,
    arg("--steps", type=positive_int, default=400, help="training steps"),
    arg(
        "--layouts",
        type=positive_int,
        default=2000,
        help="number of training layouts (the first N with --data)",
    ),
    arg("--dim", type=positive_int, default=32, help="transformer width"),
    arg("--heads", type=positive_int, default=2, help="attention heads (must divide --dim)"),
    arg("--layers", type=positive_int, default=2, help="transformer blocks"),
    arg("--ff", type=positive_int, default=None, help="feed-forward width (None: 2 x --dim)"),
    arg(
        "--batch-size",
        type=positive_int,
        default=32,
        help="layouts per Adam step (4x that after augmentation)",
    ),
    field_arg(
        LaceConfig,
        "lr",
        type=positive_float,
        help="Adam learning rate (the official 1e-5 is for batch 256)",
    ),
    arg("--no-constraints", action="store_true", help="train the baseline (alignment and overlap weights 0)"),
    field_arg(
        LaceConfig,
        "align_padding_partners",
        help="the official alignment loss: padding slots count as alignment partners of the real elements "
        "(util/constraint.py layout_alignment masks only the rows); default: real elements only (see the README)",
    ),
    arg(
        "--official-completion",
        action="store_true",
        help="completion conditions as the official rand_fix alone (may keep no element); default: the first "
        "real element is always kept too",
    ),
    field_arg(
        LaceConfig,
        "rec_loss",
        choices=["unclamped", "clamped"],
        help="L_rec on the unclamped x0_hat boxes (the official train.py) or on x0_hat clamped to [-1, 1] (learned "
        "faster at CPU scale: see the README)",
    ),
    arg(
        "--checkpoint-every",
        type=positive_int,
        default=100,
        help="steps between training-state saves (OUT/train_state.pt, for --resume)",
    ),
    log_dir=True,
    resume=arg(
        "--resume", action="store_true", help="continue the interrupted run in --out from OUT/train_state.pt"
    ),
)
def _train(args: argparse.Namespace) -> int:
    from .data import synthetic_aligned_layouts
    from .diffusion import train
    from .layout import encode_layout
    from .real_data import real_config

    size = dict(
        dim=args.dim,
        heads=args.heads,
        layers=args.layers,
        ff=args.ff or 2 * args.dim,
        batch_size=args.batch_size,
        lr=args.lr,
        steps=args.steps,
        rec_loss=args.rec_loss,
        align_padding_partners=args.align_padding_partners,
        complete_keep_first=not args.official_completion,
    )
    real = _real(args, "train", args.layouts)
    if real is None:
        cfg = LaceConfig(**size)
        layouts = synthetic_aligned_layouts(args.layouts, seed=10_000 + args.seed)
    else:
        cfg = real_config(real[0], **size)  # official per-dataset weights: overlap 0 on Rico
        layouts = real[2]
    if args.no_constraints:
        cfg.align_weight = cfg.overlap_weight = 0.0
    tok = encode_layout(*layouts, cfg.num_classes, cfg.max_elements)
    from iclr24.paperkit.distributed import cleanup_distributed
    from iclr24.paperkit.distributed import init_distributed

    out = Path(args.out)
    info = init_distributed()  # under torchrun: DDP, each rank a share of every batch
    cpu0 = time.process_time()
    try:
        model, hist = train(cfg, tok, seed=args.seed, log_dir=args.log_dir, checkpoint=out / "train_state.pt",
                            resume=args.resume, checkpoint_every=args.checkpoint_every)  # fmt: skip
    finally:
        cleanup_distributed()
    if not info.is_main:
        return 0
    # the loss at every step up to 20, then every steps // 20 and the last: what a retrain of the first steps checks
    every = max(1, args.steps // 20)
    losses = {str(h["step"]): h["loss"] for h in hist if h["step"] < 20 or h["step"] % every == 0}
    losses[str(hist[-1]["step"])] = hist[-1]["loss"]
    model.save_pretrained(out / "model", provenance={
        "command": app.command_line(args), "seed": args.seed, "steps": args.steps, "steps_unit": "Adam steps",
        "cpu_seconds": round(time.process_time() - cpu0, 2), "world_size": info.world_size,
        "data": "synthetic aligned layouts" if real is None else real[0], "layouts": int(tok.shape[0]),
        "final_loss": hist[-1]["loss"], "losses": losses,
    })  # fmt: skip
    atomic_write_json(out / "history.json", hist[-50:])
    print(f"trained {args.steps} steps, final loss {hist[-1]['loss']:.4f}; wrote {out / 'model'}")
    return 0


# the model that sample and eval read
_CHECKPOINT = arg(
    "--checkpoint",
    required=True,
    help="the model folder OUT/model written by `lace train` (or an older model.pt), or an official LACE "
    "checkpoint",
)


# an official checkpoint does not store its head count (sample, eval)
_OFFICIAL_HEADS = arg(
    "--heads",
    type=positive_int,
    default=16,
    help="attention heads of an official checkpoint (not stored in it)",
)


@app.command(
    "sample",
    "Sample layouts from a checkpoint and draw them; writes samples.png and samples.json.",
    _CHECKPOINT,
    _OFFICIAL_HEADS,
    arg(
        "--task",
        default="uncond",
        choices=["uncond", "c2sp"],
        help="uncond, or c2sp (categories -> size+position)",
    ),
    arg("--categories", default="title,text,figure", help="comma-separated categories for --task c2sp"),
    arg("--n", type=positive_int, default=6, help="number of layouts"),
    arg("--beautify", action="store_true", help="run the beautify post-processing"),
)
def _sample(args: argparse.Namespace) -> int:
    from .beautify import beautify
    from .diffusion import generate
    from .layout import labels_from_names
    from .official import load_any_checkpoint
    from .render import layout_grid

    model, cfg = load_any_checkpoint(args.checkpoint, heads=args.heads)
    if args.task == "uncond":
        b, lab, m = generate(model, cfg, "uncond", n=args.n, seed=args.seed)
    else:
        names = labels_from_names(args.categories, cfg.categories)
        if len(names) > cfg.max_elements:
            raise InputError(f"at most {cfg.max_elements} categories, got {len(names)}")
        labels = names[None].repeat(args.n, 1)
        bbox = torch.full((args.n, len(names), 4), 0.5)
        mask = torch.ones(args.n, len(names), dtype=torch.bool)
        b, lab, m = generate(model, cfg, "c", layouts=(bbox, labels, mask), seed=args.seed)
    dropped = torch.zeros_like(m)
    if args.beautify:
        from .real_data import CATEGORIES

        rico = cfg.categories in (CATEGORIES["rico25"], CATEGORIES["rico13"])
        # the official post_process: no overlap term on Rico
        b, m2 = beautify(b, m, w_overlap=0.0 if rico else 1.0)
        dropped, m = m & ~m2, m2
    out = Path(args.out)
    from iclr24.paperkit.plots import save_figure

    save_figure(
        layout_grid({args.task: (b, lab, m)}, n=args.n, categories=cfg.categories), out / "samples.png"
    )
    rows = [
        [
            {"category": cfg.categories[int(c)], "box": [round(v, 4) for v in bb]}
            | ({"dropped_by_beautify": True} if d else {})
            for bb, c, k, d in zip(
                b[i].tolist(), lab[i].tolist(), m[i].tolist(), dropped[i].tolist(), strict=True
            )
            if k or d
        ]
        for i in range(b.shape[0])
    ]
    atomic_write_json(out / "samples.json", rows, indent=1)
    print(f"wrote {out / 'samples.png'} and {out / 'samples.json'}")
    n_drop = int(dropped.sum())
    if n_drop:
        total = n_drop + int(m.sum())
        empty = int((~m).all(-1).sum())
        print(
            f"warning: beautify dropped {n_drop} of {total} elements (min(w, h) < 0.01 after its x2.5 / x10/6 "
            f"scaling, as the official post_process), leaving {empty} of {m.shape[0]} layouts empty; the drawing "
            'omits them, samples.json lists them with "dropped_by_beautify": true',
            file=sys.stderr,
        )
    return 0


@app.command(
    "eval",
    "Evaluate a checkpoint on every task: on seeded synthetic test layouts or, with --data, on the official "
    "PubLayNet / Rico test split; with --fidnet also FID; writes metrics.json.",
    _CHECKPOINT,
    _DATA,
    arg(
        "--fidnet",
        default=None,
        help="a FIDNetV3 checkpoint (model_best.pth.tar, or its FIDNetV3/ folder) for FID",
    ),
    _OFFICIAL_HEADS,
    arg("--layouts", type=positive_int, default=128, help="number of test layouts (the first N with --data)"),
    arg("--steps", type=positive_int, default=25, help="DDIM steps (the official evaluation uses 100)"),
    arg(
        "--metrics",
        default="official",
        choices=["official", "package"],
        help="how Alignment and Overlap are scored: 'official' as the official test.py / util/metric.py (padding "
        "slots are alignment partners; conditional tasks scored under the real layout's mask; an empty layout "
        "counts as Alignment 0), the numbers to compare with the paper; 'package': the generated mask, no padding "
        "partners, empty layouts left out of the mean",
    ),
)
def _eval(args: argparse.Namespace) -> int:
    from .data import synthetic_aligned_layouts
    from .diffusion import TASKS
    from .diffusion import generate
    from .metrics import layout_metrics
    from .official import load_any_checkpoint

    real = _real(args, "test", args.layouts)
    cats = DEFAULT_CATEGORIES if real is None else real[1]
    where = "the synthetic test layouts use" if real is None else f"{real[0]} has"
    model, cfg = load_any_checkpoint(args.checkpoint, categories=cats, heads=args.heads)
    if cfg.categories != cats:
        raise InputError(
            f"{where} categories {list(cats)[:6]}{'...' if len(cats) > 6 else ''}, the checkpoint "
            f"{list(cfg.categories)[:6]}{'...' if cfg.num_classes > 6 else ''}: a checkpoint for another category set"
        )
    fidnet = None
    if args.fidnet is not None:
        from .fid import load_fidnet

        fidnet = load_fidnet(
            args.fidnet, num_label=cfg.num_classes, dataset=None if real is None else real[0]
        )
    if real is None:
        test = synthetic_aligned_layouts(args.layouts, seed=20_000 + args.seed, max_elements=cfg.max_elements)
    else:
        test = real[2]
        if cfg.max_elements != test[0].shape[1]:
            raise InputError(
                f"{real[0]} layouts have up to {test[0].shape[1]} elements, the checkpoint {cfg.max_elements}"
            )
    from iclr24.paperkit.progress import progress

    res = {}
    n = test[0].shape[0]
    for task in progress(TASKS, desc="eval tasks"):
        cond = None if task == "uncond" else test
        out = generate(model, cfg, task, n=n, layouts=cond, steps=args.steps, seed=args.seed)
        res[task] = layout_metrics(out, test, cfg.num_classes, task, variant=args.metrics)
        if fidnet is not None:
            from .fid import layout_fid

            res[task]["fid"] = layout_fid(fidnet, out, test)
        print(task, " ".join(f"{k}={v:.4g}" for k, v in res[task].items() if v is not None))
    empty = {t: r["empty_layouts"] for t, r in res.items() if r["empty_layouts"]}
    if empty:
        print(
            f"note: layouts without elements (of {n} per task): "
            + ", ".join(f"{t} {k}" for t, k in empty.items())
            + (
                "; the official metric counts each as Alignment 0"
                if args.metrics == "official"
                else "; left out of the Alignment mean"
            )
        )
    atomic_write_json(
        Path(args.out) / "metrics.json", {"metric_variant": args.metrics, "tasks": res}, indent=1
    )
    return 0


main = app.main

if __name__ == "__main__":  # torchrun --nproc_per_node 2 -m iclr24.lace.cli train ...
    raise SystemExit(main())
