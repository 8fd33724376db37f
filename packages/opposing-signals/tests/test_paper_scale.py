import math
import pickle

import torch

from iclr24.opposing_signals.paper_scale import resnet18_cifar
from iclr24.opposing_signals.reproduce import PAPER
from iclr24.opposing_signals.reproduce import PAPER_SCALE
from iclr24.opposing_signals.reproduce import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_the_eos_cifar_protocol_with_resnet18():
    c = PAPER_SCALE
    assert (c.subset, c.loss, c.sharpness_iters) == (5000, "mse", 20)
    assert c.subset % c.cpu_physical_batch == 0 and c.subset % c.cuda_physical_batch == 0
    assert sum(p.numel() for p in resnet18_cifar().parameters()) == 11_173_962  # the standard CIFAR ResNet-18
    assert PAPER.paper_scale is paper_scale


def test_paper_scale_runs_gd_steps_on_a_tiny_cifar_format_folder():
    spec = paper_scale("cpu", subset=20, physical_batch=10, width=4)
    folder = spec.step.folder
    assert folder.name == "cifar-10-batches-py"
    names = sorted(p.name for p in folder.iterdir())
    assert names == [
        "batches.meta",
        "data_batch_1",
        "data_batch_2",
        "data_batch_3",
        "data_batch_4",
        "data_batch_5",
        "test_batch",
    ]
    with open(folder / "data_batch_3", "rb") as fh:
        batch = pickle.load(fh, encoding="bytes")
    assert (
        batch[b"data"].dtype.name == "uint8"
        and batch[b"data"].shape == (4, 3072)
        and len(batch[b"labels"]) == 4
    )
    # a GD step is accumulation micro-steps; the weights move only after the last one
    w0 = [p.detach().clone() for p in spec.step.model.parameters()]
    assert math.isfinite(spec.step())
    assert all(
        torch.equal(a, b) for a, b in zip(w0, spec.step.model.parameters())
    )  # half the subset: no update
    assert math.isfinite(spec.step())
    assert not all(torch.equal(a, b) for a, b in zip(w0, spec.step.model.parameters()))  # the GD step
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (10, 2, PAPER_SCALE.steps)
    assert row["flops_per_paper_step"] > 0 and "20-image" in row["config"]
