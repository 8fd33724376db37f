"""Model folders (save_pretrained / from_pretrained), step logging, your own DataLoader, and `rlcf train` ->
`rlcf adapt --policy FOLDER --reward FOLDER`."""

import json
from pathlib import Path

import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import TensorDataset

from iclr24.paperkit import load_pretrained
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.runner.testing import run_readme_blocks
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.tracking import read_jsonl
from iclr24.rlcf import DIGIT_NAMES
from iclr24.rlcf import DIGIT_TEMPLATE
from iclr24.rlcf import CLIPReward
from iclr24.rlcf import DemoConfig
from iclr24.rlcf import ToyCLIP
from iclr24.rlcf import ToyCLIPConfig
from iclr24.rlcf import TTAConfig
from iclr24.rlcf import TTARunner
from iclr24.rlcf import build_toy_clip
from iclr24.rlcf import class_prompts
from iclr24.rlcf import digit_views
from iclr24.rlcf import load_clip
from iclr24.rlcf import toy_tokenizer
from iclr24.rlcf import train_digit_clips
from iclr24.rlcf import train_toy_clip
from iclr24.rlcf.cli import main


def _data(n=40):
    g = torch.Generator().manual_seed(0)
    return torch.rand(n, 1, 8, 8, generator=g), torch.arange(n) % 10


def _tokens():
    return toy_tokenizer(class_prompts(DIGIT_NAMES, DIGIT_TEMPLATE))


def test_toy_clip_round_trips_through_a_model_folder(tmp_path):
    model = train_toy_clip(
        build_toy_clip(ToyCLIPConfig(vision_width=4), seed=3), *_data(), _tokens(), steps=2
    )
    assert isinstance(model, ToyCLIP) and model.toy_config == ToyCLIPConfig(vision_width=4)
    model.save_pretrained(tmp_path / "m", provenance={"steps": 2, "seed": 3})
    back = ToyCLIP.from_pretrained(tmp_path / "m").eval()
    assert same_weights(model, back) and not back.token_embedding.weight.requires_grad
    x = _data()[0][:5]
    with torch.no_grad():
        assert torch.equal(model.encode_image(x), back.encode_image(x))
        assert torch.equal(model.encode_text(_tokens()), back.encode_text(_tokens()))
    assert same_weights(model, load_pretrained(tmp_path / "m"))
    loaded, tok = load_clip(
        tmp_path / "m"
    )  # the CLI's loader reads the folder too, with the folder's context
    assert same_weights(model, loaded) and not loaded.training
    assert torch.equal(tok(["a photo of the digit one."]), toy_tokenizer(["a photo of the digit one."]))


def test_bad_model_folders_are_one_clear_error(tmp_path):
    build_toy_clip(ToyCLIPConfig(vision_width=4)).save_pretrained(tmp_path / "m")
    with pytest.raises(InputFileError, match="does not exist"):
        ToyCLIP.from_pretrained(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputFileError, match="config.json is missing"):
        ToyCLIP.from_pretrained(tmp_path / "empty")
    with pytest.raises(InputError, match="without config.json"):
        load_clip(tmp_path / "empty")
    with pytest.raises(InputError, match="drop arch"):
        load_clip(tmp_path / "m", arch="ViT-B-16")
    w = tmp_path / "m" / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-8])
    with pytest.raises(InputFileError, match="does not match its provenance"):
        ToyCLIP.from_pretrained(tmp_path / "m")
    with pytest.raises(InputError, match="text_width"):
        ToyCLIP(text_width=30, text_heads=4)


def test_train_from_a_dataset_or_loader_equals_the_tensor_path():
    x, y = _data()
    kw = dict(steps=3, batch_size=16, seed=2)
    ref = train_toy_clip(build_toy_clip(ToyCLIPConfig(vision_width=4), seed=0), x, y, _tokens(), **kw)
    for data in (TensorDataset(x, y), DataLoader(TensorDataset(x, y), batch_size=7)):
        got = train_toy_clip(
            build_toy_clip(ToyCLIPConfig(vision_width=4), seed=0), data, tokens=_tokens(), **kw
        )
        assert same_weights(ref, got)


def test_train_bad_user_data_is_one_input_error():
    x, y = _data()
    m = build_toy_clip(ToyCLIPConfig(vision_width=4))
    with pytest.raises(InputError, match="expected 2"):
        train_toy_clip(m, TensorDataset(x, y, y), tokens=_tokens(), steps=1)
    with pytest.raises(InputError, match="leave labels out"):
        train_toy_clip(m, TensorDataset(x, y), y, _tokens(), steps=1)
    with pytest.raises(InputError, match="labels are missing"):
        train_toy_clip(m, x, tokens=_tokens(), steps=1)
    with pytest.raises(InputError, match="tokens"):
        train_toy_clip(m, x, y, steps=1)
    with pytest.raises(InputError, match="channel"):
        train_toy_clip(m, TensorDataset(torch.rand(8, 3, 8, 8), y[:8]), tokens=_tokens(), steps=1)


def test_train_callbacks_and_log_dir_change_no_weight(tmp_path):
    x, y = _data()
    kw = dict(steps=4, batch_size=16, seed=1)
    ref = train_toy_clip(build_toy_clip(ToyCLIPConfig(vision_width=4)), x, y, _tokens(), **kw)
    rows = []
    got = train_toy_clip(build_toy_clip(ToyCLIPConfig(vision_width=4)), x, y, _tokens(), **kw,
                         callbacks=lambda s, m: rows.append((s, m)), log_dir=tmp_path / "log")  # fmt: skip
    assert same_weights(ref, got)
    assert [s for s, _ in rows] == [0, 1, 2, 3] and all(m["loss"] > 0 for _, m in rows)
    assert rows[-1][1]["logit_scale"] == pytest.approx(float(got.logit_scale.detach()))
    lines = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert [r["step"] for r in lines] == [0, 1, 2, 3, -1] and lines[-1]["loss"] == rows[-1][1]["loss"]
    with pytest.raises(InputError, match="callbacks must be"):
        train_toy_clip(got, x, y, _tokens(), steps=1, callbacks=3)


def test_train_digit_clips_logs_both_models(tmp_path):
    cfg = DemoConfig(policy_steps=2, reward_steps=3, reward_copies=1)
    seen = []
    train_digit_clips(cfg, 0, callbacks=lambda s, m: seen.append((m["model"], s)), log_dir=tmp_path / "log")
    assert seen == [("policy", 0), ("policy", 1), ("reward", 0), ("reward", 1), ("reward", 2)]
    for tag, n in (("policy", 2), ("reward", 3)):
        assert len(read_jsonl(tmp_path / "log" / tag / "metrics.jsonl")) == n + 1


def test_evaluate_logs_each_test_image(toy_pair, digits_kw, tmp_path):
    policy, reward_model = toy_pair
    names = ["zero", "one", "two"]
    cfg = TTAConfig(method="rlcf", mode="image", steps=2, n_views=8, selection_p=0.25, sample_k=2)
    runner = TTARunner(policy, CLIPReward(reward_model), names, cfg, **digits_kw)
    x, y = torch.rand(5, 1, 8, 8, generator=torch.Generator().manual_seed(0)), torch.tensor([0, 1, 2, 1, 0])
    ref = runner.evaluate(x, y, digit_views, seed=4)
    rows = []
    res = runner.evaluate(
        x, y, digit_views, seed=4, callbacks=lambda i, m: rows.append(m), log_dir=tmp_path / "l"
    )
    assert res["accuracy_per_step"] == ref["accuracy_per_step"]
    assert len(rows) == 5 and rows[-1]["accuracy"] == pytest.approx(res["accuracy"])
    assert 100 * sum(r["correct"] for r in rows) / 5 == pytest.approx(res["accuracy"])
    assert 100 * sum(r["correct_before"] for r in rows) / 5 == pytest.approx(res["accuracy_per_step"][0])
    assert read_jsonl(tmp_path / "l" / "metrics.jsonl")[-1]["n"] == 5


def test_cli_train_then_adapt_with_the_folders_equals_the_built_in_demo(tmp_path, monkeypatch, capsys):
    import iclr24.rlcf.experiments as ex

    original = ex.DemoConfig
    monkeypatch.setattr(ex, "DemoConfig", lambda: original(policy_steps=6, reward_steps=6))
    ex._CACHE.clear()
    run = tmp_path / "train"
    argv = [
        "train",
        "--policy-steps",
        "6",
        "--reward-steps",
        "6",
        "--seed",
        "1",
        "--out",
        str(run),
        "--quiet",
    ]
    assert main([*argv, "--log-dir", str(tmp_path / "logs")]) == 0
    prov = json.loads((run / "policy" / "provenance.json").read_text())
    assert prov["command"] == "rlcf " + " ".join([*argv, "--log-dir", str(tmp_path / "logs")])
    assert prov["seed"] == prov["data_seed"] == 1 and prov["steps"] == 6 and prov["cpu_seconds"] >= 0
    assert [r["step"] for r in prov["losses"]] == [0, 1, 2, 3, 4, 5]
    assert len(read_jsonl(tmp_path / "logs" / "reward" / "metrics.jsonl")) == 7
    policy, reward, _ = train_digit_clips(
        original(policy_steps=6, reward_steps=6), 1
    )  # in-process, same recipe
    assert same_weights(policy, ToyCLIP.from_pretrained(run / "policy"))
    assert same_weights(reward, ToyCLIP.from_pretrained(run / "reward"))
    ex._CACHE.clear()
    common = ["adapt", "--n-test", "4", "--seed", "1", "--quiet"]
    assert main([*common, "--out", str(tmp_path / "tiny")]) == 0
    folders = ["--policy", str(run / "policy"), "--reward", str(run / "reward")]
    assert main([*common, *folders, "--out", str(tmp_path / "f"), "--log-dir", str(tmp_path / "alog")]) == 0
    tiny, fold = (json.loads((tmp_path / d / "results.json").read_text()) for d in ("tiny", "f"))
    assert fold["accuracy_per_step"] == tiny["accuracy_per_step"] and fold["n"] == 4
    assert len(read_jsonl(tmp_path / "alog" / "metrics.jsonl")) == 4 + 1
    capsys.readouterr()
    # a folder from another seed's split, a folder with real images, a folder beside 'tiny': one line, exit 2
    assert main(["train", "--policy-steps", "1", "--reward-steps", "1", "--seed", "2", "--out", str(tmp_path / "s2"),
                 "--quiet"]) == 0  # fmt: skip
    capsys.readouterr()
    bad = [
        [*common, "--policy", str(run / "policy"), "--reward", str(tmp_path / "s2" / "reward")],
        [*common, *folders, "--data", str(tmp_path)],
        [*common, "--policy", str(run / "policy")],
    ]
    for i, b in enumerate(bad):
        assert main([*b, "--out", str(tmp_path / f"bad{i}")]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 3 and "seeds 1 and 2" in err[0] and "folder of images" in err[1] and "tiny" in err[2]


@pytest.mark.slow  # the README's train -> save -> load -> adapt block: 320 training steps, 30 digits adapted
def test_readme_train_save_load_adapt_block(tmp_path):
    readme = Path(__file__).parents[1] / "README.md"
    res = run_readme_blocks(readme, cwd=tmp_path, blocks=[1], values={1: {"acc": "res['accuracy_per_step']"}})
    assert len(res["acc"]) == 4 and all(0 <= a <= 100 for a in res["acc"])
    for d in ("rlcf-policy", "rlcf-reward"):
        assert (tmp_path / "runs" / d / "model.safetensors").is_file()
    assert (tmp_path / "runs" / "rlcf-log" / "reward" / "metrics.jsonl").is_file()
    assert (tmp_path / "runs" / "rlcf-adapt" / "metrics.jsonl").is_file()
