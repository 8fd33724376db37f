"""Paper scale: the paper's headline test-time adaptation (Table 1, ImageNet-A, image-encoder tuning) for a few steps.

The official image-encoder script (``TPT/scripts/rlcf-tune.sh`` running ``TPT/tune_cls_rl.py``): a CLIP ViT-B/16
policy whose whole image encoder adapts, a frozen CLIP ViT-L/14 reward model, 224 px, 64 views per test image (the
original + 63 RandomResizedCrop/flip views, ``--batch_size 64``), 10 % kept by confidence (``--selection_p 0.1``),
top-3 sampling (``--sample_k 3``), 3 steps (``--tta_steps 3``) of AdamW at lr 1e-5, weight decay 5e-4, fp16 autocast
on the GPU, episodic reset per test image, one test image at a time (``DataLoader(batch_size=1)``). The headline
dataset ImageNet-A has 7,500 test images in 200 WordNet-ID class folders: a paper step is one test image's whole
adaptation (``TTARunner.adapt``: 3 updates and the prediction), and the paper's run is 7,500 of them.

No CLIP weights can be downloaded here: both towers are open_clip's architectures with random weights
(``pretrained=None``), which cost the same FLOPs and memory as the trained ones. The data stand-in is an
ImageNet-A-format folder (200 class folders named by the ImageNet-A WordNet IDs) of generated JPEGs of varied sizes,
read lazily by :class:`~iclr24.rlcf.data.ImageFolderTTA` through a DataLoader (workers and pinned memory on CUDA),
with the package's own views, class names (``classes="imagenet-a"``) and :class:`~iclr24.rlcf.tta.TTARunner`.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import endless

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "write_imagenet_a_folder", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official ``rlcf-tune.sh`` run on ImageNet-A (the values its test pins)."""

    policy_arch: str = "ViT-B-16"  # -a ViT-B/16
    reward_arch: str = "ViT-L-14"  # reward_arch=ViT-L/14
    resolution: int = 224
    n_views: int = 64  # batch_size=64: the original + 63 augmented views
    selection_p: float = 0.1  # 6 of 64 kept
    sample_k: int = 3
    steps: int = 3  # tta_steps=3
    lr: float = 1e-5
    weight_decay: float = 5e-4
    mode: str = "image"  # tune_cls_rl.py: the whole image encoder
    dataset: str = "ImageNet-A"
    test_images: int = 7500  # ImageNet-A: 7,500 images, 200 classes
    classes: str = "imagenet-a"
    cpu_views: int = 8  # CPU micro-step: 8 views (1 kept) x accumulation 8 (see notes)
    stand_in_images: int = 2000  # generated JPEGs in the stand-in folder (10 per class)

    @property
    def paper_steps(self) -> int:
        """One paper step = one test image's adaptation; the paper's ImageNet-A column is 7,500 of them."""
        return self.test_images


PAPER_SCALE = PaperScaleConfig()


def write_imagenet_a_folder(
    root: Path, n: int, *, seed: int = 0, sizes: tuple[int, int] = (256, 640)
) -> list[Path]:
    """``n`` generated JPEGs in ImageNet-A's layout: ``root/<wnid>/<name>.jpg`` over its 200 WordNet-ID class
    folders (the first ``n`` folders when ``n < 200``), each image of a random size in ``sizes`` per side (smooth
    colour fields plus noise, so they decode like photographs of that size)."""
    from PIL import Image

    from .data import imagenet_classes

    wnids, _ = imagenet_classes("imagenet-a")
    rng = np.random.default_rng(seed)
    paths = []
    for k in range(n):
        wnid = wnids[k % len(wnids)]
        (root / wnid).mkdir(parents=True, exist_ok=True)
        w, h = (int(v) for v in rng.integers(sizes[0], sizes[1] + 1, size=2))
        small = Image.fromarray(rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8), mode="RGB")
        img = np.asarray(small.resize((w, h), Image.Resampling.BICUBIC), dtype=np.int16)
        img = np.clip(img + rng.integers(-12, 13, size=img.shape), 0, 255).astype(np.uint8)
        p = root / wnid / f"{k:05d}.jpg"
        Image.fromarray(img, mode="RGB").save(p, quality=90)
        paths.append(p)
    return paths


def _side(model) -> int:
    size = getattr(model.visual, "image_size", 224)
    return int(size[0] if isinstance(size, tuple | list) else size)


def paper_scale(
    device: str = "cpu",
    *,
    items: int | None = None,
    views: int | None = None,
    policy_arch: str | None = None,
    reward_arch: str | None = None,
) -> PaperScale:
    """One test image's RLCF adaptation at the official ImageNet-A configuration (see the module docstring).

    On ``"cuda"`` a micro-step is the paper's 64 views (accumulation 1). On ``"cpu"`` a 64-view ViT-B/16 sample takes
    minutes on one core, so a micro-step is one sample with ``cpu_views`` = 8 views (1 kept), and the row counts 8 of
    them per paper step: the 8 forwards of 8 views equal the 64-view selection forward, which dominates; the updates
    on the kept views and the reward encodes are then counted for 8 kept views instead of 6. The keyword overrides
    (``items``, ``views``, the two architectures) shrink it for tests only."""
    import open_clip

    from .data import ImageFolderTTA
    from .reward import CLIPReward
    from .tta import TTAConfig
    from .tta import TTARunner

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    cfg = PAPER_SCALE
    run = ScaleRun(
        device,
        batch=cfg.n_views,
        cpu=cfg.cpu_views,
        micro_batch=views,
        name="views",
        of="the paper's {batch} views",
    )
    cuda, n_views, accumulation = run.cuda, run.micro_batch, run.accumulation
    selection_p = cfg.selection_p if n_views == cfg.n_views else 1.0 / n_views
    root = run.folder
    write_imagenet_a_folder(root, items or cfg.stand_in_images)
    dev = torch.device(device)
    torch.manual_seed(0)
    p_arch, r_arch = policy_arch or cfg.policy_arch, reward_arch or cfg.reward_arch
    policy = open_clip.create_model(p_arch, pretrained=None).to(dev).eval()  # random weights: no download
    reward_model = open_clip.create_model(r_arch, pretrained=None).to(dev).eval()
    ptok, rtok = open_clip.get_tokenizer(p_arch), open_clip.get_tokenizer(r_arch)
    side = _side(policy)
    data = ImageFolderTTA(root, classes=cfg.classes, n_views=n_views, resolution=side, seed=0)
    tta = TTAConfig(method="rlcf", mode=cfg.mode, steps=cfg.steps, lr=cfg.lr, weight_decay=cfg.weight_decay,
                    n_views=n_views, selection_p=selection_p, sample_k=cfg.sample_k)  # fmt: skip
    runner = TTARunner(
        policy,
        CLIPReward(reward_model, resolution=_side(reward_model)),
        data.classnames,
        tta,
        template="a photo of a {}.",
        policy_tokenizer=lambda t, context_length=77: ptok(list(t), context_length=context_length),
        reward_tokenizer=lambda t, context_length=77: rtok(list(t), context_length=context_length),
    )
    loader = torch.utils.data.DataLoader(data, batch_size=None, shuffle=True, num_workers=4 if cuda else 0,
                                         pin_memory=cuda, persistent_workers=cuda,
                                         generator=torch.Generator().manual_seed(0))  # fmt: skip
    images = endless(loader)  # one test image (its views) at a time

    def step() -> int:
        x, y = next(images)
        x = x.to(dev, non_blocking=True)
        if cuda:  # the official code adapts under CUDA autocast (fp16 + GradScaler); bf16 needs no scaler
            with torch.autocast("cuda", dtype=torch.bfloat16):
                hist = runner.adapt(x)
        else:
            hist = runner.adapt(x)
        return int(hist[-1].argmax()) == int(y)

    step.folder = root  # the ImageNet-A-format folder (tests read it)
    step.dataset = data
    step.runner = runner
    notes = [
        f"{p_arch} policy (whole image encoder adapts) + frozen {r_arch} reward, open_clip architectures with "
        "RANDOM weights (pretrained=None: no weights can be downloaded here; same FLOPs and memory as trained ones)",
        f"stand-in data: an ImageNet-A-format folder of {len(data)} generated JPEGs (256-640 px per side) in "
        f"{len(data.folders)} WordNet-ID class folders, read lazily through a DataLoader; 200-class label space",
        f"a paper step = one test image: {cfg.n_views} views, {cfg.steps} AdamW steps (lr {cfg.lr:g}, wd "
        f"{cfg.weight_decay:g}), top-{cfg.sample_k} sampling, reward encode of the kept views; paper steps = "
        f"{cfg.test_images:,} ImageNet-A test images",
    ]
    if cuda:
        notes.append("cuda: the paper's 64 views in one micro-step, bf16 autocast (official: fp16 autocast + "
                     "GradScaler), DataLoader with 4 workers and pinned memory")  # fmt: skip
    else:
        notes.append(f"cpu: a micro-step is one image with {n_views} views ({max(1, int(selection_p * n_views))} "
                     f"kept) and a paper step counts {accumulation} of them: the selection forward over 64 views is "
                     "counted exactly, the 3 updates and the reward encode for 8 kept views instead of 6; fp32")  # fmt: skip
    return run.paper_scale(
        step,
        config=f"RLCF {p_arch} + {r_arch} reward, {side} px, {cfg.n_views} views, {cfg.steps} steps, lr {cfg.lr:g}",
        paper_steps=cfg.paper_steps,
        dataset=f"{cfg.dataset} (stand-in: generated JPEGs)",
        notes=notes,
    )
