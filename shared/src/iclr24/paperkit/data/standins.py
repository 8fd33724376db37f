"""Stand-in datasets in the real on-disk formats, for paper-scale steps (``iclr24 bench --paper-scale``) and
tests: synthetic pixels, the real layout, so the readers beside this module (and torchvision's) take them as they
take the real set. Each writer is seeded and returns the folder it wrote. Needs Pillow for the image folders."""

from __future__ import annotations

import pickle
from pathlib import Path

import numpy as np

from .cifar import CIFAR10_CLASSES
from .cifar import CIFAR10_TEST_BATCH
from .cifar import CIFAR10_TRAIN_BATCHES

__all__ = ["IMAGENET_PX", "write_imagenet_folder", "write_cifar10_batches"]

IMAGENET_PX = (500, 375)  # ImageNet's typical training image, width x height


def write_imagenet_folder(
    root: str | Path,
    classes: int,
    per_class: int,
    *,
    val_per_class: int = 0,
    size: tuple[int, int] = IMAGENET_PX,
    seed: int = 0,
) -> Path:
    """ImageNet's folder layout under ``root``: ``train/nNNNNNNNN/nNNNNNNNN_K.JPEG`` (``per_class`` RGB JPEGs of
    ``size`` = width x height in each of ``classes`` class folders) and, with ``val_per_class``, the same under
    ``val/``. Each picture is a smooth random one (an upscaled 8 x 6 random image). Returns ``root``."""
    from PIL import Image

    root = Path(root)
    rng = np.random.default_rng(seed)
    for split, n in (("train", per_class), ("val", val_per_class)):
        for c in range(classes if n else 0):
            wnid = f"n{c:08d}"
            folder = root / split / wnid
            folder.mkdir(parents=True, exist_ok=True)
            for k in range(n):
                small = rng.integers(0, 256, (6, 8, 3), dtype=np.uint8)
                img = Image.fromarray(small).resize(size, Image.BILINEAR)
                img.save(folder / f"{wnid}_{k}.JPEG", quality=90)
    return root


def write_cifar10_batches(root: str | Path, train: int, test: int, *, seed: int = 0) -> Path:
    """``root/cifar-10-batches-py`` in CIFAR-10's python format: ``data_batch_1..5`` (``train`` images split as
    evenly as they go, the first files one larger), ``test_batch`` (``test`` images) and ``batches.meta``; each
    batch a protocol-2 pickle of a dict with bytes keys, as the real files read with ``encoding="bytes"``: uint8
    ``data (n, 3072)`` (the red, green, blue planes of each row-major 32 x 32 image), ``labels`` (ints 0-9),
    ``batch_label`` and ``filenames``. The pixels are one colour pattern per class plus noise."""
    folder = Path(root) / "cifar-10-batches-py"
    folder.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    sizes = [len(part) for part in np.array_split(np.arange(train), len(CIFAR10_TRAIN_BATCHES))] + [test]
    for k, (name, n) in enumerate(zip((*CIFAR10_TRAIN_BATCHES, CIFAR10_TEST_BATCH), sizes)):
        labels = rng.integers(0, 10, n)
        base = (rng.integers(0, 256, (10, 3072)) * 0.7).astype(np.uint8)  # <= 178: base + noise fits uint8
        data = base[labels] + rng.integers(0, 77, (n, 3072), dtype=np.uint8)  # uint8 throughout: a light peak
        batch = {
            b"batch_label": f"synthetic batch {k + 1}".encode(),
            b"labels": [int(v) for v in labels],
            b"data": data,
            b"filenames": [f"img_{k}_{i}.png".encode() for i in range(n)],
        }
        (folder / name).write_bytes(pickle.dumps(batch, protocol=2))
    meta = {b"label_names": [c.encode() for c in CIFAR10_CLASSES], b"num_cases_per_batch": max(sizes)}
    (folder / "batches.meta").write_bytes(pickle.dumps(meta, protocol=2))
    return folder
