"""The side-by-side script behind the README's "Why the clustering effect does not show at CPU scale"."""

import json
import sys
from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing_workflow import load_script

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gap_runs.py"


def test_gap_runs_refuses_the_evaluated_seeds(monkeypatch):
    mod = load_script(SCRIPT)
    monkeypatch.setattr(sys, "argv", ["gap_runs.py", "--seed", "0", "--epochs", "1"])
    with pytest.raises(SystemExit, match="evaluated seed"):
        mod.main()


def test_gap_runs_moves_one_knob_and_reports_the_diagnostics(monkeypatch, capsys):
    mod = load_script(SCRIPT)
    argv = ["gap_runs.py", "--seed", "100", "--n-train", "256", "--epochs", "1", "--hidden", "16",
            "--n-clusters-max", "12", "--beta", "2.5", "--mmvae"]  # fmt: skip
    monkeypatch.setattr(sys, "argv", argv)
    mod.main()
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["changed"] == {"epochs": 1, "beta": 2.5, "n_clusters_max": 12, "hidden": [16]}
    assert out["steps"] == 2 and 2 <= out["k_star"] <= 12 and len(out["h"]) == 13
    assert len(out["z_scale_sorted"]) == 10 and abs(sum(out["z_scale_sorted"]) - 10) < 0.01  # scales sum to d
    for k in (
        "acc_kstar",
        "acc_kmax",
        "acc_at_10_on_pruning_path",
        "cmvae_latent_kmeans_acc",
        "mmvae_kmeans_acc",
    ):
        assert 0 <= out[k] <= 100
