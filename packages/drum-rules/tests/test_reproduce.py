from dataclasses import replace

from iclr24.drum_rules.calibration import CALIBRATION_SEEDS
from iclr24.drum_rules.reproduce import CLAIMS
from iclr24.drum_rules.reproduce import PAPER
from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit.runner.testing import check_paper_smoke

ROWS = {c.id: c for c in CLAIMS}


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 7 and all(c.paper == "drum-rules" for c in cs)
    assert {c.claim for c in cs} == {c.claim for c in CLAIMS if "quick" in c.modes}
    assert [f.name for f in cs.facts][0] == "datasets checked"
    assert any("collected on" in f.name for f in cs.facts)  # by construction: a fact, not a claim
    assert not any("source_recall" in c.rule for c in cs)
    assert any(a.endswith("faithfulness.png") for a in cs.artifacts)


def test_claims_table_kinds_seeds_and_plans():
    """The table: headline claims are the abstract's (path extraction is incomplete / unsound, exact DRUM extraction
    is slow where MM/SM is fast); the faithfulness theorems are checks; the accuracy cost is supporting, its seeds
    from the power rule on calibration seeds disjoint from the evaluated pool."""
    kinds = {i: c.kind for i, c in ROWS.items()}
    assert [i for i, k in kinds.items() if k == "headline"] == [
        "path_incomplete",
        "path_unsound_normalised",
        "extraction_time",
    ]
    assert {i for i, k in kinds.items() if k == "supporting"} == {"accuracy_sm", "accuracy_mm"}
    assert {i for i, k in kinds.items() if k == "check"} == {
        "faithful_mm",
        "faithful_sm",
        "drum_explanations",
        "real_kinships",
        "real_umls",
        "real_nations",
    }
    for c in CLAIMS:
        for mode, cal in c.calibration.items():
            assert cal.seeds == CALIBRATION_SEEDS[mode] and not set(cal.seeds) & set(c.seeds[mode])
    plans = {(i, m): ROWS[i].plan(m) for i, m in (("accuracy_sm", "quick"), ("accuracy_sm", "full"))}
    plans["accuracy_mm", "full"] = ROWS["accuracy_mm"].plan("full")
    assert all(p.decidable and p.power == 0.9 for p in plans.values())
    assert {k: p.seeds for k, p in plans.items()} == {
        ("accuracy_sm", "quick"): 5,
        ("accuracy_sm", "full"): 4,
        ("accuracy_mm", "full"): 8,
    }
    assert ROWS["accuracy_mm"].modes == ("full",)  # quick cannot afford its seeds (docs/calibration.md)
    assert not [c for c in CLAIMS if "quick" in c.modes and c.plan("quick") and not c.plan("quick").decidable]
    assert (
        ROWS["accuracy_mm"].better == "lower" and ROWS["accuracy_mm"].margin == 0.0
    )  # MM's MRR below DRUM's
    assert ROWS["accuracy_sm"].better == "higher" and ROWS["accuracy_sm"].margin == 0.1
    assert ROWS["accuracy_mm"].evaluated_seeds("full", base=10)[:2] == [10, 11]  # offsets added to --seed
    assert all(c.modes == ("full",) for i, c in ROWS.items() if i.startswith("real_"))
    assert PAPER.claims == CLAIMS


def test_real_kg_row_runs_on_a_tiny_folder(tmp_path):
    """`--full` has one real-KG row per name in ``Paper.data``; the row runs end to end on a tiny folder."""
    from iclr24.drum_rules import synthetic
    from iclr24.drum_rules.reproduce import FULL
    from iclr24.drum_rules.reproduce import QUICK
    from iclr24.drum_rules.reproduce import SMOKE
    from iclr24.drum_rules.reproduce import _claim_real_kg
    from iclr24.drum_rules.reproduce import _setup

    assert PAPER.data == FULL.real_kgs and set(PAPER.data) == {"kinships", "umls", "nations"}
    assert QUICK.real_kgs == () and QUICK.rank == 2 and FULL.rank == 3  # quick: rank 2 (README, Differences)
    fam = synthetic.family(3, seed=0)
    E, R = fam.kg.entities, fam.kg.relations
    folder = tmp_path / "data" / "nations"
    folder.mkdir(parents=True)
    for name, rows in (("train", fam.kg.facts), ("valid", fam.valid), ("test", fam.test)):
        (folder / f"{name}.txt").write_text("".join(f"{E[h]}\t{R[r]}\t{E[t]}\n" for h, r, t in rows.tolist()))
    cfg = replace(SMOKE, real_kgs=("nations",), real_epochs=1, real_datasets=2)
    config = RunConfig(mode="full", out=tmp_path / "out", data_dir=tmp_path / "data", progress=False)
    claims = ClaimSet("drum-rules", config)
    _claim_real_kg(claims, ROWS["real_nations"], _setup(cfg, config), config, "nations")
    (real,) = claims.claims
    assert real.status not in ("error", "skipped") and real.details["data"] == "nations" and real.ours == 1.0
    assert real.kind == "check" and real.claim == ROWS["real_nations"].claim


def test_accuracy_claims_pair_seeds_each_with_its_own_models(tmp_path):
    """Each accuracy claim compares one variant with DRUM in MRR on every seed (its own KG, models trained alike);
    the run's own models on its seed, shared models trained once per (seed, variant)."""
    from iclr24.drum_rules.reproduce import SMOKE
    from iclr24.drum_rules.reproduce import _claim_accuracy
    from iclr24.drum_rules.reproduce import _setup
    from iclr24.drum_rules.reproduce import _train_models

    config = RunConfig(mode="full", seed=4, out=tmp_path, progress=False)
    r = _setup(SMOKE, config)
    _train_models(r, config)
    claims = ClaimSet("drum-rules", config)
    sm, mm = replace(ROWS["accuracy_sm"], calibration=None), replace(ROWS["accuracy_mm"], calibration=None)
    _claim_accuracy(claims, sm, r, "sm", [4, 5])
    sum5 = r.seed_mrr[5]["sum"]
    _claim_accuracy(claims, mm, r, "mm", [4, 5])
    c_sm, c_mm = claims.claims
    assert r.seed_mrr[5]["sum"] == sum5 and set(r.seed_mrr[5]) == {"sum", "sm", "mm"}  # DRUM trained once
    assert c_sm.paired["seeds"] == [4, 5] and c_sm.paired["margin"] == 0.1
    assert c_sm.paired["ours"][0] == r.info["sm"]["mrr_expected_ties"]  # the run's own model on its seed
    assert c_mm.paired["ours"] == [r.seed_mrr[s]["mm"] for s in (4, 5)]
    assert c_mm.paired["baseline"] == c_sm.paired["baseline"] == [r.seed_mrr[s]["sum"] for s in (4, 5)]
    assert r.seed_mrr[4] != r.seed_mrr[5] and c_mm.verdict in ("holds", "fails", "inconclusive")


def test_quick_config_is_what_the_readme_says():
    """Quick: rank 2, 20 families, 14 datasets, one training seed for the extraction claims."""
    from pathlib import Path

    from iclr24.drum_rules.reproduce import FULL
    from iclr24.drum_rules.reproduce import QUICK

    assert (QUICK.rank, QUICK.n_families, QUICK.epochs, QUICK.embed_dim, QUICK.batch_size) == (
        2,
        20,
        10,
        32,
        8,
    )
    assert 1 + QUICK.n_subsample + QUICK.n_rewire + QUICK.n_random == 14
    assert 1 + FULL.n_subsample + FULL.n_rewire + FULL.n_random == 30 and FULL.rank == 3
    text = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "checks them on 14 datasets" in text
