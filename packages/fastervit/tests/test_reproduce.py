from iclr24.fastervit.registry import OFFICIAL_PARAMS
from iclr24.fastervit.reproduce import PAPER
from iclr24.fastervit.reproduce import PARAM_FACT_VARIANTS
from iclr24.paperkit.runner.testing import check_paper_smoke


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 1 and all(c.paper == "fastervit" for c in cs)
    assert [c.kind for c in cs] == ["headline"] and cs[0].details["spec"]["id"] == "carrier_tokens"
    assert all(c.verdict == "smoke" for c in cs)
    assert (tmp_path / "carrier_token_task.png").exists()
    assert [f.name for f in cs.facts] == [f"parameters of {n}" for n in PARAM_FACT_VARIANTS]
    assert all(f.value == f.paper_value == OFFICIAL_PARAMS[f.name.split()[-1]] for f in cs.facts)


def test_evaluation_seeds_are_disjoint_from_the_calibration_seeds_and_the_gate_is_the_same():
    from iclr24.fastervit.reproduce import CALIBRATION_SEEDS
    from iclr24.fastervit.reproduce import FULL
    from iclr24.fastervit.reproduce import QUICK
    from iclr24.fastervit.reproduce import RULE

    for setting in (QUICK, FULL):
        assert not set(setting["seeds"]) & set(CALIBRATION_SEEDS)
    assert "ours >= 0.95" in RULE and FULL["cfg"].square == 4  # the task and gate of the official-layer check


def test_quick_and_full_configs_are_what_the_readme_says():
    from pathlib import Path

    from iclr24.fastervit.reproduce import FULL
    from iclr24.fastervit.reproduce import QUICK

    q, f = QUICK["cfg"], FULL["cfg"]
    assert (q.square, q.depth, q.lr, q.epochs, q.samples_per_epoch, q.batch_size) == (
        8,
        1,
        2.5e-4,
        5,
        1024,
        32,
    )
    assert QUICK["seeds"] == (100, 101, 102) and q.epochs * q.samples_per_epoch // q.batch_size == 160
    assert (f.square, f.depth, f.lr, f.epochs, f.samples_per_epoch, f.batch_size) == (
        4,
        2,
        1e-3,
        10,
        2000,
        32,
    )
    assert FULL["seeds"] == (100, 101, 102, 103, 104)
    readme = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    assert (
        "Quick mode uses 8×8-px squares, one HAT block (depth 1), lr 2.5e-4, 5 epochs × 1024 fresh samples "
        "(160 steps of batch 32) and three seeds (100-102)." in readme
    )
    assert (
        "Full mode uses the 4×4-px squares, two blocks, lr 1e-3, 10 epochs × 2000 samples and seeds 100-104"
        in readme
    )
