import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np

import iclr24.maxent_moco.reproduce as rep
from iclr24.maxent_moco.reproduce import PAPER
from iclr24.paperkit import Claim
from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit.power import CALIBRATION_FILE
from iclr24.paperkit.power import calibration_table
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing_workflow import load_script

README = Path(__file__).resolve().parents[1] / "README.md"
CALIBRATE = Path(__file__).resolve().parents[1] / "scripts" / "calibrate.py"

# the planned paired seeds of the sample-based rows, from the calibrations in the table (docs/calibration.md)
PLANNED = {
    ("samples_lam1.0", "quick"): 4,
    ("samples_lam0.5", "quick"): 3,
    ("samples_lam0.1", "quick"): 7,
    ("samples_lam1.0", "full"): 4,
    ("samples_lam0.5", "full"): 6,
    ("samples_lam0.1", "full"): 7,
}


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)  # schema, finite numbers, artefacts exist, no error verdicts
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "maxent-moco" for c in claims)
    assert all(c.verdict == "smoke" for c in claims)
    # the exact-query claims are deterministic and already hold at smoke size
    exact = [c for c in claims if not c.claim.startswith("Samples")]
    assert len(exact) == 6 and all(c.rule_value for c in exact)  # smoke: no verdict, the rule still evaluates
    for c in claims:
        for a in c.artifacts:
            assert (tmp_path / a).exists()
    curves = json.loads((tmp_path / "curves.json").read_text())
    assert set(curves["exact"]) == {"pe", "control", "garnet", "maze"}
    (gate,) = claims.facts
    assert gate.value == 1  # the official gate: corrected from the first plan on
    # the control claim gates MoCoVI at iteration 4 against VI at iteration 6 and keeps both whole curves
    (ctl,) = [c for c in claims if c.claim.startswith("Control")]
    assert (
        len(ctl.details["VI_error_by_iteration"]) == 16
        and ctl.baseline == ctl.details["VI_error_by_iteration"][6]
    )
    # OS-Dyna stands among the baselines of the sample claim
    (smp,) = [c for c in claims if c.claim.startswith("Samples")]
    assert "OS-Dyna" in smp.claim and "OS-Dyna" in smp.details["mean_error"] and smp.kind == "headline"
    # decided over paired seeds: per seed, MoCoDyna against the best of the three baselines on that seed
    per_seed = smp.details["per_seed_mean_error"]
    assert smp.paired["seeds"] == [0, 1] and smp.paired["better"] == "lower" and smp.paired["margin"] == 0.0
    assert smp.paired["ours"] == per_seed["MoCoDyna(d=2)"]
    best = [min(v) for v in zip(*(per_seed[k] for k in ("Q-learning", "Dyna", "OS-Dyna")))]
    assert smp.paired["baseline"] == best
    assert any(c.claim.startswith("Maze") for c in claims)


def test_the_claims_table():
    kinds = {r.id: r.kind for r in rep.CLAIMS}
    assert [i for i, k in kinds.items() if k == "headline"] == ["pe_lam1", "control_lam1", "samples_lam1.0"]
    assert "check" not in kinds.values()  # no strawman: every row is a result of the paper
    for r in rep.CLAIMS:
        assert r.modes == ("quick", "full")  # every claim is decided in quick too
        if r.id.startswith("samples"):
            assert r.better == "lower" and r.margin == 0.0
        else:
            assert r.rule and not r.calibration and "deterministic" in r.seeds_why


def test_calibration_seeds_are_never_evaluated_and_the_plans_decide():
    for (row, mode), n in PLANNED.items():
        r = rep.ROWS[row]
        cal = r.calibration[mode]
        assert not set(cal.seeds) & set(r.seeds[mode]) and set(cal.seeds) <= set(rep.CALIBRATION_SEEDS)
        plan = r.plan(mode)
        assert plan.decidable and plan.seeds == n, (row, mode, plan.reason)
    assert {r.id for r in rep.CLAIMS if r.calibration} == {k[0] for k in PLANNED}


def test_budgets_fit_the_caps_with_headroom():
    for mode, cap in (("quick", 60), ("full", 600)):
        planned = sum(r.plan(mode).needed_seconds for r in rep.CLAIMS if r.calibration)
        assert planned <= 0.6 * cap, (mode, planned)


def test_quick_config_is_what_the_readme_says():
    exact, sample = rep.QUICK
    assert (sample.n_steps, sample.ds, sample.lams) == (30_000, (2,), (0.1, 0.5, 1.0))
    assert sample.steps(0.1) == rep.LOW_LAM_STEPS and sample.steps(0.5) == 30_000
    assert (sample.planning_interval, sample.val_queue_interval) == (2000, 6000)  # the paper's intervals
    assert exact == rep.FULL[0] and rep.FULL[1].n_steps == 150_000 and rep.FULL[1].steps(0.1) == 150_000
    text = " ".join(README.read_text().split())
    assert f"lambda = 0.1 on {rep.LOW_LAM_STEPS // 1000}k samples" in text
    assert "3.5e-4" in text and "1e-12" in text  # the official solver's constraint violation against ours


def test_a_lambda_with_its_own_sample_count_runs_on_it(tmp_path):
    cfg = rep.SampleConfig(
        lams=(0.1, 1.0), ds=(2,), n_steps=1000, planning_interval=250, val_queue_interval=500, eval_every=250,
        steps_by_lam=((0.1, 2000),),
    )  # fmt: skip
    runs = rep._sample_runs(cfg, {0.1: [0, 1], 1.0: [0, 1, 2]}, show=False)
    assert runs["steps"][0.1][-1] == 2000 and runs["steps"][1.0][-1] == 1000
    assert runs["errors"][0.1]["MoCoDyna(d=2)"].shape[0] == 2 and runs["errors"][1.0]["Dyna"].shape[0] == 3
    cs = ClaimSet("maxent-moco", RunConfig(mode="smoke", out=tmp_path, progress=False))
    rep._sample_claims(cs, runs, cfg, {0.1: [0, 1], 1.0: [0, 1]}, [])
    low, high = cs.claims
    assert low.details["n_samples"] == 2000 and high.details["n_samples"] == 1000
    assert (
        low.paired["seeds"] == [0, 1] and len(high.paired["ours"]) == 2
    )  # each row reads its own first seeds


def test_an_undecidable_row_is_recorded_not_run(tmp_path, monkeypatch):
    from iclr24.paperkit.power import Calibration

    flat = Calibration(seeds=(200, 201, 202), ours=(0.1, 0.2, 0.3), baseline=(0.1, 0.25, 0.2), seconds_per_seed=50.0,
                       measured="test")  # fmt: skip
    row = replace(rep.ROWS["samples_lam0.1"], calibration={"quick": flat})
    monkeypatch.setitem(rep.ROWS, "samples_lam0.1", row)
    plans = rep._sample_plans(rep.QUICK[1], "quick", 0)
    assert plans[0.1] is None and plans[1.0]
    cs = ClaimSet("maxent-moco", RunConfig(mode="quick", out=tmp_path, progress=False))
    cfg = replace(rep.QUICK[1], lams=(0.1,))
    rep._sample_claims(cs, {"errors": {}, "steps": {}, "ablations": {}}, cfg, plans, [])
    (c,) = cs.claims
    assert c.status == "undecidable" and c.kind == "supporting" and "paired seeds" in c.message
    assert np.isfinite(c.details["power"]["needed_seconds"] or np.inf)


def test_the_rows_calibrations_are_the_files_numbers():
    table = calibration_table("iclr24.maxent_moco")
    assert table["measured"] == rep.MEASURED and list(table["rows"]) == ["quick", "full"]
    for mode, by_lam in table["rows"].items():
        assert list(by_lam) == ["1.0", "0.5", "0.1"]
        for lam, row in by_lam.items():
            cal = rep.ROWS[f"samples_lam{lam}"].calibration[mode]
            assert (cal.seeds, cal.ours, cal.baseline) == (row["seeds"], row["ours"], row["baseline"])
            assert cal.seconds_per_seed == row["cpu_seconds_per_seed"] and cal.measured == table["measured"]
    assert rep.ROWS["samples_lam1.0"].calibration["full"].ours[0] == 0.0184142


def test_calibrate_write_merges_what_the_run_measured(tmp_path):
    script = load_script(CALIBRATE)  # scripts/calibrate.py, not run as __main__
    path = tmp_path / CALIBRATION_FILE
    shutil.copy(script.CALIBRATION_JSON, path)
    before = json.loads(path.read_text())
    full_arms = rep.SampleConfig(lams=(0.1, 0.25), ds=(1, 2, 3), n_steps=150_000, ablations=True)
    results = [
        {"lam": 0.1, "steps": 150_000, "seeds": [201, 208], "ours": [0.5, 0.6], "baseline": [0.7, 0.8]},
        {"lam": 0.25, "steps": 150_000, "seeds": [201, 208], "ours": [0.5, 0.6], "baseline": [0.7, 0.8]},
    ]
    said = script.write_calibration(path, results, full_arms, 2.345, "test run")
    assert said[0].startswith("lambda 0.1 at 150000 samples -> full row: per-seed values and CPU s")
    assert said[1] == "lambda 0.25 at 150000 samples: no row runs it, not written"
    after = json.loads(path.read_text())
    row, old = after["rows"]["full"]["0.1"], before["rows"]["full"]["0.1"]
    assert row["seeds"] == [*range(200, 208), 208]  # seed 208 added, the others kept in their order
    assert row["ours"] == [old["ours"][0], 0.5, *old["ours"][2:], 0.6]
    assert row["baseline"] == [old["baseline"][0], 0.7, *old["baseline"][2:], 0.8]
    assert row["cpu_seconds_per_seed"] == 2.35 and after["measured"] == "test run"
    assert after["rows"]["quick"] == before["rows"]["quick"] and after["note"] == before["note"]
    assert after["rows"]["full"]["1.0"] == before["rows"]["full"]["1.0"]
    # quick's arms on full's sample count: the per-seed values map, the CPU s do not
    quick_arms = rep.SampleConfig(lams=(0.5,), ds=(2,), n_steps=150_000)
    results = [{"lam": 0.5, "steps": 150_000, "seeds": [200], "ours": [0.1], "baseline": [0.2]}]
    (line,) = script.write_calibration(path, results, quick_arms, 9.0, "test run 2")
    assert "per-seed values (CPU s kept: these are not full's arms)" in line
    row = json.loads(path.read_text())["rows"]["full"]["0.5"]
    assert row["ours"][0] == 0.1 and row["cpu_seconds_per_seed"] == 5.3
    # nothing maps: the file (its provenance line too) is left as it was
    text = path.read_text()
    results = [{"lam": 1.0, "steps": 1000, "seeds": [200], "ours": [0.1], "baseline": [0.2]}]
    assert script.write_calibration(path, results, quick_arms, 9.0, "test run 3") == [
        "lambda 1.0 at 1000 samples: no row runs it, not written"
    ]
    assert path.read_text() == text
