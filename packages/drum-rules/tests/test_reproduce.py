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
