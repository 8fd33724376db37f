"""The poly_mnist checkpoints the package ships: trained by its own ``cmvae train`` (the commands in
``checkpoints/commands.json``, equal to ``reproduce.CHECKPOINTS``), loadable with their sha256 checked, and
reproducible: retraining the first Adam steps by the recorded command gives the recorded losses."""

import json
import shlex

import pytest

from iclr24.cmvae import CMVAE
from iclr24.cmvae.reproduce import CHECKPOINTS
from iclr24.cmvae.reproduce import CLAIMS
from iclr24.cmvae.reproduce import MNIST_EPOCHS
from iclr24.cmvae.reproduce import MNIST_SEEDS
from iclr24.cmvae.reproduce import PACKAGE
from iclr24.cmvae.reproduce import PAPER
from iclr24.paperkit import RunConfig
from iclr24.paperkit.runner.testing import check_damaged_model_refused
from iclr24.paperkit.runner.testing import check_retrain_first_steps
from iclr24.paperkit.shipped import checkpoints_dir
from iclr24.paperkit.shipped import model_folder
from iclr24.paperkit.shipped import shipped_commands
from iclr24.paperkit.shipped import training_label


def _argv(cmd: str) -> list[str]:
    """A command's words without ``--out X`` (the installed provenance records ``--out OUT``)."""
    a = shlex.split(cmd)
    if "--out" in a:
        i = a.index("--out")
        del a[i : i + 2]
    return a


def test_commands_json_is_the_reproduce_table_paired_over_seeds():
    assert shipped_commands(PACKAGE) == CHECKPOINTS
    assert set(CHECKPOINTS) == {f"poly-mnist-{m}-s{s}" for m in ("cmvae", "mmvae") for s in MNIST_SEEDS}
    assert (
        len(MNIST_SEEDS) == 3 and 100 not in MNIST_SEEDS
    )  # 3 per arm; the calibration seed is never shipped
    for s in MNIST_SEEDS:  # a pair differs only in --model: same data, budget and seed
        a, b = (_argv(CHECKPOINTS[f"poly-mnist-{m}-s{s}"]) for m in ("cmvae", "mmvae"))
        i, j = a.index("--model"), b.index("--model")
        assert (a[i + 1], b[j + 1]) == ("cmvae", "mmvae")
        assert a[:i] + a[i + 2 :] == b[:j] + b[j + 2 :]
        assert f"--epochs {MNIST_EPOCHS}" in " ".join(a) and f"--seed {s}" in " ".join(a)


@pytest.mark.parametrize("name", sorted(CHECKPOINTS))
def test_a_shipped_checkpoint_loads_with_its_sha_checked_and_is_labelled(name, tmp_path):
    folder = model_folder(RunConfig(mode="quick", out=tmp_path), PACKAGE, name)  # sha256 verified
    assert folder == checkpoints_dir(PACKAGE) / name
    prov = json.loads((folder / "provenance.json").read_text())
    assert _argv(prov["command"]) == _argv(CHECKPOINTS[name]) and prov["seed"] == int(name[-1])
    assert prov["steps"] == MNIST_EPOCHS * 47 and prov["cpu_seconds"] > 0
    assert isinstance(prov["losses"], dict) and {str(s) for s in range(1, 21)} <= set(prov["losses"])
    model = CMVAE.from_pretrained(folder)
    assert (type(model).__name__ == "MMVAEPlus") == ("mmvae" in name)
    assert model.spec["input_dims"] == [784] * 3 and model.spec["hidden"] == [128, 128]
    label = training_label(folder)
    assert label.startswith("`cmvae train --data poly_mnist") and "Adam steps" in label


def test_a_damaged_checkpoint_is_refused(tmp_path):
    check_damaged_model_refused(checkpoints_dir(PACKAGE) / "poly-mnist-cmvae-s0", tmp_path)


@pytest.mark.slow  # loads MNIST and trains one epoch (47 Adam steps) of the recorded command
@pytest.mark.parametrize("name", ["poly-mnist-cmvae-s0", "poly-mnist-mmvae-s1"])
def test_retraining_the_first_steps_gives_the_recorded_losses(name, tmp_path):
    """One epoch instead of the recorded 160: the learning rate is constant and the shuffling is drawn epoch by
    epoch from the seed, so the first 20 steps are the recorded run's (compared at steps 1-20)."""
    from iclr24.paperkit.data import load_mnist
    from iclr24.paperkit.data.folder import DataMissing

    try:
        load_mnist(None)
    except DataMissing:
        pytest.skip("MNIST is not in the data folder (iclr24 data get mnist)")
    check_retrain_first_steps(
        checkpoints_dir(PACKAGE) / name, tmp_path / "re", {"--epochs": "1"}, range(1, 21)
    )


def test_claims_table_kinds_and_where_each_claim_runs():
    rows = {c.id: c for c in CLAIMS}
    assert PAPER.claims == CLAIMS
    assert [i for i, c in rows.items() if c.kind == "headline"] == ["mnist_acc"]
    assert {c.kind for c in CLAIMS} <= {"headline", "supporting", "check"}
    assert rows["mnist_acc"].better == "higher" and rows["mnist_acc"].margin == 0.0
    for i in ("mnist_acc", "mnist_k_star", "refinement"):
        assert rows[i].modes == ("quick", "full")  # the checkpoint claims are decided in quick too
    for i in ("digits_acc", "digits_coherence"):
        assert rows[i].modes == ("full",)
    assert rows["mnist_k_star"].rule == "ours >= 8 and ours <= 12"
    assert tuple(rows["mnist_acc"].evaluated_seeds("full")) == MNIST_SEEDS
