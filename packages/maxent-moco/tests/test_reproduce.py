import json

from iclr24.maxent_moco.reproduce import PAPER
from iclr24.paperkit import Claim
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    claims = check_paper_smoke(PAPER, tmp_path)  # schema, finite numbers, artefacts exist, no error verdicts
    assert claims and all(isinstance(c, Claim) for c in claims)
    assert all(c.paper == "maxent-moco" for c in claims)
    assert all(c.verdict == "smoke" for c in claims)
    # the exact-query claims are deterministic and already hold at smoke size
    exact = [c for c in claims if not c.claim.startswith("Samples")]
    assert len(exact) == 6 and all(c.rule_value for c in exact)  # smoke: no verdict, the rule still evaluates
    assert any(c.claim.startswith("Samples") for c in claims)
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
    assert "OS-Dyna" in smp.claim and "OS-Dyna" in smp.details["mean_error"]
    # decided over paired seeds: per seed, MoCoDyna against the best of the three baselines on that seed
    per_seed = smp.details["per_seed_mean_error"]
    assert smp.paired["seeds"] == [0] and smp.paired["better"] == "lower" and smp.paired["margin"] == 0.0
    assert smp.paired["ours"] == per_seed["MoCoDyna(d=2)"]
    best = [min(v) for v in zip(*(per_seed[k] for k in ("Q-learning", "Dyna", "OS-Dyna")))]
    assert smp.paired["baseline"] == best
    assert any(c.claim.startswith("Maze") for c in claims)


def test_quick_config_is_what_the_readme_says():
    from pathlib import Path

    from iclr24.maxent_moco.reproduce import FULL, QUICK, SAMPLE_FULL_ONLY_LAMS

    exact, sample = QUICK
    assert (sample.n_steps, sample.n_runs, sample.ds, sample.lams) == (30_000, 5, (2,), (0.1, 0.5, 1.0))
    assert (sample.planning_interval, sample.val_queue_interval) == (2000, 6000)  # the paper's intervals
    assert exact == FULL[0] and (FULL[1].n_steps, FULL[1].n_runs) == (150_000, 10)  # --full keeps its config
    assert SAMPLE_FULL_ONLY_LAMS == (0.1,)
    text = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "30k samples, on 5 seeds" in text and "lambda = 0.1 is gated in `--full` only" in text


def test_quick_records_the_full_only_lambda_as_skipped_with_its_numbers(tmp_path):
    import numpy as np

    from iclr24.maxent_moco.reproduce import BASELINES, SampleConfig, _sample_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = SampleConfig(lams=(0.1, 1.0), n_steps=10, n_runs=3, eval_every=5)
    rng = np.random.default_rng(0)
    errs = {k: rng.random((3, 3)) + (1.0 if k in BASELINES else 0.0) for k in (*BASELINES, "MoCoDyna(d=2)")}
    sruns = {"steps": np.array([0, 5, 10]), "errors": {0.1: errs, 1.0: errs}, "ablations": {}}
    claims = ClaimSet("maxent-moco", RunConfig(mode="quick", out=tmp_path, progress=False))
    _sample_claims(claims, sruns, cfg, 0, [], full_only=(0.1,))
    skipped, gated = claims
    assert skipped.status == "skipped" and "--full only" in skipped.message and "interval" in skipped.message
    assert skipped.ours == float(errs["MoCoDyna(d=2)"].mean(axis=1).mean()) and skipped.paired is None
    assert gated.status == "holds" and gated.paired["seeds"] == [0, 1, 2]
