"""Bad input reaches no torch internals: checkpoints with the right outer keys but a damaged inside, a crafted
pickle, an unknown timm architecture, inputs with the wrong channel count; one line on the CLI, exit 2."""

import os

import pytest
import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.sfda2 import adapt
from iclr24.sfda2 import digits_model
from iclr24.sfda2 import pointnet_model
from iclr24.sfda2 import predict
from iclr24.sfda2 import split_timm
from iclr24.sfda2 import train_source
from iclr24.sfda2.cli import CHECKPOINT_FORMAT
from iclr24.sfda2.cli import load_checkpoint
from iclr24.sfda2.cli import main
from iclr24.sfda2.cli import save_checkpoint

META = {"arch": "digits", "num_classes": 10, "bottleneck_dim": 64, "class_names": [str(i) for i in range(10)]}


@pytest.fixture
def good_ckpt(tmp_path):
    return save_checkpoint(tmp_path / "source.pt", digits_model(10, 64), dict(META, size=224))


def _cli_adapt(ckpt, out, capsys):
    rc = main(["adapt", "--source-ckpt", str(ckpt), "--epochs", "1", "--out", str(out), "--quiet"])
    err = capsys.readouterr().err.strip()
    return rc, err


def test_a_good_checkpoint_is_tagged_and_loads(good_ckpt):
    assert torch.load(good_ckpt, weights_only=True)["format"] == CHECKPOINT_FORMAT
    model, meta = load_checkpoint(good_ckpt)
    assert model.num_classes == 10 and meta["arch"] == "digits"


def test_an_untagged_checkpoint_of_an_earlier_version_still_loads(tmp_path):
    p = atomic_torch_save(
        {"state_dict": digits_model(10, 64).state_dict(), "meta": META}, tmp_path / "old.pt"
    )
    assert load_checkpoint(p)[0].num_classes == 10


@pytest.mark.parametrize(
    "meta, expect",
    [
        ({k: v for k, v in META.items() if k != "arch"}, "lacks meta.arch"),  # was a KeyError traceback
        ({**META, "num_classes": "ten"}, "meta.num_classes of type str, expected int"),
        ({**META, "num_classes": 12}, "num_classes 12"),
        ({**META, "arch": "resnet"}, "architecture cannot be built"),
        ({**META, "arch": "timm:no_such_net"}, "timm has no model of that name"),
    ],
)
def test_damaged_meta_is_one_line_exit_2(tmp_path, capsys, meta, expect):
    p = atomic_torch_save(
        {"format": CHECKPOINT_FORMAT, "state_dict": digits_model(10, 64).state_dict(), "meta": meta},
        tmp_path / "bad.pt",
    )
    with pytest.raises(ValueError, match=expect.replace("(", r"\(")):
        load_checkpoint(p)
    rc, err = _cli_adapt(p, tmp_path / "o", capsys)
    assert rc == 2 and len(err.splitlines()) == 1 and expect in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()  # the --out folder this failed command created is gone


def test_weights_of_another_architecture(tmp_path, capsys):
    p = save_checkpoint(tmp_path / "w.pt", digits_model(10, 32), META)  # meta says bottleneck 64
    rc, err = _cli_adapt(p, tmp_path / "o", capsys)
    assert rc == 2 and "do not fit the architecture" in err


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


def test_a_crafted_checkpoint_never_runs_and_no_weights_only_false_advice(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "evil.pt"
    torch.save({"format": CHECKPOINT_FORMAT, "state_dict": {"x": _Evil()}, "meta": META}, p)
    rc, err = _cli_adapt(p, tmp_path / "o", capsys)
    assert rc == 2 and "not a file this package wrote" in err
    assert "weights_only" not in err and not (tmp_path / "PWNED").exists()


def test_unknown_timm_arch_is_refused_before_any_data_is_read(tmp_path, capsys, monkeypatch):
    import iclr24.sfda2.cli as cli

    def boom(*a, **k):
        raise AssertionError("data was read before --arch was checked")

    monkeypatch.setattr(cli, "load_domain", boom)
    rc = main(["train-source", "--arch", "timm:resnet1000", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and len(err.splitlines()) == 1
    assert "timm has no model of that name" in err and "resnet101" in err  # the closest names
    assert not (tmp_path / "o").exists()
    rc = main(["train-source", "--arch", "vgg", "--out", str(tmp_path / "o"), "--quiet"])
    assert rc == 2 and "--arch must be" in capsys.readouterr().err
    with pytest.raises(ValueError, match="timm has no model"):
        split_timm("qwertyuiop", 3)


@pytest.mark.parametrize(
    "model, x, expect",
    [
        (lambda: digits_model(), torch.rand(12, 3, 8, 8), "shape [3, 8, 8]"),
        (lambda: digits_model(), torch.rand(12, 8, 8), "shape [8, 8]"),
        (lambda: pointnet_model(), torch.rand(12, 6, 50), "with C = 3"),
    ],
)
def test_wrong_channel_counts_are_refused_at_the_api(model, x, expect):
    m = model()
    y = torch.zeros(len(x), dtype=torch.long)
    for call in (lambda: predict(m, x), lambda: train_source(m, x, y), lambda: adapt(m, x)):
        with pytest.raises(ValueError, match=r"first layer") as e:
            call()
        assert expect in str(e.value) and "\n" not in str(e.value)
    assert m.training  # the check left the model's mode as it was


def test_a_timm_model_gets_the_channel_check_too():
    m = split_timm("resnet18", 3, bottleneck_dim=8)
    with pytest.raises(ValueError, match="with C = 3"):
        predict(m, torch.rand(2, 1, 32, 32))


def test_metrics_and_folders_are_input_errors(tmp_path):
    import torch

    from iclr24.paperkit.errors import InputError
    from iclr24.paperkit.errors import InputFileError
    from iclr24.sfda2 import ImageFolderDataset
    from iclr24.sfda2 import accuracy
    from iclr24.sfda2 import per_class_accuracy

    with pytest.raises(InputError, match="one length"):
        accuracy(torch.zeros(3, dtype=torch.long), torch.zeros(4, dtype=torch.long))
    with pytest.raises(InputError, match="int tensor"):
        per_class_accuracy(torch.zeros(3), torch.zeros(3, dtype=torch.long))
    f = tmp_path / "not-a-folder"
    f.write_text("x")
    with pytest.raises(InputFileError, match="is a file") as e:
        ImageFolderDataset(f)
    assert isinstance(e.value, NotADirectoryError)
