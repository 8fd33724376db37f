"""The ``rlcf`` command: a thin shell over the API (adapt, reproduce, bench)."""

from __future__ import annotations

import argparse
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import nonneg_int
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from . import bench
from .data import CLASS_SETS
from .experiments import DemoConfig
from .reproduce import PAPER
from .tta import METHODS
from .tta import MODES
from .tta import TTAConfig

app = App("rlcf", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # the demo's claims run on the CPU
app.add_bench(bench.run_benchmarks)


def _load(spec: str, arch: str | None, device: str):
    from .model import load_clip

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


TOY_CLASS = "iclr24.rlcf.toyclip.ToyCLIP"


def _toy_folder(spec: str) -> dict | None:
    """The provenance of a model folder holding a toy digit CLIP (``rlcf train``), or None for anything else
    (``tiny``, a checkpoint file, a missing path; those are judged where they load). Reads only the JSON files."""
    import json

    from iclr24.paperkit.pretrained import CONFIG_FILE
    from iclr24.paperkit.pretrained import PROVENANCE_FILE

    p = Path(spec).expanduser()
    if spec == "tiny" or not (p / CONFIG_FILE).is_file():
        return None
    try:
        config = json.loads((p / CONFIG_FILE).read_text(encoding="utf-8"))
        prov = json.loads((p / PROVENANCE_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None  # load_clip reports what is wrong with the folder
    if not isinstance(config, dict) or config.get("class") != TOY_CLASS:
        return None
    return prov if isinstance(prov, dict) else {}


@app.command(
    "train",
    "Train the offline demo's two small CLIPs on the clean digits of a seed's split (the policy, width 8; the "
    "reward model, width 32, also on rotated + noisy copies); writes the model folders OUT/policy and OUT/reward "
    "(model.safetensors, config.json, provenance.json) and OUT/train.json. `rlcf adapt --policy OUT/policy "
    "--reward OUT/reward` adapts with them.",
    field_arg(DemoConfig, "policy_steps", type=nonneg_int, help="training steps of the policy"),
    field_arg(DemoConfig, "reward_steps", type=nonneg_int, help="training steps of the reward"),
    log_dir=True,
)
def _train(args: argparse.Namespace) -> int:
    import time
    from dataclasses import asdict
    from dataclasses import replace

    from iclr24.paperkit import progress

    from .experiments import train_digit_clips
    from .experiments import zero_shot_accuracy

    demo = replace(DemoConfig(), policy_steps=args.policy_steps, reward_steps=args.reward_steps)
    steps = {"policy": demo.policy_steps, "reward": demo.reward_steps}
    losses: dict[str, list] = {"policy": [], "reward": []}
    clock = {"start": time.process_time()}

    def record(step: int, m) -> None:
        """Keep the loss at every 20th of each CLIP's run and at its last step (for provenance.json)."""
        tag, n = m["model"], steps[m["model"]]
        if step % max(1, n // 20) == 0 or step == n - 1:
            losses[tag].append({"step": step, "loss": round(m["loss"], 5)})
        if tag == "policy" and step == n - 1:
            clock["policy"] = time.process_time()

    with progress(total=demo.policy_steps + demo.reward_steps, desc="train tiny CLIPs",
                  disable=True if args.quiet else None) as bar:  # fmt: skip
        policy, reward, data = train_digit_clips(demo, args.seed, progress=bar, callbacks=record,
                                                 log_dir=args.log_dir)  # fmt: skip
    end = time.process_time()
    split = clock.get("policy", clock["start"])
    cpu = {"policy": split - clock["start"], "reward": end - split}
    acc = {"policy": zero_shot_accuracy(policy, data.test_x, data.test_y),
           "reward": zero_shot_accuracy(reward, data.test_x, data.test_y)}  # fmt: skip
    out = Path(args.out)
    recipe = {k: v for k, v in asdict(demo).items() if k in ("policy_width", "reward_width", "policy_steps",
              "reward_steps", "reward_copies", "reward_max_angle", "train_lr", "batch_size")}  # fmt: skip
    for tag, model in (("policy", policy), ("reward", reward)):
        model.save_pretrained(out / tag, provenance={
            "command": app.command_line(args), "seed": args.seed, "steps": steps[tag], "role": tag,
            "cpu_seconds": round(cpu[tag], 2),
            "data": "digits-shift: scikit-learn's 8x8 digits, the clean half of the seed's split"
                    + (" and rotated + noisy copies" if tag == "reward" else ""),
            "data_seed": args.seed, "recipe": recipe, "losses": losses[tag],
            "zero_shot_test_top1": round(acc[tag], 2),
        })  # fmt: skip
    atomic_write_json(out / "train.json", {"seed": args.seed, "config": asdict(demo),
                                          "zero_shot_test_top1": acc, "cpu_seconds": cpu})  # fmt: skip
    print(
        f"zero-shot top-1 on the shifted test digits: policy {acc['policy']:.1f}%, reward {acc['reward']:.1f}%"
    )
    print(f"wrote {out / 'policy'} and {out / 'reward'}")
    return 0


def _side(model) -> int:
    size = getattr(model.visual, "image_size", 224)
    return int(size[0] if isinstance(size, tuple | list) else size)


@app.command(
    "adapt",
    "Episodic test-time adaptation of a CLIP policy with a CLIP reward on a labelled test set; prints top-1.",
    arg(
        "--policy",
        default="tiny",
        help="'tiny' (a small CLIP trained here on digits), a model folder of `rlcf train`, or a local CLIP "
        "checkpoint",
    ),
    arg(
        "--reward",
        default="tiny",
        help="'tiny', a model folder of `rlcf train`, or a local CLIP checkpoint of the (stronger) reward model",
    ),
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
    field_arg(TTAConfig, "method", choices=METHODS, help="what adapts the policy"),
    field_arg(
        TTAConfig,
        "mode",
        choices=MODES,
        help="what trains: prompt context, image encoder, norm layers",
    ),
    field_arg(TTAConfig, "steps", type=positive_int, help="test-time steps per sample"),
    arg(
        "--lr",
        type=positive_float,
        default=None,
        help="AdamW lr (default: 1e-3 digits / 1e-5 real weights for image and norm modes, 7e-3 prompt mode)",
    ),  # fmt: skip
    field_arg(TTAConfig, "weight_decay", type=nonneg_float, help="AdamW weight decay"),
    field_arg(
        TTAConfig, "n_views", type=positive_int, help="views per test image (the original + augmentations)"
    ),
    field_arg(TTAConfig, "selection_p", type=probability, help="fraction of lowest-entropy views kept"),
    field_arg(TTAConfig, "sample_k", type=positive_int, help="classes sampled (top-K) per view"),
    field_arg(TTAConfig, "amplify", help="divide the centred rewards by their std"),
    field_arg(
        TTAConfig,
        "momentum",
        type=probability,
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
    log_dir=True,
)
def _adapt(args: argparse.Namespace) -> int:
    import torch

    from iclr24.paperkit import progress

    from .reward import CLIPReward
    from .tta import TTARunner

    folders = (_toy_folder(args.policy), _toy_folder(args.reward))  # toy digit CLIPs written by rlcf train
    kinds = tuple("tiny" if s == "tiny" else "folder" if f is not None else "real"
                  for s, f in zip((args.policy, args.reward), folders))  # fmt: skip
    digits = args.data == "digits-shift"
    allowed = (("tiny", "tiny"), ("folder", "folder")) if digits else (("real", "real"),)
    if kinds not in allowed:
        raise UsageError(
            "--data digits-shift goes with --policy tiny --reward tiny, or with the two model folders of rlcf train "
            "(8x8 digit CLIPs); real CLIP checkpoints need a folder of images (got --policy "
            f"{args.policy} --reward {args.reward} --data {args.data})"
        )
    data_seed = args.seed
    if kinds == ("folder", "folder"):
        seeds = [f.get("data_seed") for f in folders]
        if seeds[0] != seeds[1] or not isinstance(seeds[0], int):
            raise UsageError(
                f"--policy {args.policy} and --reward {args.reward} were trained on the digits splits of seeds "
                f"{seeds[0]} and {seeds[1]}: one model's training digits would be the other's test digits; train "
                "both with one rlcf train"
            )
        data_seed = seeds[0]  # the test digits are the held-out part of the split the CLIPs were trained on
    # every setting is checked here, before the tiny CLIPs train (minutes) or real ones load
    lr = args.lr if args.lr is not None else (7e-3 if args.mode == "prompt" else 1e-3 if digits else 1e-5)
    cfg = config_from_args(TTAConfig, args, lr=lr)
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
        from .data import DIGIT_NAMES
        from .data import DIGIT_TEMPLATE
        from .experiments import DemoConfig
        from .experiments import toy_tokenizer
        from .experiments import train_digit_clips

        if kinds == ("folder", "folder"):
            from .data import digits_recipe
            from .toyclip import ToyCLIP

            policy, reward_model = ToyCLIP.from_pretrained(args.policy), ToyCLIP.from_pretrained(args.reward)
            data = digits_recipe(data_seed)
        else:
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

            res = runner.evaluate(
                x[:n], y[:n], digit_views, seed=args.seed, progress=bar, log_dir=args.log_dir
            )
        else:
            from torch.utils.data import DataLoader
            from torch.utils.data import Subset

            loader = DataLoader(Subset(dataset, range(n)), batch_size=None, num_workers=args.workers,
                                pin_memory=args.device.startswith("cuda"))  # fmt: skip
            res = runner.evaluate_views(loader, progress=bar, log_dir=args.log_dir)
    out = Path(args.out) / "results.json"
    atomic_write_json(out, {"args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()
                                     if not k.startswith("_")}, "classes": names, **res})  # fmt: skip
    steps = ", ".join(f"{a:.1f}" for a in res["accuracy_per_step"])
    print(f"{args.method} ({args.mode}): top-1 {res['accuracy']:.2f}% on {res['n']} images "
          f"(after 0..{len(res['accuracy_per_step']) - 1} steps: {steps}) in {res['seconds']:.1f} s")  # fmt: skip
    print(f"wrote {out}")
    return 0


main = app.main
