from iclr24.drum_rules.reproduce import PAPER
from iclr24.paperkit.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 7 and all(c.paper == "drum-rules" for c in cs)
    assert [f.name for f in cs.facts][0] == "datasets checked"
    assert any("collected on" in f.name for f in cs.facts)  # by construction: a fact, not a claim
    assert not any("source_recall" in c.rule for c in cs)
    assert any(a.endswith("faithfulness.png") for a in cs.artifacts)


def test_full_mode_declares_and_runs_each_real_kg(tmp_path):
    """`--full` runs one real-KG block per name in ``Paper.data``; the block runs end to end on a tiny folder."""
    from dataclasses import replace

    from iclr24.drum_rules import synthetic
    from iclr24.drum_rules.reproduce import FULL, QUICK, SMOKE, run_config
    from iclr24.paperkit import RunConfig

    assert PAPER.data == FULL.real_kgs and set(PAPER.data) == {"kinships", "umls", "nations"}
    assert QUICK.real_kgs == () and QUICK.rank == 2 and FULL.rank == 3  # quick: rank 2 (README, Differences)
    fam = synthetic.family(3, seed=0)
    E, R = fam.kg.entities, fam.kg.relations
    folder = tmp_path / "data" / "nations"
    folder.mkdir(parents=True)
    for name, rows in (("train", fam.kg.facts), ("valid", fam.valid), ("test", fam.test)):
        (folder / f"{name}.txt").write_text("".join(f"{E[h]}\t{R[r]}\t{E[t]}\n" for h, r, t in rows.tolist()))
    cfg = replace(SMOKE, real_kgs=("nations",), real_epochs=1, real_datasets=2)
    cs = run_config(
        cfg, RunConfig(mode="smoke", out=tmp_path / "out", data_dir=tmp_path / "data", progress=False)
    )
    (real,) = [c for c in cs if "real nations" in c.claim]
    assert real.status not in ("error", "skipped") and real.details["data"] == "nations" and real.ours == 1.0


def test_accuracy_claim_is_paired_over_seeds_each_with_its_own_models(tmp_path):
    """The accuracy claim compares min(MM, SM) with DRUM in MRR on every seed (its own KG, models trained alike)."""
    from dataclasses import replace

    from iclr24.drum_rules.reproduce import FULL, SMOKE, _claim_accuracy, _setup, _train_models
    from iclr24.paperkit import ClaimSet, RunConfig

    assert FULL.accuracy_seeds >= 3 and FULL.accuracy_gated and SMOKE.accuracy_seeds == 1
    cfg = replace(SMOKE, accuracy_seeds=2)
    config = RunConfig(mode="quick", seed=4, out=tmp_path, progress=False)
    r = _setup(cfg, config)
    _train_models(r, config)
    claims = ClaimSet("drum-rules", config)
    _claim_accuracy(claims, r, config)
    (c,) = claims.claims
    mrr = c.details["mrr_per_seed"]
    assert c.paired["seeds"] == [4, 5] and set(mrr) == {"4", "5"} and mrr["4"] != mrr["5"]
    assert mrr["4"]["mm"] == r.info["mm"]["link_prediction"]["mrr"]  # the run's own models on its seed
    assert c.paired["ours"] == [min(mrr[s]["mm"], mrr[s]["sm"]) for s in ("4", "5")]
    assert c.paired["baseline"] == [mrr[s]["sum"] for s in ("4", "5")] and c.paired["margin"] == 0.1
    assert c.verdict in ("holds", "fails", "inconclusive")


def test_quick_config_is_what_the_readme_says():
    """Quick: rank 2, 20 families, 14 datasets, one training seed, the accuracy claim gated in --full only."""
    from pathlib import Path

    from iclr24.drum_rules.reproduce import FULL, QUICK

    assert (QUICK.rank, QUICK.n_families, QUICK.epochs, QUICK.embed_dim, QUICK.batch_size) == (
        2,
        20,
        10,
        32,
        8,
    )
    assert 1 + QUICK.n_subsample + QUICK.n_rewire + QUICK.n_random == 14
    assert QUICK.accuracy_seeds == 1 and not QUICK.accuracy_gated
    assert FULL.accuracy_seeds == 3 and FULL.accuracy_gated and FULL.rank == 3
    text = " ".join((Path(__file__).resolve().parents[1] / "README.md").read_text().split())
    assert "checks them on 14 datasets" in text and "the accuracy claim is gated in `--full` only" in text


def test_quick_records_the_accuracy_claim_as_skipped_with_the_runs_own_mrr(tmp_path):
    from dataclasses import replace

    from iclr24.drum_rules.reproduce import SMOKE, _claim_accuracy, _setup
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = replace(SMOKE, accuracy_gated=False)
    config = RunConfig(mode="quick", seed=3, out=tmp_path, progress=False)
    r = _setup(cfg, config)  # the run's own models' records (no training needed: one seed, nothing retrained)
    r.info = {
        a: {"link_prediction": {"mrr": v}, "classification": {}, "beta": 0.1}
        for a, v in (("sum", 0.8), ("sm", 0.75), ("mm", 0.65))
    }
    claims = ClaimSet("drum-rules", config)
    _claim_accuracy(claims, r, config)
    (c,) = claims.claims
    mrr = {a: r.info[a]["link_prediction"]["mrr"] for a in ("sum", "sm", "mm")}
    assert c.status == "skipped" and "--full only" in c.message and c.paired is None
    assert c.ours == min(mrr["mm"], mrr["sm"]) and c.baseline == mrr["sum"]
    assert f"DRUM {mrr['sum']:.3f}" in c.message and list(c.details["mrr_per_seed"]) == ["3"]
