"""Paper scale: the official PubLayNet training run of LACE, a few steps of it.

The official ``train.py`` (PubLayNet, the README's model hyper-parameters): the denoiser with d = 1024, 16 heads,
4 layers, FF 2048, 25 elements, T = 1000; batch 256 layouts (run as one 4 x 256 batch: unconditional, c, cwh and
completion inputs sharing t and eps), Adam lr 1e-5, betas (0.9, 0.999), gradient-norm clip 1.0, no schedule, fp32
(no mixed precision); local alignment x 20 and overlap constraints at lambda = 1. The data is the official
preprocessed ``publaynet-max25/processed/train.pt`` (a PyTorch Geometric ``InMemoryDataset``: the split lives in
memory, as here), 315,757 layouts, so an epoch is ceil(315,757 / 256) = 1,234 steps. The official code fixes no
epoch count (``--nepoch`` has no default; the authors trained "several weeks" with breaks, issue #7):
:data:`PAPER_SCALE` assumes 1,000 epochs, stated in every row (the hours scale linearly with it).

:func:`paper_scale` writes a PubLayNet-format ``train.pt`` of synthetic layouts (PubLayNet's 5 categories, 1-25
elements) to a temporary folder, reads it with the package's :func:`~iclr24.lace.real_data.load_official_layouts`,
and streams shuffled batches through a ``DataLoader`` into the package's own
:func:`~iclr24.lace.diffusion.training_loss` and the official optimiser step.
"""

from __future__ import annotations

import contextlib
import math
import sys
import types
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun

from .diffusion import training_loss
from .layout import encode_layout
from .model import make_model
from .real_data import CATEGORIES
from .real_data import MAX_ELEMENTS
from .real_data import load_official_layouts
from .real_data import real_config

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "stand_in_modules", "write_publaynet_split", "paper_scale"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """The official PubLayNet run (``train.py`` defaults and the README's PubLayNet hyper-parameters)."""

    dim: int = 1024  # --dim_transformer
    heads: int = 16  # --nhead
    layers: int = 4  # --nlayer
    ff: int = 2048  # --feature_dim
    max_elements: int = MAX_ELEMENTS  # 25
    batch: int = 256  # --batch_size (x 4 inputs per step)
    lr: float = 1e-5  # --lr, Adam betas (0.9, 0.999), weight decay 0
    grad_clip: float = 1.0
    train_layouts: int = 315_757  # PubLayNet train split
    epochs: int = 1_000  # ASSUMED: the official code fixes none (issue #7: "several weeks")
    cpu_micro_batch: int = 8  # one CPU core: 8 layouts (32 sequences) per micro-step, accumulation 32

    @property
    def steps_per_epoch(self) -> int:
        return math.ceil(self.train_layouts / self.batch)

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def _pyg_modules():
    """Stand-in ``torch_geometric`` modules with the class names PyG 2 pickles for an ``InMemoryDataset``."""
    data_mod = types.ModuleType("torch_geometric.data.data")
    storage_mod = types.ModuleType("torch_geometric.data.storage")
    classes = {}
    for name, mod in (
        ("Data", data_mod),
        ("DataTensorAttr", data_mod),
        ("DataEdgeAttr", data_mod),
        ("GlobalStorage", storage_mod),
    ):
        cls = type(name, (), {"__module__": mod.__name__, "__qualname__": name})
        setattr(mod, name, cls)
        classes[name] = cls
    mods = {
        "torch_geometric": types.ModuleType("torch_geometric"),
        "torch_geometric.data": types.ModuleType("torch_geometric.data"),
        data_mod.__name__: data_mod,
        storage_mod.__name__: storage_mod,
    }
    return mods, classes


@contextlib.contextmanager
def stand_in_modules(mods: dict[str, types.ModuleType]) -> Iterator[None]:
    """``mods`` in ``sys.modules`` while the block runs (so pickle names their classes as PyG's); afterwards each
    name holds what it held before, or nothing."""
    saved = {k: sys.modules.get(k) for k in mods}
    sys.modules.update(mods)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                sys.modules.pop(k, None)
            else:
                sys.modules[k] = v


def synthetic_publaynet(
    n: int, seed: int = 0, max_elements: int = MAX_ELEMENTS
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``n`` random page layouts: 1..``max_elements`` boxes (xc, yc, w, h) inside [0, 1], labels 0..4."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        k = int(min(max_elements, 1 + rng.geometric(0.15)))
        w = rng.uniform(0.05, 0.8, k)
        h = rng.uniform(0.01, 0.3, k)
        xc = w / 2 + rng.uniform(0, 1, k) * (1 - w)
        yc = h / 2 + rng.uniform(0, 1, k) * (1 - h)
        labels = rng.integers(0, len(CATEGORIES["publaynet"]), k)
        out.append((np.stack([xc, yc, w, h], -1).astype(np.float32), labels.astype(np.int64)))
    return out


def write_publaynet_split(path: Path, layouts: list[tuple[np.ndarray, np.ndarray]]) -> Path:
    """An official preprocessed split file: ``torch.save((data, slices))`` of a collated PyG ``Data`` (``x`` (M, 4)
    boxes, ``y`` (M,) labels, ``slices['x']`` (N + 1,) offsets), pickled under PyG's class names without PyG."""
    mods, cls = _pyg_modules()
    with stand_in_modules(mods):
        x = torch.from_numpy(np.concatenate([b for b, _ in layouts]))
        y = torch.from_numpy(np.concatenate([lab for _, lab in layouts]))
        off = torch.from_numpy(np.concatenate([[0], np.cumsum([len(lab) for _, lab in layouts])]))
        data, store = cls["Data"](), cls["GlobalStorage"]()
        store.__dict__.update(_mapping={"x": x, "y": y}, _parent=data)
        data.__dict__.update(
            _tensor_attr_cls=cls["DataTensorAttr"], _edge_attr_cls=cls["DataEdgeAttr"], _store=store
        )
        path.parent.mkdir(parents=True, exist_ok=True)
        torch.save((data, {"x": off, "y": off.clone()}), path)
    return path


def paper_scale(
    device: str = "cpu",
    *,
    layouts: int = 4096,
    micro_batch: int | None = None,
    dim: int | None = None,
    ff: int | None = None,
    heads: int | None = None,
) -> PaperScale:
    """One micro-batch of the official PubLayNet training step (forward of the 4 x B batch, the LACE loss, backward,
    clip, Adam). On CUDA the paper's batch of 256 in one step; on the CPU 8 layouts x 32 accumulation. The keyword
    overrides shrink it for tests only."""
    cfg = PAPER_SCALE
    run = ScaleRun(device, batch=cfg.batch, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch)
    cuda, mb = run.cuda, run.micro_batch
    lcfg = real_config(
        "publaynet",
        dim=dim or cfg.dim,
        heads=heads or cfg.heads,
        layers=cfg.layers,
        ff=ff or cfg.ff,
        lr=cfg.lr,
        batch_size=mb,
        grad_clip=cfg.grad_clip,
    )
    split = write_publaynet_split(
        run.folder / "publaynet-max25" / "processed" / "train.pt", synthetic_publaynet(layouts)
    )
    bbox, labels, mask = load_official_layouts(run.folder, "publaynet", "train")  # an InMemoryDataset
    tokens = encode_layout(bbox, labels, mask, lcfg.num_classes, lcfg.max_elements)
    batches = run.stream(torch.utils.data.TensorDataset(tokens), workers=4)  # official --num_workers 4
    dev = torch.device(device)
    torch.manual_seed(0)
    model = make_model(lcfg).to(dev)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=lcfg.lr, betas=(0.9, 0.999), weight_decay=0.0)

    def loss(x0):
        # the loss draws t, eps and the condition masks with torch's default device: make it this one
        with torch.device(dev) if cuda else contextlib.nullcontext():
            return training_loss(model, x0, lcfg)[0]

    step = run.train_step(batches, loss, opt, clip=(params, lcfg.grad_clip))
    step.split = split  # the PubLayNet-format file (tests read it)
    return run.paper_scale(
        step,
        config=(
            f"LACE PubLayNet: d={lcfg.dim}, {lcfg.heads} heads, {lcfg.layers} layers, FF {lcfg.ff}, "
            f"{lcfg.max_elements} elements, batch {cfg.batch} (x4 inputs), Adam {cfg.lr:g}, clip {cfg.grad_clip:g}, "
            f"{cfg.epochs:,} epochs (assumed) x {cfg.steps_per_epoch:,} steps"
        ),
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic PubLayNet-format split publaynet-max25/processed/train.pt, {layouts:,} layouts",
        notes=[
            f"stand-in data: {layouts:,} synthetic layouts (PubLayNet's 5 categories, 1-25 elements) in the "
            "official preprocessed file format (PyG InMemoryDataset pickle), read by load_official_layouts; the "
            "official loader also holds the whole split in memory (315,757 layouts, tens of MB)",
            f"epochs ASSUMED {cfg.epochs:,}: the official code fixes none (issue #7: several weeks of training)",
            "each micro-step runs the 4 x micro-batch augmented batch (unconditional, c, cwh, completion)",
            (
                "CUDA: the paper's batch of 256 per step, DataLoader with 4 workers and pinned memory, fp32 as "
                "the official train.py"
                if cuda
                else f"CPU: micro-batch {mb} layouts x {run.accumulation} accumulation (the paper's 256 takes minutes "
                "per step on one core); each micro-step here also clips and steps Adam, as the official step does (a paper step would do that once: a slight over-estimate)"
            ),
        ],
    )
