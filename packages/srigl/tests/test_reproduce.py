import json

import pytest
import torch

from iclr24.paperkit import ClaimSet
from iclr24.paperkit import RunConfig
from iclr24.paperkit.claims import BUDGETS
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.srigl.data import Split
from iclr24.srigl.reproduce import CLAIMS
from iclr24.srigl.reproduce import FULL
from iclr24.srigl.reproduce import MARGIN_PP
from iclr24.srigl.reproduce import MNIST_ROWS
from iclr24.srigl.reproduce import MODES
from iclr24.srigl.reproduce import PAPER
from iclr24.srigl.reproduce import QUICK
from iclr24.srigl.reproduce import SMOKE
from iclr24.srigl.reproduce import TrainingRuns
from iclr24.srigl.reproduce import _parity
from iclr24.srigl.train import TrainConfig

ROW = {c.id: c for c in CLAIMS}
KINDS = {
    "parity_digits_90": "headline",
    "parity_mnist_95": "headline",
    "speed_dense": "headline",
    "speed_csr": "headline",
    "parity_digits_95": "supporting",
    "parity_mnist_90": "supporting",
    "rigl_vs_static_95": "supporting",
    "floor_95": "check",
}
# the seeds (rounds for the speed rows) each row's power plan evaluates; None: undecidable at the mode's budget
PLANNED = {
    "quick": {
        "parity_digits_90": 14,
        "parity_digits_95": None,
        "rigl_vs_static_95": 8,
        "speed_dense": 5,
        "speed_csr": 5,
    },
    "full": {
        "parity_digits_90": 17,
        "parity_digits_95": None,
        "rigl_vs_static_95": 12,
        "floor_95": 5,
        "speed_dense": 5,
        "speed_csr": 5,
        "parity_mnist_95": 7,
        "parity_mnist_90": 4,
    },
}


def _planned(spec, mode):
    plan = spec.plan(mode)
    if plan is None:
        return len(spec.seeds[mode])
    return plan.seeds if plan.decidable else None


def test_claims_table_kinds_and_planned_seeds():
    assert {c.id: c.kind for c in CLAIMS} == KINDS and PAPER.claims == CLAIMS
    for mode, want in PLANNED.items():
        assert {c.id: _planned(c, mode) for c in CLAIMS if mode in c.modes} == want
    for c in CLAIMS:
        for mode, cal in c.calibration.items():
            assert not set(cal.seeds) & set(c.seeds[mode])  # calibration seeds are never evaluated
            assert c.plan(mode).max_seeds <= len(c.seeds[mode])
        assert c.better is not None or c.id == "floor_95"  # every comparison is paired, the floor a threshold
        assert c.seeds_why
    # no quick row reads data that can be absent (MNIST is --full only), so none can be skipped in quick
    assert all("MNIST" not in c.data for c in CLAIMS if "quick" in c.modes)
    assert [c.id for c in CLAIMS if c.modes == ("full",)] == [
        "floor_95",
        "parity_mnist_95",
        "parity_mnist_90",
    ]


def test_planned_cpu_seconds_fit_the_paper_budgets():
    # each decided row's plan (seeds x calibrated CPU s per seed, measured under load) within its own budget, and
    # the rows that run, together, within the paper's cap less ~25 % headroom (imports and the table's runs apart)
    for mode in ("quick", "full"):
        total = 0.0
        for c in (c for c in CLAIMS if mode in c.modes):
            plan = c.plan(mode)
            if plan is None:
                total += c.budget[mode]
            elif plan.decidable:
                assert plan.needed_seconds <= c.budget[mode]
                total += plan.needed_seconds
        assert total <= 0.75 * BUDGETS[mode]


def test_speed_claim_variant_and_threads_are_fixed_in_the_config():
    # both ratios come from one variant at one thread count, chosen before the run (no max over variants)
    for cfg in (QUICK, FULL):
        assert cfg.speed.variant == "fused_auto_int16" and cfg.speed.threads == 1
    assert (
        FULL.speed.compiled_dense
        and FULL.speed.compile_mode == "max-autotune"
        and not QUICK.speed.compiled_dense
    )
    assert ROW["speed_dense"].factor == 3.4 and ROW["speed_csr"].factor == 2.5
    assert all(ROW[i].timing and ROW[i].min_seeds >= 5 for i in ("speed_dense", "speed_csr"))
    assert (
        FULL.mnist is not None
        and QUICK.mnist is None
        and MODES == {"smoke": SMOKE, "quick": QUICK, "full": FULL}
    )
    assert all(ROW[i].margin == MARGIN_PP == 1.5 for i in KINDS if i.startswith("parity"))


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    quick_rows = [c for c in CLAIMS if "quick" in c.modes]
    assert [c.claim for c in cs] == [c.claim for c in quick_rows]
    assert all(c.verdict == "smoke" and c.kind == ROW_BY_CLAIM[c.claim].kind for c in cs)
    assert [f.name for f in cs.facts] == [
        "hidden neurons SRigL (gamma_sal 0.3) ablates at 95% sparsity on digits MLP (mean over seeds)",
        "constant fan-in k of the timed condensed layer",
    ]
    assert cs.facts[0].details["invariants_all_runs"] is True
    assert cs.facts[1].value == 38  # floor(floor(96 * 384 * 0.1) / 96) at S = 0.9
    for name in ("accuracy.png", "speedup.png", "accuracy.json", "speed.json"):
        assert (tmp_path / name).stat().st_size > 0
    speed = json.loads((tmp_path / "speed.json").read_text())
    both = [c for c in cs if "faster than" in c.claim]
    # the speed claims are timings, decided over the interleaved rounds (the paired "seeds"), ratio form
    for c, key in zip(both, ("x_dense", "x_csr")):
        assert c.timing and c.paired["form"] == "log_ratio" and c.paired["seeds"] == [0, 1]
        assert c.paired["ours"] == [r[key] for r in speed["rounds"]] and c.paired["factor"] == c.paper_value
        assert "pinned" in c.details["dispatch"]  # which CPU kernels the dense and CSR baselines ran
    parity = [c for c in cs if c.claim.startswith("SRigL (gamma_sal 0.3) matches")]
    assert len(parity) == 2 and all(c.paired["margin"] == 1.5 and c.paired["seeds"] == [0, 1] for c in parity)
    table = json.loads((tmp_path / "accuracy.json").read_text())["per_seed"]
    assert table["static-CFI"]["0.95"]["seeds"] == [0] and table["RigL"]["0.9"]["seeds"] == [0, 1]


ROW_BY_CLAIM = {c.claim: c for c in CLAIMS}


def _tiny() -> Split:
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 28, 28, generator=g)
    y = torch.arange(64) % 10
    x[y == 3, :, :8] += 2.0
    return Split(x, y, x[:20], y[:20], 10, "tiny")


def test_training_runs_train_each_run_once_and_load_data_lazily():
    loads = []
    runs = TrainingRuns(
        TrainConfig(model="cnn", distribution="erk", epochs=1, batch_size=16, delta_t=2),
        lambda: loads.append(1) or _tiny(),
        "tiny",
    )
    assert not loads  # nothing loaded before the first run (a missing MNIST raises inside its claim)
    runs.table_runs(MNIST_ROWS, [0])
    a = runs.acc("RigL", 0.9, [0, 1])
    assert runs.acc("RigL", 0.9, [0]) == a[:1] and loads == [1]
    res = runs.results()
    assert set(res) == {lab for lab, _, _ in MNIST_ROWS} and set(res["dense"]) == {0.0}
    assert res["RigL"][0.9]["seeds"] == [0, 1] and res["static-uns"][0.95]["seeds"] == [0]
    assert len(runs.done) == 1 + 4 * 2 + 1 and runs.invariants_ok()


def test_parity_claim_is_paired_over_the_planned_seeds(tmp_path):
    spec = ROW["parity_digits_90"]
    seeds = spec.evaluated_seeds("quick", base=10)
    assert seeds == list(range(10, 24))
    runs = TrainingRuns(TrainConfig(), None, "digits")
    for i, seed in enumerate(seeds):  # SRigL 1 pp behind RigL on every seed: inside the 1.5 pp margin
        for lab, acc in (("SRigL g=0.3", 95.0 + 0.1 * (i % 3)), ("RigL", 96.0 + 0.1 * (i % 3))):
            runs.done[(lab, 0.9, seed)] = {"acc": acc, "ablated": 0, "invariants": True, "itop": 0.2}
    claims = ClaimSet("srigl", RunConfig(mode="quick", seed=10, out=tmp_path, progress=False))
    _parity(claims, runs, 0.9, spec, seeds, [])
    (c,) = claims.claims
    assert c.verdict == "holds" and c.paired["seeds"] == seeds and c.paired["margin"] == 1.5
    assert c.details["power"]["seeds"] == 14 and c.kind == "headline"
    with pytest.raises(ValueError, match="power plan asks for 14"):
        _parity(claims, runs, 0.9, spec, seeds[:5], [])
