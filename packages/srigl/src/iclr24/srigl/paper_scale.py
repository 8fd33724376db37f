"""Paper scale: the paper's ImageNet headline run (SRigL, ResNet-50, 90 % sparsity), a few steps of it.

The official ImageNet recipe (configs/training/resnet50*.yaml of calgaryml/condensed-sparsity, as the spec and
:data:`~iclr24.srigl.train.IMAGENET_RECIPE` record it): ResNet-50 at 224 x 224, batch 512, SGD (momentum 0.9) at
lr 0.2, weight decay 1e-4, label smoothing 0.1, 5 linear warm-up epochs then x 0.1 at epochs 30/70/90, 100 epochs;
SRigL at 90 % with ERK layer densities, gamma_sal 0.3, alpha 0.3, a mask update every Delta T = 800 steps (RigL's
Delta T = 100 at an effective batch of 4,096, i.e. 8 x more steps at 512), stopping at 75 % of training. ImageNet-1K
has 1,281,167 training images: ceil(1,281,167 / 512) = 2,503 steps per epoch (the package's loop keeps the last
partial batch), 250,300 paper steps.

:func:`paper_scale` writes an ImageNet-format folder (``train/nNNNNNNNN/*.JPEG``) of generated JPEGs to a temporary
folder (paperkit's stand-in writer), streams it from disk through torchvision's ``ImageFolder`` with the standard ImageNet train transform
(random resized crop 224, horizontal flip, normalisation) and a ``DataLoader`` (workers and pinned memory on CUDA),
and runs the body of :func:`~iclr24.srigl.train.train`: forward, label-smoothed cross-entropy, backward, SGD step
at the schedule's rate, the sparsifier's step (masks re-applied after every optimiser step; a mask update when its
counter reaches Delta T).
"""

from __future__ import annotations

from dataclasses import dataclass
from dataclasses import replace

import torch
import torch.nn.functional as F

from iclr24.paperkit import PaperScale
from iclr24.paperkit.data.standins import IMAGENET_PX
from iclr24.paperkit.data.standins import write_imagenet_folder
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import steps_per_epoch

from .train import IMAGENET_RECIPE
from .train import TrainConfig
from .train import lr_lambda

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """SRigL's ImageNet headline run: :data:`IMAGENET_RECIPE` at 90 % sparsity with the ImageNet Delta T."""

    train: TrainConfig = replace(IMAGENET_RECIPE, sparsity=0.9, gamma_sal=0.3, delta_t=800)
    img_size: int = 224
    classes: int = 1000
    train_images: int = 1_281_167
    workers: int = 8
    cuda_micro_batch: int = 128  # 4 x 128 = 512 on one GPU (fp32, as the package trains)
    cpu_micro_batch: int = 4  # one CPU core: 4 images per micro-step (128 x 4 = 512)

    @property
    def batch(self) -> int:
        return self.train.batch_size

    @property
    def steps_per_epoch(self) -> int:
        return steps_per_epoch(self.train_images, self.batch, drop_last=False)  # the package keeps the last

    @property
    def paper_steps(self) -> int:
        return self.train.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def paper_scale(
    device: str = "cpu",
    *,
    classes: int | None = None,
    per_class: int = 3,
    micro_batch: int | None = None,
    img_size: int | None = None,
    image_px=IMAGENET_PX,
) -> PaperScale:
    """One micro-batch of SRigL's ImageNet ResNet-50 training step: 128 images on CUDA (x 4 accumulation), 4 on
    the CPU (x 128). The default stand-in is 1,000 classes x 3 JPEGs (3,000 images); the keyword overrides shrink
    it for tests only."""
    import timm
    from torchvision import datasets
    from torchvision import transforms

    from .sparsifier import make_sparsifier

    cfg, tc = PAPER_SCALE, PAPER_SCALE.train
    run = ScaleRun(
        device, batch=cfg.batch, cuda=cfg.cuda_micro_batch, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch
    )
    n_classes, size = classes or cfg.classes, img_size or cfg.img_size
    root = write_imagenet_folder(run.folder, n_classes, per_class, size=image_px)
    norm = transforms.Normalize((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))
    flip = transforms.RandomHorizontalFlip()
    tf = transforms.Compose([transforms.RandomResizedCrop(size), flip, transforms.ToTensor(), norm])
    batches = run.stream(datasets.ImageFolder(str(root / "train"), transform=tf), workers=cfg.workers)
    torch.manual_seed(tc.seed)
    model = timm.create_model(tc.model.removeprefix("timm:"), pretrained=False, num_classes=n_classes)
    model = model.to(torch.device(device)).train()
    opt = torch.optim.SGD(model.parameters(), lr=tc.lr, momentum=tc.momentum, weight_decay=tc.weight_decay)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_lambda(tc, cfg.steps_per_epoch))
    sparsity = dict(delta_t=tc.delta_t, alpha=tc.alpha, t_end_fraction=tc.t_end_fraction, seed=tc.seed)
    sparsity.update(distribution=tc.distribution, sparse_init=tc.sparse_init, gamma_sal=tc.gamma_sal)
    sp = make_sparsifier("srigl", model, opt, tc.sparsity, cfg.paper_steps, **sparsity)

    def after() -> None:  # the optimiser step's post-hook has re-applied the masks
        sched.step()
        sp.step()  # counts steps; a mask update every Delta T

    def loss(x, y):
        return F.cross_entropy(model(x), y, label_smoothing=tc.label_smoothing)

    return run.paper_scale(
        run.train_step(batches, loss, opt, after=after),
        config=(
            f"ResNet-50 {size}px, SRigL S={tc.sparsity} ERK, Delta T={tc.delta_t}, SGD lr {tc.lr} m {tc.momentum} "
            f"wd {tc.weight_decay}, batch {cfg.batch}, 5 warm-up + step 30/70/90 epochs, label smoothing "
            f"{tc.label_smoothing}"
        ),
        paper_steps=cfg.paper_steps,
        dataset=f"ImageNet-1K stand-in: {n_classes * per_class} generated JPEGs, {n_classes} classes",
        notes=[
            f"synthetic ImageNet-format JPEG folder ({n_classes} classes x {per_class}, {image_px[0]}x"
            f"{image_px[1]}), streamed from disk through ImageFolder + DataLoader",
            f"paper steps: {tc.epochs} epochs x ceil(1,281,167 / {cfg.batch}) = {cfg.paper_steps}",
            "fp32 (the package trains in fp32; no autocast)"
            + (
                ""
                if run.cuda
                else f"; CPU: micro-batch {run.micro_batch} x {run.accumulation} (the paper's 512 in one go on CUDA: 128 x 4)"
            ),
        ],
    )
