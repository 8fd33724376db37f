"""The claims table, and the claim checks end to end in smoke mode (pipeline only, seconds)."""

import dataclasses

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit.power import Calibration
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.sfda2 import reproduce
from iclr24.sfda2.adapt import VISDA
from iclr24.sfda2.reproduce import CLAIMS
from iclr24.sfda2.reproduce import FULL
from iclr24.sfda2.reproduce import PAPER
from iclr24.sfda2.reproduce import QUICK


def test_smoke_records(tmp_path, monkeypatch, tiny_mnist):
    tiny_mnist(tmp_path / "data")
    monkeypatch.setenv("ICLR24_DATA", str(tmp_path / "data"))
    cs = check_paper_smoke(PAPER, tmp_path / "out")
    rows = {s.claim: s for s in CLAIMS if "quick" in s.modes}
    assert {c.claim for c in cs.claims} == set(rows) and all(c.verdict == "smoke" for c in cs.claims)
    assert all(c.paired["n"] == 2 for c in cs.claims)  # smoke takes quick's first two seeds
    assert (tmp_path / "out" / "adaptation_mnist.png").is_file()
    facts = {f.name: f for f in cs.facts}
    assert (
        facts["non-finite loss terms"].value == 0 and "2 seeds" in facts["non-finite loss terms"].description
    )


def test_without_mnist_the_quick_rows_are_skipped_naming_the_command(tmp_path):
    cs = reproduce.run(
        RunConfig(mode="smoke", out=tmp_path / "o", data_dir=tmp_path / "none", progress=False)
    )
    PAPER.validate(cs)  # skipped only for absent data
    assert [c.verdict for c in cs.claims] == ["skipped"]
    assert all("iclr24 data get mnist" in c.message for c in cs.claims)


def test_adaptation_runs_at_the_official_settings():
    # lr 1e-3 and FD weight 10 (tar_adaptation.py / visda.sh); quick only shortens the run to 5 epochs
    assert FULL.adapt == VISDA and (VISDA.lr, VISDA.alpha_2, VISDA.max_epoch) == (1e-3, 10.0, 15)
    assert QUICK.adapt == dataclasses.replace(VISDA, max_epoch=5, interval=5)
    assert FULL.methods == reproduce.METHODS == ("aad", "sfda2") and QUICK.methods == ("sfda2",)


def test_claims_table_kinds_seeds_and_plans():
    by_id = {s.id: s for s in CLAIMS}
    assert [s.id for s in CLAIMS if s.kind == "headline"] == ["mnist_sfda2_vs_aad"]
    assert {s.kind for s in CLAIMS} == {"headline", "supporting"}
    for s in CLAIMS:
        for mode, cal in s.calibration.items():  # calibration seeds are never evaluated seeds
            assert not set(cal.seeds) & set(s.seeds[mode])
            assert set(cal.seeds) <= set(reproduce.CALIBRATION_SEEDS[s.id.split("_")[0]])
    planned = {(s.id, m): s.plan(m).seeds for s in CLAIMS for m in s.modes}
    assert planned == {
        ("mnist_sfda2_vs_aad", "full"): 23,
        ("mnist_sfda2_adapts", "quick"): 5,
        ("mnist_sfda2_adapts", "full"): 4,
        ("mnist_aad_adapts", "full"): 4,
        ("mnist_collapse", "full"): None,  # neither method collapsed on a calibration seed
        ("digits_sfda2_vs_aad", "full"): None,  # 44 seeds, over the budget left
        ("digits_aad_adapts", "full"): None,
        ("digits_collapse", "full"): None,
    }
    assert by_id["digits_sfda2_vs_aad"].plan("full").needed_seeds == 44
    # no quick row is skipped by design: each is decided within quick's budget
    quick = [s for s in CLAIMS if "quick" in s.modes]
    assert quick and all(s.plan("quick").decidable for s in quick)
    assert sum(s.plan("quick").needed_seconds for s in quick) <= 36
    assert by_id["mnist_sfda2_vs_aad"].plan("full").needed_seconds <= 420
    assert {s.id for s in CLAIMS if s.test == "sign"} == {"mnist_collapse", "digits_collapse"}


def test_collapse_indicators_follow_the_fixed_rule():
    assert reproduce._collapsed([40.0, 50.0, 45.0], [45.0, 45.0, 45.0]) == (1, 0, 0)


class _FakeStudies:
    """Per-seed runs where AaD ends below source-only on every odd seed and SF(DA)^2 never."""

    figures = {"mnist": "adaptation_mnist.png"}

    def get(self, study, seeds):
        runs = []
        for s in seeds:
            aad = 60.0 if s % 2 else 90.0
            arms = ("source-only", "aad", "sfda2")
            run = {
                "seed": s,
                "source-only": 75.0,
                "aad": aad,
                "sfda2": 92.0,
                "cpu": dict.fromkeys(("source", "aad", "sfda2"), 1.0),
            }
            run.update(mean_class=dict.fromkeys(arms, 1.0), curve={"aad": [], "sfda2": []})
            runs.append(run)
        return runs


def test_collapse_row_is_decided_by_the_exact_sign_test_on_the_indicators():
    spec = {s.id: s for s in CLAIMS}["mnist_collapse"]
    # a calibration in which AaD alone collapsed on half the seeds makes the row decidable
    cal = Calibration(seeds=tuple(range(100, 108)), ours=(0,) * 8, baseline=(1, 0) * 4, seconds_per_seed=1.0,
                      measured="test")  # fmt: skip
    spec = dataclasses.replace(spec, calibration={"full": cal})
    n = spec.plan("full").seeds
    claims = ClaimSet("sfda2", RunConfig(mode="full", progress=False))
    reproduce._measure(_FakeStudies(), claims)["mnist_collapse"](spec, spec.evaluated_seeds("full"))
    (c,) = claims.claims
    assert c.paired["test"] == "sign" and c.paired["wins"] == n // 2 and c.paired["losses"] == 0
    assert c.verdict == ("holds" if 0.5 ** (n // 2) <= 0.025 else "inconclusive") == "holds"
    assert c.details["collapsed"]["aad"] == [s % 2 for s in range(n)]


def test_one_seed_does_not_depend_on_global_rng_state():
    import torch

    c = dataclasses.replace(reproduce.SMOKE, methods=("aad", "sfda2"))
    a = reproduce.one_seed(c, reproduce._digits_target(0), 0)
    torch.rand(1000)  # consume the global generator: a seeded study must not notice
    b = reproduce.one_seed(c, reproduce._digits_target(0), 0)
    assert (a["source-only"], a["aad"], a["sfda2"]) == (b["source-only"], b["aad"], b["sfda2"])
