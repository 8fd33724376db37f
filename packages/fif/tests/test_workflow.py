"""Train -> model folder -> from_pretrained -> evaluate, your own Dataset/DataLoader, per-step logging, and exact
resume under torchrun (every rank's generator in the checkpoint)."""

import json

import numpy as np
import pytest
import torch
from torch.utils.data import TensorDataset

from iclr24.fif import FIFModel
from iclr24.fif import FreeFormInjectiveFlow
from iclr24.fif import TrainConfig
from iclr24.fif import conv_pair
from iclr24.fif import fit
from iclr24.fif import resnet_pair
from iclr24.fif.cli import main
from iclr24.fif.data import toy_splits
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import load_pretrained
from iclr24.paperkit.runner.testing_workflow import check_unlabelled_data_forms
from iclr24.paperkit.runner.testing_workflow import same_weights

CFG = TrainConfig(steps=10, batch_size=32, seed=3)


@pytest.fixture(scope="module")
def sine():
    return toy_splits("sine", 256, 64, seed=0)[0]


def _model(seed=0):
    torch.manual_seed(seed)
    return FIFModel(data_dim=2, latent_dim=1, n_blocks=1, widths=[16], beta=10.0, noise=0.05)


def test_fif_model_is_the_pair_the_cli_used_to_build_draw_for_draw():
    torch.manual_seed(0)
    old = FreeFormInjectiveFlow(
        *resnet_pair(2, 1, 2, [16, 16]), data_dim=2, latent_dim=1, beta=10.0, noise=0.05
    )
    torch.manual_seed(0)
    new = FIFModel(data_dim=2, latent_dim=1, n_blocks=2, widths=[16, 16], beta=10.0, noise=0.05)
    assert same_weights(old, new) and old.architecture() == new.architecture()
    torch.manual_seed(0)
    old = FreeFormInjectiveFlow(*conv_pair([1, 8, 8], 4, ch_factor=4, hidden=16), data_dim=64, latent_dim=4)
    torch.manual_seed(0)
    new = FIFModel(net="conv", image_shape=[1, 8, 8], data_dim=64, latent_dim=4, ch_factor=4, hidden=16)
    assert same_weights(old, new)


def test_model_folder_round_trip(tmp_path, sine):
    model = _model()
    fit(model, sine, CFG, show_progress=False, log_dir=tmp_path / "logs")
    model.save_pretrained(tmp_path / "m", provenance={"steps": CFG.steps})
    for back in (FIFModel.from_pretrained(tmp_path / "m"), load_pretrained(tmp_path / "m")):
        assert isinstance(back, FIFModel) and same_weights(back, model) and back.noise == model.noise
        g = torch.Generator().manual_seed(1)
        assert torch.equal(
            back.sample(5, generator=g), model.sample(5, generator=torch.Generator().manual_seed(1))
        )
    rows = [json.loads(line) for line in (tmp_path / "logs" / "metrics.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "lr" in r] == list(range(1, CFG.steps + 1))
    with pytest.raises(InputError, match="FIFModel"):  # your own nets: no config to rebuild them from
        FreeFormInjectiveFlow(*resnet_pair(2, 1, 1, [8]), data_dim=2, latent_dim=1).save_pretrained(
            tmp_path / "o"
        )
    with pytest.raises(InputFileError):
        FIFModel.from_pretrained(tmp_path / "logs")


def test_your_own_dataset_or_dataloader_gives_the_same_run(sine):
    def run(data):
        m = _model()
        return fit(m, data, CFG, show_progress=False, log_every=1)["loss"], m

    check_unlabelled_data_forms(run, sine, batch_size=50)
    with pytest.raises(InputError, match="columns"):
        fit(_model(), TensorDataset(torch.rand(20, 3)), CFG, show_progress=False)
    with pytest.raises(InputError, match="NaN"):
        fit(_model(), TensorDataset(sine * float("nan")), CFG, show_progress=False)


def test_cli_train_writes_the_model_folder_and_sample_reads_it(tmp_path, capsys):
    out = tmp_path / "run"
    rc = main(["train", "--data", "sine", "--n", "200", "--steps", "6", "--batch-size", "32", "--width", "16",
               "--out", str(out), "--quiet", "--log-dir", str(tmp_path / "logs")])  # fmt: skip
    assert rc == 0 and "FIFModel.from_pretrained" in capsys.readouterr().out
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("fif train --data sine") and prov["meta"]["data"] == "sine"
    assert prov["steps"] == 6 and prov["cpu_seconds"] > 0 and (tmp_path / "logs" / "metrics.jsonl").is_file()
    for name, ck in (("a", out / "model"), ("b", out / "model.pt"), ("c", out)):
        assert main(["sample", "--checkpoint", str(ck), "--n", "5", "--out", str(tmp_path / name)]) == 0
    a, b, c = (np.load(tmp_path / n / "samples.npy") for n in "abc")
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert main(["nll", "--checkpoint", str(out / "model"), "--data", "sine", "--n", "20",
                 "--out", str(tmp_path / "n")]) == 0  # fmt: skip


_RANK_SCRIPT = """
import json, os, sys
import torch
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed
from iclr24.fif import FIFModel, TrainConfig, fit, toy_splits

info = init_distributed(backend="gloo", device="cpu")
folder = sys.argv[1]
x = toy_splits("sine", 256, 16, seed=0)[0]
cfg = TrainConfig(steps=8, batch_size=16, seed=1)

def model():
    torch.manual_seed(0)
    return FIFModel(data_dim=2, latent_dim=1, n_blocks=1, widths=[8], noise=0.05)

full = fit(model(), x, cfg, show_progress=False, log_every=1)
fit(model(), x, cfg, checkpoint=folder + "/half.pt", until=4, show_progress=False, log_every=1)
resumed = fit(model(), x, cfg, checkpoint=folder + "/half.pt", resume=True, show_progress=False, log_every=1)
json.dump({"full": full["loss"], "resumed": resumed["loss"]}, open(f"{folder}/r{info.rank}.json", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two processes under torchrun (gloo)
def test_torchrun_resume_continues_every_rank_exactly(tmp_path):
    from iclr24.paperkit.runner.testing import run_rank_script

    ranks = run_rank_script(_RANK_SCRIPT, tmp_path, nproc=2, timeout=300)
    for r in ranks:  # each rank's own batch losses: equal only if each rank resumes its own generator
        assert r["resumed"] == r["full"] and len(r["full"]) == 8
    assert ranks[0]["full"] != ranks[1]["full"]  # the ranks do draw different batches
    ck = torch.load(tmp_path / "half.pt", weights_only=True)
    assert len(ck["generators"]) == 2 and not torch.equal(ck["generators"][0], ck["generators"][1])


def test_cli_train_is_reproducible_from_its_seed(tmp_path):
    digests = []
    for name, seed in (("a", "1"), ("b", "1"), ("c", "2")):
        args = ["train", "--data", "sine", "--n", "100", "--steps", "3", "--width", "8", "--seed", seed]
        assert main([*args, "--out", str(tmp_path / name), "--quiet"]) == 0
        digests.append(
            json.loads((tmp_path / name / "model" / "provenance.json").read_text())["weights_sha256"]
        )
    assert digests[0] == digests[1] != digests[2]
