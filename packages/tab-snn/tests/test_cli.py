"""The CLI contract, the smoke-mode claims, the README quickstart, and training under torchrun."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import run_readme_blocks
from iclr24.tab_snn.cli import main
from iclr24.tab_snn.reproduce import PAPER

README = Path(__file__).parents[1] / "README.md"
ONE_EPOCH = ["--data", "seq-digits", "--epochs", "1", "--limit", "128", "--quiet"]  # a train run of seconds


@pytest.mark.slow  # trains tiny networks on both digits tasks and draws 3 plots
def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=3)
    assert [c.details["spec"]["id"] for c in cs.claims] == ["tab_vs_tdbn", "tab_vs_tebn", "static_agree"]
    assert all(c.verdict == "smoke" for c in cs.claims)
    assert (tmp_path / "seq_digits_firing_rates.png").is_file()


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_cli_train_end_to_end(tmp_path, capsys):
    rc = main(["train", *ONE_EPOCH, "--norm", "tab", "--out", str(tmp_path)])
    assert rc == 0
    m = json.loads((tmp_path / "metrics.json").read_text())
    assert m["norm"] == "tab" and m["T"] == 8 and 0 <= m["test_acc"] <= 100 and m["firing_rate"]
    assert (tmp_path / "model" / "model.safetensors").is_file() and (
        tmp_path / "model" / "config.json"
    ).is_file()


def test_cli_user_errors(tmp_path, capsys):
    assert main(["train", "--data", "seq-digits", "--T", "5", "--out", str(tmp_path)]) == 2
    assert "rows (8)" in capsys.readouterr().err
    assert main(["train", "--data", "imagenet", "--out", str(tmp_path)]) == 2
    assert main(["train", "--data", "cifar10:/no/such/folder", "--out", str(tmp_path)]) == 2
    assert "not found" in capsys.readouterr().err
    with pytest.raises(SystemExit) as e:  # argparse: one line, exit 2
        main(["train", "--norm", "layer", "--out", str(tmp_path)])
    assert e.value.code == 2
    assert main(["train", "--data", "seq-digits", "--lr", "-1", "--out", str(tmp_path)]) == 2


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        README, cwd=tmp_path, values={0: {"y": "list(y.shape)", "logits": "list(logits.shape)"}}
    )
    assert res["y"] == [32, 8, 64] and res["logits"] == [4, 8, 10] and "% after 2 epochs" in res["__stdout__"]


@pytest.mark.slow
def test_train_under_torchrun(tmp_path):
    from iclr24.paperkit.distributed import run_torchrun

    out = tmp_path / "dist"
    run_torchrun(
        ["-m", "iclr24.tab_snn.cli", "train", *ONE_EPOCH, "--out", str(out)],
        nproc=2,
        timeout=600,
    )
    assert json.loads((out / "metrics.json").read_text())["test_acc"] >= 0


def test_bench_smoke():
    from iclr24.tab_snn.bench import run_benchmarks

    rep = run_benchmarks("smoke")
    names = [r.name for r in rep.results]
    assert "MLP T=8 tab" in names and "TAB cumsum T=8" in names
    assert any("[8,8,8,4,4] tab" in n for n in names)
    assert all(r.median_s > 0 and r.speedup is not None for r in rep.results)
    with pytest.raises(ValueError, match="mode"):
        run_benchmarks("huge")


def test_claims_table_kinds_seeds_and_calibration():
    """Kinds, calibration seeds disjoint from the evaluated pool, and the seeds the power rule plans per mode."""
    from iclr24.tab_snn.reproduce import CLAIMS
    from iclr24.tab_snn.reproduce import FULL
    from iclr24.tab_snn.reproduce import QUICK

    by_id = {s.id: s for s in CLAIMS}
    assert [s.id for s in CLAIMS if s.kind == "headline"] == ["tab_vs_tdbn", "tab_vs_tebn"]
    assert {s.id for s in CLAIMS if s.kind == "check"} == {"bn_vs_none", "static_agree"}  # strawman, control
    full_only = {"tab_vs_bntt", "bn_vs_none", "mnist_tab_vs_tdbn"}
    assert {s.id for s in CLAIMS if s.modes == ("full",)} == full_only
    assert all(s.modes == ("quick", "full") for s in CLAIMS if s.id not in full_only)
    seen = set(range(0, 5))  # evaluated before 2026-12-03; their 20-epoch results had been seen
    calibration = set(range(100, 106)) | set(range(110, 124))
    for s in CLAIMS:
        for m in s.modes:
            assert not (seen | calibration) & set(s.seeds[m]), (s.id, m)
            if s.calibration:
                assert set(s.calibration[m].seeds) <= calibration and s.plan(m).decidable, (s.id, m)
    planned = {(s.id, m): s.plan(m).seeds for s in CLAIMS if s.calibration for m in s.modes}
    assert planned == {("tab_vs_tdbn", "quick"): 4, ("tab_vs_tebn", "quick"): 4, ("tab_vs_tdbn", "full"): 4,
                       ("tab_vs_tebn", "full"): 4, ("tab_vs_bntt", "full"): 4, ("bn_vs_none", "full"): 4,
                       ("mnist_tab_vs_tdbn", "full"): 3}  # fmt: skip
    assert all(s.min_seeds == 4 for s in CLAIMS[:4])  # the seq rows share one training and read all its seeds
    assert by_id["tab_vs_tdbn"].margin == -2.0 and by_id["tab_vs_tebn"].margin == 0.5
    assert (QUICK.seq_epochs, QUICK.static_epochs, FULL.seq_epochs, FULL.static_epochs) == (20, 7, 20, 20)
    assert FULL.mnist and not QUICK.mnist and (FULL.mnist_train, FULL.mnist_epochs) == (10_000, 5)


def test_readme_states_the_quick_config():
    """The README's mode paragraph gives quick's and full's epochs as the code has them."""
    from pathlib import Path

    text = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    para = text[text.index("Rules and mode configs were fixed") :][:1500]
    for words in ("20 epochs of seq-digits", "7 of static-digits", "seeds 10-13"):
        assert words in para, words


def test_quick_decides_the_headline_margins_full_the_rest_over_paired_seeds(tmp_path):
    """Quick decides the tdBN and TEBN margins (none skipped) from TAB, tdBN and TEBN alone; full adds BNTT and the
    no-norm check, which pairs the worst BN variant with no norm seed by seed; each row over the shared 4 seeds."""
    import dataclasses

    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.tab_snn import reproduce

    c = dataclasses.replace(reproduce.SMOKE, seq_epochs=1)
    for mode, ids in (("quick", ["tab_vs_tdbn", "tab_vs_tebn"]),
                      ("full", ["tab_vs_tdbn", "tab_vs_tebn", "tab_vs_bntt", "bn_vs_none"])):  # fmt: skip
        cfg = RunConfig(mode=mode, out=tmp_path / mode, progress=False)
        claims = ClaimSet("tab-snn", cfg)
        reproduce._seq_claims(claims, c, cfg)
        assert [cl.details["spec"]["id"] for cl in claims.claims] == ids
        for cl in claims.claims:
            assert cl.verdict in ("holds", "fails", "inconclusive") and cl.paired["seeds"] == [10, 11, 12, 13]
        per = claims.claims[0].details["accuracy_mean_std_per_seed"]
        assert set(per) == (
            {"tdBN", "TEBN", "TAB"} if mode == "quick" else {"no norm", "tdBN", "BNTT", "TEBN", "TAB"}
        )
    none = claims.claims[-1]
    worst = [min(per[n]["per_seed"][i] for n in ("tdBN", "BNTT", "TEBN", "TAB")) for i in range(4)]
    assert none.paired["ours"] == worst and none.paired["baseline"] == per["no norm"]["per_seed"]


@pytest.mark.slow  # the whole claim run at smoke sizes, with the seq-MNIST block on a stand-in
def test_seq_mnist_claim_is_paired_over_three_seeds(tmp_path, monkeypatch):
    """The seq-MNIST claim pairs TAB with tdBN seed by seed (same data order and init) and takes its verdict from
    the 95 % interval; run here on a tiny stand-in for MNIST (sklearn digits row by row)."""
    import dataclasses

    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.tab_snn import reproduce
    from iclr24.tab_snn.data import seq_digits

    tiny = dataclasses.replace(reproduce.SMOKE, mnist=True, mnist_epochs=1)
    monkeypatch.setattr(reproduce, "seq_mnist", lambda *a, **k: reproduce._subset(seq_digits(), 200))
    cfg = RunConfig(mode="full", out=tmp_path, progress=False)
    claims = ClaimSet("tab-snn", cfg)
    reproduce._mnist_claims(claims, tiny, cfg)
    (c,) = claims.claims
    d = c.to_dict()
    assert c.verdict in ("holds", "fails", "inconclusive") and "paired over 3 seeds" in c.rule
    assert c.paired["seeds"] == [10, 11, 12] and c.details["power"]["seeds"] == 3
    per = d["details"]["accuracy_mean_std_per_seed"]
    assert abs(c.ours - sum(per["TAB"]["per_seed"]) / 3) < 1e-9
    assert abs(c.baseline - sum(per["tdBN"]["per_seed"]) / 3) < 1e-9


def test_cli_defaults_are_the_configs():
    from iclr24.tab_snn.cli import app
    from iclr24.tab_snn.model import SpikingVGG9
    from iclr24.tab_snn.train import TrainConfig

    # --T: None, the data's own number of steps (rows, or 4/10 repeats), not one model's
    check_app_defaults(app, {"train": (TrainConfig, SpikingVGG9)}, skip=("T",))
