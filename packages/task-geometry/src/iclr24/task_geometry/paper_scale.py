"""Paper scale: the paper's largest setting, the small CNN on CIFAR-10, for a few steps, measured.

``PAPER_SCALE`` is the paper's image setting: :class:`~iclr24.task_geometry.cnn.SmallCNN` (2 conv + 2 fully
connected layers, width 128) on CIFAR-10's 50,000 32x32x3 training images, two balanced dichotomies of the ten
classes as Bernoulli targets (the parity and magnitude of the class index, as this package's digit claims), Adam lr
1e-3, batch 64 (the authors' batch), one Tanh and one ReLU network (the comparison). The paper gives no CIFAR epoch
count; 100 epochs is the count of the first author's deep-network scripts (``repler`` ``src/scripts/deepnets.py``).
CIFAR-10 cannot ship offline: the data is a stand-in folder in the official python format (``data_batch_1..5``,
``test_batch``: pickled dicts of uint8 ``(N, 3072)`` planes and labels) at CIFAR-10's full size, read by
:func:`iclr24.paperkit.data.load_cifar10` as the README's CIFAR route does. A micro-step is one minibatch of
:func:`~iclr24.task_geometry.cnn.train_cnn`'s loop: forward, Bernoulli loss, backward, Adam step."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    dataset: str = "CIFAR-10"
    train_images: int = 50_000  # 5 batch files of 10,000
    test_images: int = 10_000
    side: int = 32
    in_channels: int = 3
    width: int = 128  # the authors' hidden width
    k: int = 2  # two balanced class dichotomies (class parity, class >= 5)
    batch_size: int = 64  # the authors' batch
    lr: float = 1e-3  # train_cnn's Adam
    epochs: int = 100  # repler src/scripts/deepnets.py (nepoch = 100); the paper gives none for CIFAR
    activations: tuple[str, ...] = ("tanh", "relu")  # one network each: the paper's comparison


PAPER_SCALE = PaperScaleConfig()


def paper_scale(device: str = "cpu", *, train_images: int | None = None, batch: int | None = None):
    """One micro-step of ``PAPER_SCALE`` (one Adam minibatch step of the Tanh network) on ``device``;
    ``train_images``/``batch`` shrink it for tests."""
    import torch
    from torch import nn

    from iclr24.paperkit.data import load_cifar10
    from iclr24.paperkit.data.standins import write_cifar10_batches
    from iclr24.paperkit.scale import ScaleRun
    from iclr24.paperkit.scale import shuffled
    from iclr24.paperkit.scale import steps_per_epoch

    from .cnn import SmallCNN
    from .cnn import _images
    from .cnn import digit_dichotomies

    c = PAPER_SCALE
    n_train = train_images or c.train_images
    run = ScaleRun(device, batch=batch or c.batch_size)
    x, y = load_cifar10(write_cifar10_batches(run.folder, n_train, max(10, n_train // 5)))["train"]
    X = _images(x, c.in_channels, c.side)  # train_cnn's input: float32 CHW in [0, 1], in memory
    del x
    T = torch.as_tensor(digit_dichotomies()[:, : c.k], dtype=torch.float32)
    Y = T[torch.as_tensor(y)]
    torch.manual_seed(0)
    model = SmallCNN(c.k, act=c.activations[0], in_channels=c.in_channels, side=c.side, width=c.width)
    model = model.to(torch.device(device))
    # train_cnn's epochs: a new shuffle each, the last partial minibatch dropped
    batches = ((X[i], Y[i]) for i in shuffled(n_train, run.micro_batch, torch.Generator().manual_seed(0)))
    opt = torch.optim.Adam(model.parameters(), lr=c.lr)
    step = run.train_step(batches, lambda xb, yb: nn.BCEWithLogitsLoss()(model(xb), yb), opt)
    per_epoch = steps_per_epoch(c.train_images, c.batch_size, drop_last=False)
    return run.paper_scale(
        step,
        config=f"SmallCNN conv16-conv32-fc{c.width}-fc{c.k} on {c.side}x{c.side}x{c.in_channels}, Adam lr "
        f"{c.lr:g}, batch {c.batch_size}, {c.epochs} epochs x {len(c.activations)} nets (Tanh, ReLU)",
        paper_steps=c.epochs * per_epoch * len(c.activations),
        dataset=f"{c.dataset} format (synthetic stand-in)",
        notes=[
            f"stand-in data: random images in CIFAR-10's python format ({n_train:,} training images in "
            "data_batch_1..5 + test_batch), read by paperkit's load_cifar10 (CIFAR-10 cannot ship offline)",
            f"paper steps = {c.epochs} epochs x {per_epoch} minibatches of {c.batch_size} x 2 networks (Tanh and "
            "ReLU); the paper gives no CIFAR epoch count: 100 is the first author's deep-network scripts' count",
            "the training images are held in memory as float32 (train_cnn's input): 0.6 GB at CIFAR-10's size, "
            "with transient copies while they are converted (the package's _images), so the peak is higher",
            "fp32 on every device (the authors' code uses no mixed precision); the geometry measurements after "
            "training (CKA, PS, CCGP on the class means) are not counted",
        ],
    )
