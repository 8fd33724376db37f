"""The ``rlcf`` command: a thin shell over the API (adapt, reproduce, bench)."""

from __future__ import annotations

import argparse
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import (
    App,
    UsageError,
    arg,
    nonneg_float,
    positive_float,
    positive_int,
    probability,
)
from iclr24.paperkit.errors import InputError, InputFileError

from . import bench
from .data import CLASS_SETS
from .reproduce import PAPER
from .tta import METHODS, MODES


def nonneg_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"expected a non-negative integer, got {s!r}")
    return v


app = App("rlcf", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the demo's claims run on the CPU
app.add_bench(bench.run_benchmarks)


def _load(spec: str, arch: str | None, device: str):
    from .models import load_clip

    model, tokenizer = load_clip(spec, arch=arch, device=device)
    return model, (lambda texts, context_length=77: tokenizer(list(texts), context_length=context_length))


def _count_classes(folder: str) -> int:
    """The class subfolders of an image folder (cheap: no image is read), so class-count checks run before work."""
    p = Path(folder)
    if not p.is_dir():
        raise InputFileError(f"--data {folder}: no such folder (expected PATH/<class name>/<image>)")
    n = sum(1 for c in p.iterdir() if c.is_dir() and not c.name.startswith("."))
    if n == 0:
        raise InputError(f"--data {folder} has no class subfolders (expected PATH/<class name>/<image>)")
    return n


def _side(model) -> int:
    size = getattr(model.visual, "image_size", 224)
    return int(size[0] if isinstance(size, tuple | list) else size)


@app.command(
    "adapt",
    "Episodic test-time adaptation of a CLIP policy with a CLIP reward on a labelled test set; prints top-1.",
    arg(
        "--policy",
        default="tiny",
        help="'tiny' (a small CLIP trained here on digits) or a local CLIP checkpoint",
    ),
    arg("--reward", default="tiny", help="'tiny' or a local CLIP checkpoint of the (stronger) reward model"),
    arg(
        "--arch",
        default=None,
        help="open_clip architecture of --policy when it is an open_clip state dict "
        "(e.g. ViT-B-16); omit for an OpenAI .pt",
    ),  # fmt: skip
    arg("--reward-arch", default=None, help="open_clip architecture of --reward (e.g. ViT-L-14)"),
    arg(
        "--data",
        default="digits-shift",
        help="'digits-shift' (built in) or a folder PATH/<class name>/<image>",
    ),
    arg("--method", choices=METHODS, default="rlcf", help="what adapts the policy"),
    arg(
        "--mode",
        choices=MODES,
        default="image",
        help="what trains: prompt context, image encoder, norm layers",
    ),
    arg("--steps", type=positive_int, default=3, help="test-time steps per sample"),
    arg(
        "--lr",
        type=positive_float,
        default=None,
        help="AdamW lr (default: 1e-3 digits / 1e-5 real weights for image and norm modes, 7e-3 prompt mode)",
    ),  # fmt: skip
    arg("--weight-decay", type=nonneg_float, default=5e-4, help="AdamW weight decay"),
    arg(
        "--n-views", type=positive_int, default=64, help="views per test image (the original + augmentations)"
    ),
    arg("--selection-p", type=probability, default=0.1, help="fraction of lowest-entropy views kept"),
    arg("--sample-k", type=positive_int, default=3, help="classes sampled (top-K) per view"),
    arg("--amplify", action="store_true", help="divide the centred rewards by their std"),
    arg(
        "--momentum",
        type=probability,
        default=None,
        help="EMA momentum buffer (official 0.9998); off by default",
    ),
    arg(
        "--augmix",
        action="store_true",
        help="AugMix on the augmented views of real images (fine-grained sets)",
    ),
    arg("--template", default="a photo of a {}.", help="class prompt of real images ({} = class name)"),
    arg(
        "--class-names",
        default=None,
        help="class names of --data: a file with one name per line in the sorted order of the class folders, or "
        "a .json object {folder: name}",
    ),  # fmt: skip
    arg(
        "--classes",
        choices=CLASS_SETS,
        default=None,
        help="the shipped ImageNet class names and label space (200 classes of ImageNet-A/-R, or all 1000)",
    ),  # fmt: skip
    arg(
        "--workers",
        type=nonneg_int,
        default=0,
        help="DataLoader workers reading and augmenting --data images",
    ),
    arg("--ctx-init", default="a photo of a", help="CoOp context initialisation (prompt mode, real images)"),
    arg("--n-test", type=positive_int, default=None, help="adapt on the first N test images only"),
    device=True,
)
def _adapt(args: argparse.Namespace) -> int:
    import torch

    from iclr24.paperkit import progress

    from .reward import CLIPReward
    from .tta import TTAConfig, TTARunner

    tiny = (args.policy == "tiny", args.reward == "tiny")
    digits = args.data == "digits-shift"
    if digits != all(tiny) or tiny[0] != tiny[1]:
        raise UsageError(
            "--data digits-shift goes with --policy tiny --reward tiny (8x8 digit CLIPs); real CLIP checkpoints "
            f"need a folder of images (got --policy {args.policy} --reward {args.reward} --data {args.data})"
        )
    # every setting is checked here, before the tiny CLIPs train (minutes) or real ones load
    lr = args.lr if args.lr is not None else (7e-3 if args.mode == "prompt" else 1e-3 if digits else 1e-5)
    cfg = TTAConfig(method=args.method, mode=args.mode, steps=args.steps, lr=lr, weight_decay=args.weight_decay,
                    n_views=args.n_views, selection_p=args.selection_p, sample_k=args.sample_k, amplify=args.amplify,
                    momentum=args.momentum)  # fmt: skip
    if digits and (args.class_names is not None or args.classes is not None):
        raise UsageError("--class-names/--classes name the classes of a --data folder, not of digits-shift")
    dataset = None
    if not digits:
        from .data import ImageFolderTTA

        _count_classes(args.data)
        try:  # lists the files and resolves the class names (no image is read yet)
            dataset = ImageFolderTTA(args.data, class_names=args.class_names, classes=args.classes,
                                     n_views=1 if args.method == "zero-shot" else args.n_views, augmix=args.augmix,
                                     seed=args.seed)  # fmt: skip
        except (ValueError, FileNotFoundError, NotADirectoryError) as e:
            raise UsageError(str(e)) from None
    n_classes = 10 if digits else len(dataset.classnames)
    if args.sample_k > n_classes:
        raise UsageError(f"--sample-k {args.sample_k} exceeds the {n_classes} classes")
    if digits:
        from .data import DIGIT_NAMES, DIGIT_TEMPLATE
        from .experiment import DemoConfig, toy_tokenizer, train_digit_clips

        demo = DemoConfig()
        with progress(total=demo.policy_steps + demo.reward_steps, desc="train tiny CLIPs",
                      disable=True if args.quiet else None) as bar:  # fmt: skip
            policy, reward_model, data = train_digit_clips(demo, args.seed, progress=bar)
        x, y, names = data.test_x, data.test_y, list(DIGIT_NAMES)
        kw = dict(template=DIGIT_TEMPLATE, ctx_init="a photo of the digit", policy_tokenizer=toy_tokenizer,
                  reward_tokenizer=toy_tokenizer)  # fmt: skip
    else:
        policy, ptok = _load(args.policy, args.arch, args.device)
        reward_model, rtok = _load(args.reward, args.reward_arch, args.device)
        dataset.resolution = _side(policy)
        names = dataset.classnames
        kw = dict(
            template=args.template, ctx_init=args.ctx_init, policy_tokenizer=ptok, reward_tokenizer=rtok
        )
    policy, reward_model = policy.to(args.device), reward_model.to(args.device)
    resolution = None if digits else _side(reward_model)
    runner = TTARunner(policy, CLIPReward(reward_model, resolution=resolution), names, cfg, **kw)
    n = len(x) if digits else len(dataset)
    n = n if args.n_test is None else min(n, args.n_test)
    with torch.random.fork_rng(devices=[]), progress(total=n, desc=f"{args.method} ({args.mode})",
                                                      disable=True if args.quiet else None) as bar:  # fmt: skip
        if digits:
            from .views import digit_views

            res = runner.evaluate(x[:n], y[:n], digit_views, seed=args.seed, progress=bar)
        else:
            from torch.utils.data import DataLoader, Subset

            loader = DataLoader(Subset(dataset, range(n)), batch_size=None, num_workers=args.workers,
                                pin_memory=args.device.startswith("cuda"))  # fmt: skip
            res = runner.evaluate_views(loader, progress=bar)
    out = Path(args.out) / "results.json"
    atomic_write_json(out, {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                                     if not k.startswith("_")}, "classes": names, **res})  # fmt: skip
    steps = ", ".join(f"{a:.1f}" for a in res["accuracy_per_step"])
    print(f"{args.method} ({args.mode}): top-1 {res['accuracy']:.2f}% on {res['n']} images "
          f"(after 0..{len(res['accuracy_per_step']) - 1} steps: {steps}) in {res['seconds']:.1f} s")  # fmt: skip
    print(f"wrote {out}")
    return 0


main = app.main
