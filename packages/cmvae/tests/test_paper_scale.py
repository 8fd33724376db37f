import math
import re

import pytest
import torch

from iclr24.cmvae.data import PolyMNISTFolder
from iclr24.cmvae.paper_scale import PAPER_SCALE
from iclr24.cmvae.paper_scale import paper_scale
from iclr24.paperkit.scale import measure_paper_scale


def test_paper_scale_config_is_the_official_polymnist_run():
    # run_polyMNIST_experiment.sh: --batch-size 128 --epochs 250 --latent-dim-c 40 --latent-dim-z 32
    # --latent-dim-w 32 --beta 2.5 --obj iwae --K 1 --priorposterior Laplace; train_CMVAE_polyMNIST.py: Adam lr 1e-3
    # amsgrad; resnet_polyMNIST.py: Laplace likelihood scale 0.75; PolyMNIST: 5 modalities of 3 x 28 x 28
    c = PAPER_SCALE
    assert (c.n_modalities, c.image_shape, c.latent_dim, c.modality_latent_dim) == (5, (3, 28, 28), 32, 32)
    assert (c.n_clusters_max, c.beta, c.K, c.estimator, c.latent) == (40, 2.5, 1, "iwae_looser", "laplace")
    assert (c.likelihood, c.likelihood_scale, c.batch_size, c.epochs, c.lr) == (
        "laplace",
        0.75,
        128,
        250,
        1e-3,
    )
    assert c.paper_steps == 250 * math.ceil(60_000 / 128) == 117_250


@pytest.mark.slow  # writes 320 PNGs and runs two micro-steps of the 5-modality ResNet CMVAE (narrowed to nf = 4)
def test_paper_scale_runs_one_step_on_polymnist_format_files():
    spec = paper_scale("cpu", tuples=64, micro_batch=64, nf=4)
    folder = spec.step.folder
    assert sorted(p.name for p in folder.iterdir()) == [f"m{m}" for m in range(5)]
    names = sorted((folder / "m0").iterdir())
    assert len(names) == 64 and all(re.fullmatch(r"\d+\.\d\.png", p.name) for p in names)
    ds = PolyMNISTFolder(folder)
    xs, y = ds[3]
    assert len(xs) == 5 and xs[0].shape == (3, 28, 28) and xs[0].dtype == torch.float32 and y == 3
    before = [p.detach().clone() for p in spec.step.model.parameters()]
    spec.step()  # micro-step 1 of 2: gradients accumulate, no Adam step yet
    assert all(torch.equal(a, b) for a, b in zip(before, spec.step.model.parameters(), strict=True))
    row = measure_paper_scale(spec, steps=1, warmup=0)  # micro-step 2 takes the Adam step
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (64, 2, 117_250)
    assert row["flops_per_paper_step"] > 0 and math.isfinite(row["seconds_per_paper_step"])
    assert not all(torch.equal(a, b) for a, b in zip(before, spec.step.model.parameters(), strict=True))
