import json
from pathlib import Path

import pytest

from iclr24.ncde_bounds.cli import main
from iclr24.ncde_bounds.reproduce import CLAIMS
from iclr24.ncde_bounds.reproduce import PAPER
from iclr24.ncde_bounds.reproduce import ROWS
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import run_readme_blocks


@pytest.mark.slow  # trains 4 tiny models and draws 2 plots
def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    assert {c.claim for c in cs.claims} == {c.claim for c in CLAIMS if "quick" in c.modes}
    assert {"oracle_bias.png", "trained_vs_k.png"} <= {Path(a).name for a in cs.to_dict()["artifacts"]}


def test_gap_claim_reports_the_vacuous_bound(tmp_path):
    """(C) (full only): the realised gaps paired per seed, and the bound's complexity term beside them as a fact."""
    import dataclasses

    from iclr24.ncde_bounds.reproduce import SMOKE
    from iclr24.ncde_bounds.reproduce import claim_gap
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    class Bar:
        def update(self, k):
            pass

    cs = ClaimSet("ncde-bounds", RunConfig(mode="full", out=tmp_path))
    claim_gap(cs, dataclasses.replace(ROWS["gap_vs_tv"], calibration=None), SMOKE, [3, 4], Bar())
    (c,) = cs.claims
    runs = c.details["runs"]
    assert c.paired["seeds"] == [3, 4] and c.paired["ours"] == [r["gap"] for r in runs if r["K"] == 16]
    assert c.paired["baseline"] == [r["gap"] for r in runs if r["K"] == 4] and c.kind == "supporting"
    (vac,) = [f for f in cs.facts if "vacuous" in f.name]
    lo = c.details["log10_complexity_term"]["min"]
    assert vac.value.startswith(f"{lo:.1f}") and (tmp_path / "gap_vs_proxy.png").exists()


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_cli_bias_and_train_end_to_end(tmp_path, capsys, train_argv):
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
    assert main(train_argv(out)) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["test"]["loss"] > 0 and (out / "model" / "model.safetensors").is_file()
    from iclr24.paperkit.pretrained import read_model_folder

    _, state, _ = read_model_folder(out / "model")
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
    from iclr24.ncde_bounds import NCDE

    two = NCDE.from_pretrained(tmp_path / "two" / "model").state_dict()
    one = NCDE.from_pretrained(tmp_path / "one" / "model").state_dict()
    assert all(torch.allclose(two[k], one[k], atol=1e-5) for k in one)
    assert json.loads((tmp_path / "two" / "metrics.json").read_text())["processes"] == 2


def test_claims_table_kinds_seeds_and_plans():
    """Kinds: the trained-NCDE comparison is the headline; the realised gap against total variation (a reading of a
    vacuous bound) and the real set are supporting; the oracle rates (numerical analysis) are checks. Paired rows
    take their seeds from the power rule on calibration seeds that are never evaluated."""
    from iclr24.ncde_bounds.reproduce import CALIBRATION_SEEDS

    kinds = {i: c.kind for i, c in ROWS.items()}
    assert [i for i, k in kinds.items() if k == "headline"] == ["trained_vs_k"]
    assert {i for i, k in kinds.items() if k == "supporting"} == {"gap_vs_tv", "basicmotions"}
    assert {i for i, k in kinds.items() if k == "check"} == {
        f"oracle_{f}_{w}" for f in ("smooth", "brownian") for w in ("slope", "irregular")
    }
    for c in CLAIMS:
        for mode, cal in c.calibration.items():
            assert set(cal.seeds) <= set(CALIBRATION_SEEDS) and not set(cal.seeds) & set(c.seeds[mode])
    plans = {(c.id, m): c.plan(m) for c in CLAIMS for m in c.modes if c.calibration}
    # BasicMotions: the finest and the coarsest sampling tie within the seed spread; no affordable plan decides it
    real = plans.pop(("basicmotions", "full"))
    assert not real.decidable and real.needed_seeds > 100 and abs(real.mean) < 0.05
    assert all(p.decidable for p in plans.values()), {
        k: p.reason for k, p in plans.items() if not p.decidable
    }
    assert {k: p.seeds for k, p in plans.items()} == PLANNED_SEEDS
    assert ROWS["trained_vs_k"].factor == 1.0 and ROWS["trained_vs_k"].modes == ("quick", "full")
    assert ROWS["gap_vs_tv"].modes == ROWS["basicmotions"].modes == ("full",)
    assert ROWS["basicmotions"].data == "basicmotions" and PAPER.data == ("basicmotions",)
    # CPU of the planned seeds at the calibrated (loaded, so inflated) seconds per seed
    cost = {
        m: sum(p.seeds * p.seconds_per_seed for (_, mm), p in plans.items() if mm == m)
        for m in ("quick", "full")
    }
    assert cost["quick"] <= 45 and cost["full"] <= 480


PLANNED_SEEDS = {
    ("trained_vs_k", "quick"): 5,
    ("trained_vs_k", "full"): 3,
    ("gap_vs_tv", "full"): 21,
}


def test_b_trains_each_seed_on_its_own_data(tmp_path):
    """(B) trains every seed of its plan on its own paths, noise, grids and initialisation; the grids between the
    two the claim compares only on the first ``b_figure_seeds`` seeds (for the figure), the GRU on the first."""
    import dataclasses

    from iclr24.ncde_bounds.reproduce import SMOKE
    from iclr24.ncde_bounds.reproduce import claim_trained
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig

    class Bar:
        n = 0

        def update(self, k):
            Bar.n += k

    runs = {}
    cs = ClaimSet("ncde-bounds", RunConfig(mode="quick", out=tmp_path))
    spec = dataclasses.replace(ROWS["trained_vs_k"], calibration=None)
    c = dataclasses.replace(SMOKE, b_ks=(4, 6, 8), b_figure_seeds=1, b_gru=True)
    claim_trained(cs, spec, c, [0, 1], Bar(), runs=runs)
    (a,) = cs.claims
    assert Bar.n == 2 and a.paired["seeds"] == [0, 1] and a.paired["factor"] == 1.0 and a.kind == "headline"
    assert set(runs[0]) == {4, 6, 8} and set(runs[1]) == {4, 8} and "gru_test_mse" in runs[0][4]
    assert "gru_test_mse" not in runs[1][4]
    assert runs[0][4]["test_mse"] != runs[1][4]["test_mse"]  # each seed: its own paths and initialisation
    assert a.paired["ours"] == [runs[s][4]["test_mse"] for s in (0, 1)]
    assert a.paired["baseline"] == [runs[s][8]["test_mse"] for s in (0, 1)]


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
    bt = QUICK.b_train
    assert q["(B) trained"] == (
        f"n = {QUICK.b_n} / {QUICK.b_n}, K in {{{', '.join(map(str, QUICK.b_ks))}}}, "
        f"{ROWS['trained_vs_k'].plan('quick').seeds} seeds (power rule), {bt.epochs} epochs, "
        f"{bt.solver.upper()} x{bt.substeps}"
    )
    assert q["(C) gap"] == "-" and "quick" not in ROWS["gap_vs_tv"].modes
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
    assert not (out / "model").exists() and not (out / "model.pt").exists()


def test_star_import_gives_every_public_name():
    from iclr24.paperkit.runner.testing import check_star_import

    check_star_import("iclr24.ncde_bounds")
