"""The claims pipeline (smoke), offline; the CLI end to end, on the built-in digits and on the real-weights path
(tiny open_clip checkpoints written here); the README's quickstart."""

import json
import socket
from pathlib import Path

import open_clip
import pytest
import torch

from iclr24.paperkit import RunConfig
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import run_readme_blocks
from iclr24.rlcf.cli import main
from iclr24.rlcf.experiments import DEMO_METHODS
from iclr24.rlcf.reproduce import CALIBRATION_SEEDS
from iclr24.rlcf.reproduce import CLAIMS
from iclr24.rlcf.reproduce import DEMO
from iclr24.rlcf.reproduce import FULL
from iclr24.rlcf.reproduce import LR_SEED
from iclr24.rlcf.reproduce import PAPER
from iclr24.rlcf.reproduce import POOL
from iclr24.rlcf.reproduce import POWER
from iclr24.rlcf.reproduce import QUICK
from iclr24.rlcf.reproduce import ROWS
from iclr24.rlcf.reproduce import SMOKE
from iclr24.rlcf.reproduce import methods_for
from iclr24.rlcf.reproduce import planned_seeds

README = Path(__file__).parents[1] / "README.md"


SPECS = {s.id: s for s in CLAIMS}
# the seeds the power rule plans per mode (None: undecidable at the mode's budget); pinned, so that a change of
# calibration, power or budget shows here
PLANNED = {
    "quick": {"vs_zero_shot": None, "vs_tpt": None, "vs_kd": None, "prompt_vs_zero_shot": None, "precondition": 4},
    "full": {"vs_zero_shot": 12, "vs_tpt": 6, "vs_kd": 6, "prompt_vs_zero_shot": 20, "precondition": 3},
}  # fmt: skip
METHODS = {
    "quick": ("zero-shot", "tpt", "tpt-3", "rlcf"),
    "full": ("zero-shot", "tpt", "tpt-3", "kd", "rlcf", "rlcf-prompt"),
}


@pytest.mark.slow  # trains two tiny CLIPs per seed and runs six methods
def test_smoke_records_offline(tmp_path, monkeypatch):
    def no_network(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=len(CLAIMS))
    names = {Path(a).name for a in cs.to_dict()["artifacts"]}
    assert {"accuracy_vs_steps.png", "accuracy_per_method.png", "demo_results.json"} <= names
    facts = {f.name: f.value for f in cs.facts}
    assert facts["CLIPScore at cos = 0.3 (w = 2.5)"] == 0.75
    assert any(n.startswith("TPT (3 steps)") for n in facts)
    doc = json.loads((tmp_path / "demo_results.json").read_text())
    assert set(doc["seeds"][0]["methods"]) == set(DEMO_METHODS)
    assert [s["seed"] for s in doc["seeds"]] == [0, 1]
    claims = cs.to_dict()["claims"]
    assert [c["kind"] for c in claims] == [s.kind for s in CLAIMS]
    assert [c["baseline_name"] for c in claims] == [s.baseline for s in CLAIMS]
    assert all(c["paired"]["seeds"] == [0, 1] for c in claims)
    assert [c["paired"]["margin"] for c in claims] == [-5.0, -5.0, 0.0, 0.0, -20.0]


def test_claims_table_kinds_seeds_and_plans():
    """Kinds (two headline rows, the precondition a check), calibration seeds disjoint from the evaluated ones and
    from the lr seed, the planned seeds per mode, the methods each mode runs, and the plan within the budgets."""
    assert [s.id for s in CLAIMS if s.kind == "headline"] == ["vs_zero_shot", "vs_tpt"]
    assert [s.id for s in CLAIMS if s.kind == "check"] == ["precondition"]
    assert set(ROWS) == set(SPECS)
    assert not set(POOL) & (set(CALIBRATION_SEEDS) | {LR_SEED}) and LR_SEED not in CALIBRATION_SEEDS
    for mode in ("quick", "full"):
        planned = {}
        for s in CLAIMS:
            assert s.in_mode(mode) and s.seeds[mode] == POOL and s.power == POWER
            cal = s.calibration[mode]
            assert set(cal.seeds) == set(CALIBRATION_SEEDS)
            plan = s.plan(mode)
            planned[s.id] = plan.seeds if plan.decidable else None
            if not plan.decidable:
                assert plan.needed_seeds is None or plan.needed_seeds > plan.max_seeds
        assert planned == PLANNED[mode]
        assert methods_for(mode) == METHODS[mode]
        n = planned_seeds(mode)
        assert n == max((v for v in planned.values() if v is not None), default=0)
        assert n * CLAIMS[0].calibration[mode].seconds_per_seed <= CLAIMS[0].budget[mode]
    assert methods_for("smoke") == DEMO_METHODS and planned_seeds("smoke") == 2


def _tiny_run(mode, tmp_path, monkeypatch):
    """``run`` in ``mode`` with the CLIPs and the test set at the smoke sizes (the table, plans and seeds as they are)."""
    import iclr24.rlcf.reproduce as rep

    monkeypatch.setitem(rep.DEMO, mode, SMOKE)
    cs = rep.run(RunConfig(mode=mode, out=tmp_path, progress=False))
    PAPER.validate(cs)
    return {c.claim: c for c in cs}, cs


def test_quick_records_undecidable_rows_and_runs_the_precondition(tmp_path, monkeypatch):
    """In quick the four paper rows are undecidable at the budget (recorded with what they would need, not run); the
    precondition runs on its planned 4 seeds, and the run measures only the methods it reports."""
    claims, cs = _tiny_run("quick", tmp_path, monkeypatch)
    assert [c.claim for c in cs] == [s.claim for s in CLAIMS]
    for s in CLAIMS:
        c = claims[s.claim]
        assert c.kind == s.kind
        if PLANNED["quick"][s.id] is None:
            assert c.status == "undecidable" and "needs" in c.message and c.paired is None
        else:
            assert c.status in ("holds", "fails", "inconclusive") and c.paired["seeds"] == [0, 1, 2, 3]
            assert c.details["power"]["seeds"] == 4
    doc = json.loads((tmp_path / "demo_results.json").read_text())
    assert [r["seed"] for r in doc["seeds"]] == [0, 1, 2, 3]
    assert tuple(doc["config"]["methods"]) == METHODS["quick"]
    assert any(f.name.startswith("TPT (3 steps)") for f in cs.facts)


@pytest.mark.slow  # 20 seeds of the tiny CLIPs
def test_full_runs_every_row_on_its_planned_seeds(tmp_path, monkeypatch):
    claims, cs = _tiny_run("full", tmp_path, monkeypatch)
    for s in CLAIMS:
        c = claims[s.claim]
        assert c.status in ("holds", "fails", "inconclusive"), c.message
        assert c.paired["seeds"] == list(range(PLANNED["full"][s.id]))
        ours, base = ROWS[s.id]
        if base == "zero-shot":
            assert c.paired["baseline"] == c.details["per_seed"]["zero-shot"][: len(c.paired["baseline"])]
    doc = json.loads((tmp_path / "demo_results.json").read_text())
    assert len(doc["seeds"]) == 20 and tuple(doc["config"]["methods"]) == METHODS["full"]


def test_configs_keep_the_recipe():
    for d in (QUICK, FULL):
        assert (d.n_views, d.selection_p, d.sample_k, d.rlcf_steps, d.tpt_steps, d.tpt_gate_steps) == (
            64, 0.1, 3, 3, 1, 3)  # fmt: skip
        assert (d.lr_image, d.lr_prompt, d.weight_decay, d.policy_width, d.reward_width) == (
            1e-3, 7e-3, 5e-4, 8, 32)  # fmt: skip
    assert (FULL.policy_steps, FULL.reward_steps, FULL.reward_copies, FULL.n_test) == (500, 800, 4, 300)
    assert (QUICK.policy_steps, QUICK.reward_steps, QUICK.n_test) == (80, 240, 60)
    assert DEMO == {"smoke": SMOKE, "quick": QUICK, "full": FULL}


def test_readme_states_the_configs():
    text = " ".join(README.read_text().split())
    assert "reward CLIP (width 32" in text
    assert "80 policy and 240 reward training steps" in text and "500 and 800" in text


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 16, "layers": 1, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 20, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1},
}


def test_cli_adapt_with_local_open_clip_checkpoints(tmp_path, capsys):
    from PIL import Image

    cfg = tmp_path / "rlcf-tiny-cli.json"
    cfg.write_text(json.dumps(TINY))
    open_clip.add_model_config(cfg)
    for i, name in enumerate(("policy.pt", "reward.pt")):
        torch.manual_seed(i)
        torch.save(open_clip.create_model("rlcf-tiny-cli").state_dict(), tmp_path / name)
    data = tmp_path / "images"
    for c, colour in (("red_panda", (200, 30, 30)), ("tree_frog", (30, 200, 30))):
        (data / c).mkdir(parents=True)
        for j in range(2):
            Image.new("RGB", (24, 20), tuple(v + 10 * j for v in colour)).save(data / c / f"{j}.png")
    out = tmp_path / "adapt"
    common = ["--policy", str(tmp_path / "policy.pt"), "--arch", str(cfg), "--reward", str(tmp_path / "reward.pt"),
              "--reward-arch", str(cfg), "--data", str(data), "--n-views", "10", "--selection-p", "0.2",
              "--sample-k", "2", "--out", str(out), "--overwrite", "--quiet"]  # fmt: skip
    assert main(["adapt", *common, "--mode", "image", "--steps", "2"]) == 0
    res = json.loads((out / "results.json").read_text())
    assert (
        res["n"] == 4 and len(res["accuracy_per_step"]) == 3 and res["classes"] == ["red panda", "tree frog"]
    )
    assert main(["adapt", *common, "--mode", "prompt", "--steps", "1"]) == 0
    capsys.readouterr()
    # user errors: one line, exit 2
    bad = [
        ["adapt", *common[:1], str(tmp_path / "missing.pt"), *common[2:]],
        ["adapt", "--data", str(data), "--out", str(out), "--overwrite"],
        ["adapt", *common, "--n-views", "4"],
        ["adapt", *common, "--sample-k", "3"],
    ]
    for argv in bad:
        assert main(argv) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 4
    assert "missing.pt" in err[0] and "folder of images" in err[1] and "selects no view" in err[2]
    assert "exceeds the 2 classes" in err[3]


def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(README, cwd=tmp_path, blocks=[0], values={0: {"history": "list(history.shape)"}})
    assert res["history"] == [4, 10]


def test_cli_adapt_on_digits(tmp_path, monkeypatch):
    """The built-in demo through the CLI with a shortened training (the recipe's numbers are `rlcf reproduce`'s)."""
    import iclr24.rlcf.experiments as ex

    original = ex.DemoConfig
    monkeypatch.setattr(ex, "DemoConfig", lambda: original(policy_steps=5, reward_steps=5, reward_copies=1))
    out = tmp_path / "digits"
    assert main(["adapt", "--n-test", "4", "--out", str(out), "--quiet"]) == 0
    assert json.loads((out / "results.json").read_text())["n"] == 4


def test_bench_smoke():
    from iclr24.rlcf.bench import run_benchmarks

    rep = run_benchmarks("smoke")
    assert [r.name.split(": ")[1] for r in rep.results] == [
        "zero-shot",
        "TPT (1 step)",
        "RLCF (3 steps + reward)",
    ]
    assert all(r.median_s > 0 and r.baseline_name == "zero-shot" for r in rep.results)
    with pytest.raises(ValueError, match="mode"):
        run_benchmarks("huge")


def test_bench_full_path_with_tiny_stand_ins(tmp_path, monkeypatch):
    """The --full ViT-B-16 / ViT-L-14 row, with tiny open_clip models standing in for the two ViTs."""
    from iclr24.rlcf.bench import run_benchmarks

    cfg = tmp_path / "rlcf-tiny-bench.json"
    cfg.write_text(json.dumps(TINY))
    open_clip.add_model_config(cfg)
    real = open_clip.create_model
    monkeypatch.setattr(open_clip, "create_model", lambda name, **kw: real("rlcf-tiny-bench", **kw))
    rep = run_benchmarks("full", repeats=1)
    vit = [r for r in rep.results if r.name.startswith("ViT-B-16")]
    assert len(vit) == 3 and all(r.median_s > 0 for r in vit)
