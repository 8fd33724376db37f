import json

import torch

from iclr24.paperkit.testing import check_paper_smoke
from iclr24.srigl.data import Split
from iclr24.srigl.reproduce import FULL, MNIST_ROWS, PAPER, QUICK, SMOKE, MnistConfig, run_mnist
from iclr24.srigl.train import TrainConfig


def test_smoke_claims_run_end_to_end(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    assert len(cs) == 8 and all(c.paper == "srigl" for c in cs)
    assert [c.status for c in cs].count("skipped") == 2  # the 94% floor (full only) and MNIST (full only)
    assert all(c.verdict == "smoke" for c in cs if c.status != "skipped")
    assert [f.name for f in cs.facts] == ["constant fan-in k of the timed condensed layer"]
    assert cs.facts[0].value == 38  # floor(floor(96 * 384 * 0.1) / 96) at S = 0.9
    for name in ("accuracy.png", "speedup.png", "accuracy.json", "speed.json"):
        assert (tmp_path / name).stat().st_size > 0
    speed = json.loads((tmp_path / "speed.json").read_text())
    both = [c for c in cs if "faster than" in c.claim]
    assert len(both) == 2 and all(speed["variant"] in c.claim for c in both)
    # the speed claims are timings, decided over the interleaved rounds (the paired "seeds"), ratio form
    for c, key in zip(both, ("x_dense", "x_csr")):
        assert (
            c.timing
            and c.paired["form"] == "log_ratio"
            and c.paired["seeds"] == list(range(SMOKE.speed.rounds))
        )
        assert c.paired["ours"] == [r[key] for r in speed["rounds"]] and c.paired["factor"] == c.paper_value
    # accuracy claims: paired over the run's seeds (same split, init and data order per seed)
    parity = [c for c in cs if c.claim.startswith("SRigL (gamma_sal 0.3) matches") and c.status != "skipped"]
    assert len(parity) == 2 and all(c.paired["margin"] == SMOKE.srigl_margin_pp for c in parity)
    assert all(c.paired["seeds"] == [0] and not c.timing for c in parity)


def test_speed_claim_variant_and_threads_are_fixed_in_the_config():
    # both ratios come from one variant at one thread count, chosen before the run (no max over variants)
    for cfg in (QUICK, FULL):
        assert cfg.speed.variant == "fused_auto_int16" and cfg.speed.threads == 1
    assert FULL.speed.compiled_dense and FULL.speed.compile_mode == "max-autotune"
    assert QUICK.srigl_margin_pp == FULL.srigl_margin_pp == 1.5
    assert not QUICK.gate_floor and FULL.gate_floor and FULL.mnist is not None and QUICK.mnist is None
    # the 95% parity row is gated in --full only (calibration seeds 100-104: no quick-sized config decides it)
    assert QUICK.skip_parity_at == (0.95,) and FULL.skip_parity_at == () and SMOKE.skip_parity_at == ()
    # paired verdicts need seeds (and rounds) to give an interval
    assert QUICK.accuracy.n_seeds >= 3 and FULL.accuracy.n_seeds >= 3 and FULL.mnist.n_seeds >= 3
    assert QUICK.speed.rounds >= 5 and FULL.speed.rounds >= 5


def test_mnist_rows_run_on_tiny_images():
    g = torch.Generator().manual_seed(0)
    x = torch.randn(64, 1, 28, 28, generator=g)
    y = torch.arange(64) % 10
    x[y == 3, :, :8] += 2.0
    data = Split(x, y, x[:20], y[:20], 10, "tiny")
    cfg = MnistConfig(
        sparsities=(0.9,),
        n_seeds=2,
        train=TrainConfig(model="cnn", distribution="erk", epochs=1, batch_size=16, delta_t=2),
    )
    res = run_mnist(cfg, data=data)
    assert set(res) == {lab for lab, _, _ in MNIST_ROWS} and len(res) == 5
    # every method on the first seed; the further seed only for the two methods the paired claims compare
    assert len(res["RigL"][0.9]["acc"]) == len(res["SRigL g=0.3"][0.9]["acc"]) == 2
    assert len(res["static-uns"][0.9]["acc"]) == len(res["dense"][0.0]["acc"]) == 1
    assert all(all(v["invariants"]) for lab in res for v in res[lab].values())


def test_accuracy_claims_are_paired_and_the_95_row_is_skipped_with_its_numbers(tmp_path):
    from iclr24.paperkit import ClaimSet, RunConfig
    from iclr24.srigl.reproduce import METHOD_ROWS, AccuracyConfig, _accuracy_claims

    def rec(acc):
        return {"acc": acc, "ablated": [0] * 3, "invariants": [True] * 3, "itop": [0.5] * 3}

    res = {lab: {0.9: rec([96.0, 96.5, 97.0]), 0.95: rec([95.0, 95.5, 96.0])} for lab, _, _ in METHOD_ROWS}
    res["dense"] = {0.0: rec([97.5] * 3)}
    res["SRigL g=0.3"][0.95] = rec([92.0, 93.0, 94.5])  # 2.3 pp behind RigL on average
    res["static-uns"][0.95] = rec([90.0, 91.0, 90.5])
    config = RunConfig(mode="quick", seed=10, out=tmp_path, progress=False)
    claims = ClaimSet("srigl", config)
    cfg = AccuracyConfig(n_seeds=3)
    _accuracy_claims(claims, res, cfg, [], 1.5, config.seed, skip_parity_at=(0.95,))
    p90, p95, static = claims.claims
    assert (
        p90.paired["seeds"] == [10, 11, 12] and p90.verdict == "holds"
    )  # equal per seed: slack 1.5 everywhere
    assert p95.status == "skipped" and "SRigL - RigL = -2.33 pp" in p95.message and "--full" in p95.message
    assert static.paired["margin"] == 0.0 and static.verdict == "holds" and static.ours > static.baseline
