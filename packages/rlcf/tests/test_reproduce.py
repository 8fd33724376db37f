"""The claims pipeline (smoke), offline; the CLI end to end, on the built-in digits and on the real-weights path
(tiny open_clip checkpoints written here); the README's quickstart."""

import json
import socket
from pathlib import Path

import open_clip
import pytest
import torch

from iclr24.paperkit.testing import check_cli_contract, check_paper_smoke, run_readme_blocks
from iclr24.rlcf.cli import main
from iclr24.rlcf.experiment import DEMO_METHODS
from iclr24.rlcf.reproduce import FULL, PAPER, QUICK

README = Path(__file__).parents[1] / "README.md"


@pytest.mark.slow  # trains two tiny CLIPs and runs six methods
def test_smoke_records_offline(tmp_path, monkeypatch):
    def no_network(*a, **k):
        raise OSError("network disabled in this test")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=2)
    names = {Path(a).name for a in cs.to_dict()["artifacts"]}
    assert {"accuracy_vs_steps.png", "accuracy_per_method.png", "demo_results.json"} <= names
    facts = {f.name: f.value for f in cs.facts}
    assert facts["CLIPScore at cos = 0.3 (w = 2.5)"] == 0.75
    doc = json.loads((tmp_path / "demo_results.json").read_text())
    assert set(doc["seeds"][0]["methods"]) == {"zero-shot", "tpt", "tpt-3", "kd", "rlcf", "rlcf-prompt"}
    claims = cs.to_dict()["claims"]
    assert [c["baseline_name"] for c in claims] == ["zero-shot CLIP policy", "TPT (3 steps, same lr)"]
    assert all(c["paired"]["margin"] == -5.0 and c["paired"]["seeds"] == [0] for c in claims)


def test_configs_keep_the_recipe_and_the_gates():
    for c in (QUICK, FULL):
        d = c.demo
        assert (d.n_views, d.selection_p, d.sample_k, d.rlcf_steps, d.tpt_steps, d.tpt_gate_steps) == (
            64, 0.1, 3, 3, 1, 3)  # fmt: skip
        assert (d.lr_image, d.weight_decay, d.policy_width, d.reward_width) == (1e-3, 5e-4, 8, 16)
        assert {"zero-shot", "tpt-3", "rlcf"} <= set(d.methods)  # what the gated claims compare
    assert (FULL.demo.policy_steps, FULL.demo.reward_steps, FULL.demo.methods) == (500, 800, DEMO_METHODS)
    # paired seeds fixed before any evaluated run, disjoint from the calibration seeds 100-105
    assert FULL.seeds == (0, 1, 2, 3, 4, 5) and FULL.demo.n_test == 300
    assert QUICK.seeds == (0, 1, 2) and not set(range(100, 106)) & set(FULL.seeds + QUICK.seeds)


def test_readme_states_the_quick_config():
    d = QUICK.demo
    assert (d.n_test, d.policy_steps, d.reward_steps) == (60, 80, 240)
    assert d.methods == ("zero-shot", "tpt", "tpt-3", "rlcf")
    text = " ".join(README.read_text().split())
    assert "`--quick`: seeds 0, 1, 2 with 60 test digits each" in text
    assert "80 policy and 240 reward training steps" in text
    assert "500 and 800" in text


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
    assert main(["adapt", *common, "--steps", "2"]) == 0
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
    res = run_readme_blocks(README, cwd=tmp_path, values={0: {"history": "list(history.shape)"}})
    assert res["history"] == [4, 10]


def test_cli_adapt_on_digits(tmp_path, monkeypatch):
    """The built-in demo through the CLI with a shortened training (the recipe's numbers are `rlcf reproduce`'s)."""
    import iclr24.rlcf.experiment as ex

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
