"""Shipped checkpoints (paperkit.shipped): finding, verifying, labelling and retraining them; and every package's
``checkpoints/`` folder within the size limits, complete, and free of machine paths."""

import json
import shlex
import sys
from pathlib import Path

import pytest
import torch
from torch import nn

from iclr24.paperkit import shipped
from iclr24.paperkit.claims import RunConfig
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.pretrained import read_model_folder

ROOT = Path(__file__).resolve().parents[2]


class Lin(PretrainedMixin, nn.Module):
    def __init__(self, *, d: int = 3):
        super().__init__()
        self.f = nn.Linear(d, 1)


def _fake_train(argv):
    """A stand-in `fake train --seed S --steps N --out DIR`: trains Lin and saves OUT/model with losses."""
    a = dict(zip(argv[1::2], argv[2::2], strict=False))
    torch.manual_seed(int(a["--seed"]))
    m = Lin()
    opt = torch.optim.SGD(m.parameters(), lr=0.1)
    x, losses = torch.ones(8, 3), {}
    for step in range(1, int(a["--steps"]) + 1):
        loss = (m.f(x) - 1).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses[str(step)] = loss.item()
    cmd = shlex.join(["fake", *argv])
    m.save_pretrained(Path(a["--out"]) / "model", provenance={"command": cmd, "steps": int(a["--steps"]),
                      "steps_unit": "SGD steps", "cpu_seconds": 0.5, "losses": losses})  # fmt: skip
    return 0


@pytest.fixture
def fakepkg(tmp_path, monkeypatch):
    """An importable package ``fakeshipped`` with one shipped model trained by the fake command."""
    pkg = tmp_path / "src" / "fakeshipped"
    (pkg / "checkpoints").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setattr(shipped, "_console_main", lambda prog: _fake_train)
    cmd = "fake train --seed 3 --steps 30"
    (pkg / "checkpoints" / "commands.json").write_text(json.dumps({"m-s3": cmd}))
    trained = shipped.run_train_command(cmd, tmp_path / "run")
    shipped.install_model(trained, pkg / "checkpoints" / "m-s3")
    yield "fakeshipped", pkg / "checkpoints"
    sys.modules.pop("fakeshipped", None)


def test_flags_are_replaced_appended_and_removed():
    r = shipped._replace_flags
    assert r(["train", "--steps", "5", "--out", "a"], {"--steps": "7"}) == [
        "train",
        "--out",
        "a",
        "--steps",
        "7",
    ]
    assert r(["train", "--out=a", "--quiet"], {"--out": "b"}) == ["train", "--quiet", "--out", "b"]
    assert r(["train", "--quiet", "--seed", "1"], {"--quiet": None}) == ["train", "--seed", "1"]


def test_loss_mismatches_compare_common_steps_and_refuse_an_empty_comparison():
    assert shipped.loss_mismatches({"1": 1.0, "2": 0.5}, {"1": 1.0000001, "3": 9.0}) == []
    assert shipped.loss_mismatches({"1": 1.0}, {"1": 1.01}) == ["step 1: recorded 1, retrained 1.01"]
    assert shipped.loss_mismatches({"1": 1.0}, {"2": 1.0})[0].startswith("no common steps")


def test_installed_model_names_no_machine_folder_and_is_labelled(fakepkg, tmp_path):
    name, ckdir = fakepkg
    prov = json.loads((ckdir / "m-s3" / "provenance.json").read_text())
    assert prov["command"] == "fake train --seed 3 --steps 30 --out OUT"
    assert str(tmp_path) not in (ckdir / "m-s3" / "provenance.json").read_text()
    read_model_folder(ckdir / "m-s3")  # the sha still matches: only provenance text changed
    label = shipped.training_label(ckdir / "m-s3")
    assert label.startswith("`fake train --seed 3 --steps 30` (30 SGD steps, 0 CPU s on ")


def test_model_folder_verifies_the_shipped_model_and_refuses_damage(fakepkg, tmp_path):
    name, ckdir = fakepkg
    cfg = RunConfig(out=tmp_path / "o")
    assert shipped.model_folder(cfg, name, "m-s3") == ckdir / "m-s3"
    with pytest.raises(InputFileError, match="ships no model 'nope'"):
        shipped.model_folder(cfg, name, "nope")
    w = ckdir / "m-s3" / "model.safetensors"
    w.write_bytes(w.read_bytes()[:-1] + b"\0")
    with pytest.raises(InputFileError, match="does not match its provenance"):
        shipped.model_folder(cfg, name, "m-s3")


def test_from_scratch_retrains_with_the_recorded_command_and_matches_its_losses(fakepkg, tmp_path):
    name, ckdir = fakepkg
    cfg = RunConfig(out=tmp_path / "o", from_scratch=True)
    new = shipped.model_folder(cfg, name, "m-s3")
    assert new == tmp_path / "o" / "from-scratch" / "m-s3" / "model"
    assert shipped.model_folder(cfg, name, "m-s3") == new  # once per run
    rec, fresh = (read_model_folder(f)[2]["losses"] for f in (ckdir / "m-s3", new))
    assert shipped.loss_mismatches(rec, fresh, rtol=0, atol=0) == []
    short = shipped.retrain(ckdir / "m-s3", tmp_path / "short", overrides={"--steps": "5"})
    part = read_model_folder(short)[2]["losses"]
    assert sorted(part, key=int) == ["1", "2", "3", "4", "5"]
    assert shipped.loss_mismatches(rec, part, rtol=0, atol=0) == []


def test_a_package_without_checkpoints_refuses_from_scratch(tmp_path, capsys):
    from iclr24.paperkit.cli import App
    from iclr24.paperkit.cli import ships_checkpoints
    from iclr24.paperkit.paper import Paper

    with pytest.raises(InputFileError, match="ships no checkpoints"):
        shipped.shipped_commands("iclr24.paperkit")
    paper = Paper(name="toy", title="Toy", summary="A toy.", run=lambda cfg: [])
    assert ships_checkpoints(paper) is False
    app = App("toy", "a toy")
    app.add_reproduce(lambda: paper)
    assert app.main(["reproduce", "--from-scratch", "--smoke", "--out", str(tmp_path / "o")]) == 2
    assert "ships no checkpoints" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def _absolute_paths(value) -> list[str]:
    """Strings (or command words) in a JSON value that are absolute file paths."""
    if isinstance(value, dict):
        return [p for v in value.values() for p in _absolute_paths(v)]
    if isinstance(value, list):
        return [p for v in value for p in _absolute_paths(v)]
    if isinstance(value, str):
        paths = (Path(w.split("=", 1)[-1].strip("'\"`(),")) for w in value.split())
        return [str(p) for p in paths if p.is_absolute() and len(p.parts) > 1]
    return []


def test_absolute_paths_are_found_in_nested_provenance():
    assert _absolute_paths({"command": "x train --out OUT", "data": "mnist", "n": [1, {"k": "a/b"}]}) == []
    found = _absolute_paths({"c": ["ok", {"d": "x train --data=" + str(Path.home() / "d.npz")}]})
    assert found == [str(Path.home() / "d.npz")]
    assert _absolute_paths({"unit": "every steps // 20, the package's own"}) == []


def _checkpoint_dirs():
    return sorted(ROOT.glob("packages/*/src/iclr24/*/checkpoints"))


@pytest.mark.parametrize("ckdir", _checkpoint_dirs(), ids=lambda p: p.parts[-2])
def test_every_shipped_checkpoint_folder_is_complete_small_and_pathless(ckdir):
    cmds = json.loads((ckdir / shipped.COMMANDS_FILE).read_text())
    folders = {p.name for p in ckdir.iterdir() if p.is_dir() and not p.name.startswith((".", "__"))}
    assert folders == set(cmds), "commands.json and the model folders must name the same models"
    total = 0
    for model, cmd in cmds.items():
        prov = read_model_folder(ckdir / model)[2]  # sha256 checked
        assert shlex.split(prov["command"])[:2] == shlex.split(cmd)[:2]
        assert "--out" not in shlex.split(cmd), "commands.json gives the command without --out"
        assert isinstance(prov.get("losses"), dict) and prov["losses"], "provenance records {step: loss}"
        for f in (ckdir / model).iterdir():
            assert f.stat().st_size <= 5 * 2**20, f"{f} is over 5 MB"
            total += f.stat().st_size
        assert not _absolute_paths(prov), f"{model}: provenance.json names a folder of the training machine"
    assert total <= 25 * 2**20, f"{ckdir}: {total / 2**20:.1f} MB of checkpoints (> 25 MB)"
