"""The ``lace`` command: a thin shell over the API (train, sample, eval, reproduce, bench)."""

from __future__ import annotations

import argparse
from pathlib import Path

import torch

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App, arg, positive_int

from .bench import run_benchmarks
from .layout import DEFAULT_CATEGORIES
from .reproduce import PAPER

app = App("lace", PAPER.title)
app.add_reproduce(lambda: PAPER)
app.add_bench(run_benchmarks)


@app.command(
    "train",
    "Train a LACE model on the built-in synthetic aligned layouts; writes model.pt and history.json.",
    arg("--steps", type=positive_int, default=400, help="training steps"),
    arg("--layouts", type=positive_int, default=2000, help="number of synthetic training layouts"),
    arg("--dim", type=positive_int, default=32, help="transformer width"),
    arg("--no-constraints", action="store_true", help="train the baseline (alignment and overlap weights 0)"),
)
def _train(args: argparse.Namespace) -> int:
    from .data import synthetic_aligned_layouts
    from .diffusion import LaceConfig, save_checkpoint, train
    from .layout import encode_layout

    w = 0.0 if args.no_constraints else 1.0
    cfg = LaceConfig(
        dim=args.dim,
        heads=2,
        layers=2,
        ff=2 * args.dim,
        batch_size=32,
        steps=args.steps,
        align_weight=w,
        overlap_weight=w,
    )
    tok = encode_layout(
        *synthetic_aligned_layouts(args.layouts, seed=10_000 + args.seed), 4, cfg.max_elements
    )
    from iclr24.paperkit.distributed import cleanup_distributed, init_distributed

    info = init_distributed()  # under torchrun: DDP, each rank a share of every batch
    try:
        model, hist = train(cfg, tok, seed=args.seed)
    finally:
        cleanup_distributed()
    if not info.is_main:
        return 0
    out = Path(args.out)
    save_checkpoint(model, cfg, out / "model.pt")
    atomic_write_json(out / "history.json", hist[-50:])
    print(f"trained {args.steps} steps, final loss {hist[-1]['loss']:.4f}; wrote {out / 'model.pt'}")
    return 0


@app.command(
    "sample",
    "Sample layouts from a checkpoint and draw them; writes samples.png and samples.json.",
    arg("--checkpoint", required=True, help="a model.pt written by `lace train`"),
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
    from .diffusion import generate, load_checkpoint
    from .layout import labels_from_names
    from .render import layout_grid

    model, cfg = load_checkpoint(args.checkpoint)
    if args.task == "uncond":
        b, lab, m = generate(model, cfg, "uncond", n=args.n, seed=args.seed)
    else:
        names = labels_from_names(args.categories, cfg.categories)
        if len(names) > cfg.max_elements:
            raise ValueError(f"at most {cfg.max_elements} categories, got {len(names)}")
        labels = names[None].repeat(args.n, 1)
        bbox = torch.full((args.n, len(names), 4), 0.5)
        mask = torch.ones(args.n, len(names), dtype=torch.bool)
        b, lab, m = generate(model, cfg, "c", layouts=(bbox, labels, mask), seed=args.seed)
    if args.beautify:
        b, m = beautify(b, m)
    out = Path(args.out)
    from iclr24.paperkit.plots import save_figure

    save_figure(
        layout_grid({args.task: (b, lab, m)}, n=args.n, categories=cfg.categories), out / "samples.png"
    )
    rows = [
        [
            {"category": cfg.categories[int(c)], "box": [round(v, 4) for v in bb]}
            for bb, c, k in zip(b[i].tolist(), lab[i].tolist(), m[i].tolist(), strict=True)
            if k
        ]
        for i in range(b.shape[0])
    ]
    atomic_write_json(out / "samples.json", rows, indent=1)
    print(f"wrote {out / 'samples.png'} and {out / 'samples.json'}")
    return 0


@app.command(
    "eval",
    "Evaluate a checkpoint on seeded synthetic test layouts, every task; writes metrics.json.",
    arg("--checkpoint", required=True, help="a model.pt written by `lace train`"),
    arg("--layouts", type=positive_int, default=128, help="number of test layouts"),
    arg("--steps", type=positive_int, default=25, help="DDIM steps"),
)
def _eval(args: argparse.Namespace) -> int:
    from .data import synthetic_aligned_layouts
    from .diffusion import TASKS, generate, load_checkpoint
    from .reproduce import _metrics

    model, cfg = load_checkpoint(args.checkpoint)
    if cfg.categories != DEFAULT_CATEGORIES:
        raise ValueError(
            f"the synthetic test layouts use categories {list(DEFAULT_CATEGORIES)}, the checkpoint {list(cfg.categories)}"
        )
    test = synthetic_aligned_layouts(args.layouts, seed=20_000 + args.seed, max_elements=cfg.max_elements)
    res = {}
    for task in TASKS:
        cond = None if task == "uncond" else test
        out = generate(model, cfg, task, n=args.layouts, layouts=cond, steps=args.steps, seed=args.seed)
        res[task] = _metrics(out, test, cfg.num_classes, task)
        print(task, " ".join(f"{k}={v:.4g}" for k, v in res[task].items()))
    atomic_write_json(Path(args.out) / "metrics.json", res, indent=1)
    return 0


main = app.main

if __name__ == "__main__":  # torchrun --nproc_per_node 2 -m iclr24.lace.cli train ...
    raise SystemExit(main())
