import json
from pathlib import Path

import pytest

from iclr24.ncde_bounds.cli import main
from iclr24.ncde_bounds.reproduce import PAPER
from iclr24.paperkit.testing import check_cli_contract, check_paper_smoke, run_readme_blocks


@pytest.mark.slow  # trains 6 tiny models and draws 3 plots
def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=6)
    names = " ".join(c.claim for c in cs.claims)
    assert "smooth" in names and "brownian" in names and "trained NCDE" in names and "soft" in names
    assert {"oracle_bias.png", "trained_vs_k.png", "gap_vs_proxy.png"} <= {
        Path(a).name for a in cs.to_dict()["artifacts"]
    }


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_cli_bias_and_train_end_to_end(tmp_path, capsys):
    assert (
        main(
            [
                "bias",
                "--series",
                "6",
                "--n-fine",
                "64",
                "--ks",
                "4,8",
                "--out",
                str(tmp_path / "b"),
                "--quiet",
            ]
        )
        == 0
    )
    rows = json.loads((tmp_path / "b" / "bias.json").read_text())["rows"]
    assert [r["K"] for r in rows] == [4, 8] and rows[0]["mse"] > rows[1]["mse"]
    assert (tmp_path / "b" / "bias.png").stat().st_size > 0
    out = tmp_path / "t"
    assert (
        main(
            [
                "train",
                "--series",
                "8",
                "--k",
                "4",
                "--epochs",
                "2",
                "--substeps",
                "1",
                "--out",
                str(out),
                "--quiet",
            ]
        )
        == 0
    )
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["loss"] > 0 and (out / "model.pt").is_file()
    import torch

    state = torch.load(out / "model.pt", weights_only=True)
    assert "vector_field.layers.0.weight" in state
    # user errors: one line, exit 2
    assert main(["bias", "--ks", "3", "--series", "2", "--n-fine", "64", "--out", str(tmp_path / "c")]) == 2
    assert main(["train", "--ts-file", str(tmp_path / "missing.ts"), "--out", str(tmp_path / "d")]) == 2
    err = capsys.readouterr().err
    assert "dividing" in err and "missing.ts" in err


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        Path(__file__).parents[1] / "README.md",
        cwd=tmp_path,
        values={
            0: {
                "err": "{k: float(r['sq_err'].mean()) for k, r in bias.items()}",
                "y_hat": "list(y_hat.shape)",
            }
        },
    )
    assert res["err"]["4"] > res["err"]["32"]
    assert res["y_hat"] == [3, 1]


@pytest.mark.slow  # two torchrun ranks (gloo) and one single-process run of the same training
def test_torchrun_data_parallel_matches_one_process(tmp_path):
    import torch

    from iclr24.paperkit.distributed import run_torchrun

    common = ["train", "--series", "8", "--k", "4", "--epochs", "3", "--substeps", "1", "--quiet"]
    run_torchrun(
        ["-m", "iclr24.ncde_bounds.cli", *common, "--out", str(tmp_path / "two")], nproc=2, timeout=600
    )
    assert main([*common, "--out", str(tmp_path / "one")]) == 0
    two = torch.load(tmp_path / "two" / "model.pt", weights_only=True)
    one = torch.load(tmp_path / "one" / "model.pt", weights_only=True)
    assert all(torch.allclose(two[k], one[k], atol=1e-5) for k in one)
    assert json.loads((tmp_path / "two" / "metrics.json").read_text())["processes"] == 2


def test_mode_configs_fit_their_budgets():
    """Quick does not train (B) (gated in full only, decided on calibration seeds) but names the same grids in its
    skipped record; full gates it on four, plus the real set over three paired seeds; both stay in their CPU
    budgets."""
    from iclr24.ncde_bounds.reproduce import FULL, QUICK

    assert (min(QUICK.b_ks), max(QUICK.b_ks)) == (4, 32) and QUICK.real_dataset is None
    assert not QUICK.run_b and not QUICK.gate_b and FULL.run_b
    assert FULL.b_ks == (4, 8, 16, 32) and FULL.b_seeds == 3 and FULL.real_dataset == "BasicMotions"
    assert FULL.gate_b and FULL.real_seeds == 3 and FULL.real_rates[0] == 1
    assert FULL.b_train.epochs >= QUICK.b_train.epochs and FULL.c_seeds >= QUICK.c_seeds

    def work(c):  # training series x intervals x substeps x epochs of (B), (C) and the real set, all seeds
        b = c.b_seeds * c.b_train.epochs * c.b_train.substeps * c.b_n * sum(c.b_ks) * c.run_b
        cc = c.c_seeds * c.c_train.epochs * c.c_train.substeps * c.c_n_train * sum(c.c_ks)
        # BasicMotions: 40 series of length 100, every r-th observation kept
        real = (
            c.real_seeds
            * c.real_train.epochs
            * c.real_train.substeps
            * 40
            * sum(99 // r for r in c.real_rates)
        )
        return b + cc + (real if c.real_dataset else 0)

    # measured ~2e-5 CPU s per unit (RK4 x 1, one thread, with the GRU and evaluation; 2026-12-01: 94 s of CPU for
    # 4.8e6 units; full with one real seed: 419 s of CPU for 1.87e7); quick without (B) is 1.6e6 units of (C) on
    # top of ~20 CPU s of start-up and (A): quick ~ a minute, full <= 10 minutes
    assert work(QUICK) <= 2.0e6 and work(FULL) <= 2.4e7


def test_quick_does_not_train_b_and_says_why(tmp_path):
    import dataclasses

    from iclr24.ncde_bounds.reproduce import B_QUICK_CALIBRATION, QUICK, SMOKE, claim_trained
    from iclr24.paperkit import ClaimSet, RunConfig

    class NoTraining:
        def update(self, n):
            raise AssertionError("(B) trained a model although run_b is False")

    cs = ClaimSet("ncde-bounds", RunConfig(mode="quick", out=tmp_path))
    claim_trained(cs, dataclasses.replace(SMOKE, run_b=False, b_ks=QUICK.b_ks), 0, NoTraining())
    (c,) = cs.claims
    assert c.status == "skipped" and "MSE(K = 4) >= 1.5 x MSE(K = 32)" in c.claim
    assert "--full only" in c.message and B_QUICK_CALIBRATION in c.message and "seed 1000" in c.message
    assert not list(tmp_path.glob("*.png"))


def _readme_modes_table() -> dict[str, str]:
    """Row label -> quick cell of the README's "What the modes run" table."""
    text = (Path(__file__).parents[1] / "README.md").read_text()
    start = text.index("What the modes run")
    rows = {}
    for line in text[start:].splitlines()[2:]:
        if not line.startswith("|"):
            if rows:
                break
            continue
        cells = [x.strip() for x in line.strip("|").split("|")]
        rows[cells[0]] = cells[1]
    return rows


def test_readme_states_the_quick_config():
    from iclr24.ncde_bounds.reproduce import QUICK

    q = _readme_modes_table()
    ks = QUICK.oracle_ks
    assert q["(A) oracle"] == (
        f"{QUICK.oracle_n} paths per family, K = {ks[0]}..{ks[-1]}, irregular K = {QUICK.irregular_k}"
    )
    assert not QUICK.run_b and q["(B) trained"].startswith("not trained (gated in `--full` only")
    ct = QUICK.c_train
    assert q["(C) gap"] == (
        f"n_train = {QUICK.c_n_train} / n_test = {QUICK.c_n_test}, K in {{{', '.join(map(str, QUICK.c_ks))}}}, "
        f"{QUICK.c_seeds} seeds, {ct.epochs} epochs, {ct.solver} x{ct.substeps}"
    )
    assert q["real data"] == "-" and QUICK.real_dataset is None


def test_single_class_training_file_is_refused(tmp_path, capsys):
    ts = tmp_path / "One_TRAIN.ts"
    ts.write_text(
        "@problemName One\n@timeStamps false\n@missing false\n@univariate true\n@equalLength true\n"
        "@classLabel true up down\n@data\n0.0,1.0,2.0:up\n2.0,1.0,0.0:up\n"
    )
    out = tmp_path / "o"
    assert main(["train", "--ts-file", str(ts), "--epochs", "1", "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "every training series has class 'up'" in err[0]
    assert not (out / "model.pt").exists()


def test_star_import_gives_every_public_name():
    from iclr24.paperkit.testing import check_star_import

    check_star_import("iclr24.ncde_bounds")


def test_ungated_b_is_reported_with_its_numbers(tmp_path):
    import dataclasses

    from iclr24.ncde_bounds.reproduce import SMOKE, claim_trained
    from iclr24.paperkit import ClaimSet, RunConfig

    class Bar:
        def update(self, n):
            pass

    cs = ClaimSet("ncde-bounds", RunConfig(mode="quick", out=tmp_path))
    claim_trained(cs, dataclasses.replace(SMOKE, gate_b=False), 0, Bar())
    (c,) = cs.claims
    assert c.status == "skipped" and c.ours > 0 and c.baseline > 0
    assert "not gated" in c.message and f"ratio {c.ours / c.baseline:.2f}" in c.message
