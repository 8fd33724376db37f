"""The shipped MNIST checkpoints: they load (sha256 checked), are what their commands trained, and a retrain of the
first steps reproduces the losses their provenance records."""

import json

import pytest
import torch

from iclr24.lpn import ConvLPN28
from iclr24.lpn.claims_table import CLAIMS
from iclr24.lpn.claims_table import MNIST_SEEDS
from iclr24.lpn.claims_table import ROW
from iclr24.lpn.experiments import ConvDenoiser
from iclr24.lpn.mnist_claims import BASELINE_NAME
from iclr24.lpn.mnist_claims import LPN_NAME
from iclr24.lpn.mnist_claims import MNIST_IDS
from iclr24.lpn.mnist_claims import load_shipped
from iclr24.lpn.train import load_model
from iclr24.paperkit import RunConfig
from iclr24.paperkit.pretrained import read_model_folder
from iclr24.paperkit.runner.testing import check_damaged_model_refused
from iclr24.paperkit.runner.testing import check_retrain_first_steps
from iclr24.paperkit.shipped import checkpoints_dir
from iclr24.paperkit.shipped import shipped_commands
from iclr24.paperkit.shipped import training_label

CK = checkpoints_dir("iclr24.lpn")
NAMES = [n.format(s) for s in MNIST_SEEDS for n in (LPN_NAME, BASELINE_NAME)]


def _mnist_or_skip():
    from iclr24.paperkit.data.folder import is_present

    if not is_present("mnist"):
        pytest.skip("MNIST is not in the data folder (iclr24 data get mnist)")


def test_every_paired_checkpoint_is_shipped_with_its_command():
    cmds = shipped_commands("iclr24.lpn")
    assert set(NAMES) <= set(cmds)
    for name, cmd in cmds.items():
        prov = json.loads((CK / name / "provenance.json").read_text())
        assert prov["command"].startswith(cmd.split(" --quiet")[0]), name  # the command that made it
        assert "--out OUT" in prov["command"] and "/" not in prov["command"].split("--out OUT")[0]
        assert prov["seed"] == int(name.rsplit("-s", 1)[1]) and prov["steps"] == int(
            cmd.split("--steps ")[1].split()[0]
        )
        assert isinstance(prov["losses"], dict) and all(str(k).isdigit() for k in prov["losses"])
        assert [str(s) for s in range(1, 21)] == list(prov["losses"])[:20]  # every step to 20


def test_shipped_checkpoints_load_and_their_sha256_is_checked(tmp_path):
    lpn = load_model(CK / LPN_NAME.format(0))
    assert isinstance(lpn, ConvLPN28) and lpn.config()["hidden"] == 64 and lpn.weights_nonnegative()
    base = ConvDenoiser.from_pretrained(CK / BASELINE_NAME.format(0))
    x = torch.rand(2, 1, 28, 28, generator=torch.Generator().manual_seed(0))
    assert lpn(x).shape == base(x).shape == x.shape
    _, _, prov = read_model_folder(CK / LPN_NAME.format(0))
    assert len(prov["weights_sha256"]) == 64
    check_damaged_model_refused(CK / LPN_NAME.format(0), tmp_path, load=load_model)


def test_load_shipped_labels_what_each_claim_is_evaluated_on(tmp_path):
    lpn, base, labels = load_shipped(RunConfig(mode="quick", out=tmp_path), 1)
    assert labels["lpn"] == training_label(CK / LPN_NAME.format(1))
    assert (
        labels["lpn"].startswith("`lpn train --arch conv28 --data mnist --hidden 64")
        and "CPU s on" in labels["lpn"]
    )
    assert "--out" not in labels["conv_l2"] and "2,000 steps" in labels["conv_l2"]


@pytest.mark.slow
@pytest.mark.parametrize("name", [LPN_NAME.format(0), BASELINE_NAME.format(0)])
def test_a_retrain_of_the_first_steps_matches_the_recorded_losses(tmp_path, name):
    """``--from-scratch`` retrains by the recorded command; its first 20 steps are compared with provenance.json.
    The LPN's schedule is l1 for the first half of --steps: a 40-step retrain keeps steps 1-20 identical (l1 at 1e-3,
    the same seeded batches), so only those are compared; the baseline's l2 at a constant lr is identical for every
    step it runs."""
    _mnist_or_skip()
    check_retrain_first_steps(CK / name, tmp_path / "run", {"--steps": "40"}, range(1, 21))


def test_the_claims_table_kinds():
    kinds = {r.id: r.kind for r in CLAIMS}
    assert [i for i, k in kinds.items() if k == "headline"] == [
        "lap_prior",
        "mn_pnp_inpaint",
        "mn_pnp_deblur",
    ]
    assert {i for i, k in kinds.items() if k == "check"} == {
        "dig_denoise_noisy",
        "dig_pnp_zero_fill",
        "mn_denoise_noisy",
    }
    assert all(ROW[i].in_mode("quick") for i in ("mn_pnp_inpaint", "mn_pnp_deblur", "mn_denoise_conv"))
    assert not any(
        ROW[i].in_mode("quick") for i in ("mn_prior_noise", "mn_prior_blur", "mn_nonconvex", "mn_converge")
    )
    assert set(MNIST_IDS) == {i for i in kinds if i.startswith("mn_")}
    for i in ("mn_denoise_conv", "mn_pnp_inpaint", "mn_pnp_deblur", "mn_pnp_inpaint_official"):
        assert ROW[i].seeds["quick"] == ROW[i].seeds["full"] == MNIST_SEEDS == (0, 1, 2)
