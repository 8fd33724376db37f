"""Bad input at the Python API: every loader and entry point raises InputError/InputFileError naming the file or
argument; torch's and PIL's exceptions never reach a user raw, and no message carries the weights_only=False advice."""

import argparse

import pytest
import torch
from PIL import Image

from iclr24.fastervit import read_state_dict
from iclr24.fastervit.predict import predict
from iclr24.fastervit.train import TrainConfig
from iclr24.fastervit.train import train
from iclr24.fastervit.validate import validate
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

TINY = {"dim": 16, "in_dim": 8, "depths": [1, 1, 1, 1], "window_size": [7, 7, 2, 1]}


def _image_folder(root, classes=("ant", "bee"), n=3):
    for k, cls in enumerate(classes):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            Image.new("RGB", (40, 40), (60 * k + 10 * i, 20, 30)).save(root / cls / f"{i}.png")
    return root


def test_a_0_byte_checkpoint_is_one_line_naming_it(tmp_path):
    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    img = tmp_path / "x.png"
    Image.new("RGB", (40, 40)).save(img)
    data = _image_folder(tmp_path / "val")
    for call in (
        lambda: read_state_dict(empty),
        lambda: predict(img, empty, model_name="faster_vit_0_224"),
        lambda: validate(empty, data, model_name="faster_vit_0_224", show_progress=False),
    ):
        with pytest.raises(InputFileError, match="empty") as e:
            call()
        assert str(empty) in str(e.value) and "\n" not in str(e.value)


def test_damaged_and_foreign_checkpoints_never_show_the_unsafe_advice(tmp_path):
    junk = tmp_path / "junk.pth"
    junk.write_bytes(b"\x80\x02not a checkpoint" * 20)
    ns = tmp_path / "ns.pth"
    torch.save({"args": argparse.Namespace(lr=1), "x": {"a": torch.nn.Linear(1, 1)}}, ns)
    for path in (junk, ns, tmp_path):
        with pytest.raises(InputFileError) as e:
            read_state_dict(path)
        assert str(path) in str(e.value)
        msg = str(e.value).replace(str(path), "P")
        assert "weights_only" not in msg and "trust" not in msg and "\n" not in msg


@pytest.mark.parametrize("workers", [0, 1])
def test_train_on_a_folder_with_a_corrupt_jpeg_names_the_file(tmp_path, workers):
    root = _image_folder(tmp_path / "imgs", n=4)
    bad = root / "bee" / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 this is not really a jpeg")
    cfg = TrainConfig(epochs=1, batch_size=4, img_size=32, model_kwargs=TINY, num_workers=workers)
    with pytest.raises(InputFileError, match="broken.jpg") as e:
        train(cfg, str(root), show_progress=False)
    assert "\n" not in str(e.value) and "Traceback" not in str(e.value)


def test_predict_refuses_a_corrupt_image(tmp_path):
    bad = tmp_path / "broken.jpg"
    bad.write_bytes(b"\xff\xd8\xff\xe0 not a jpeg")
    with pytest.raises(InputFileError, match="broken.jpg"):
        predict(bad, tmp_path / "nope.pth")


@pytest.mark.parametrize(
    "kw",
    [{"epochs": 10**20}, {"epochs": 0}, {"batch_size": 2.5}, {"lr": float("nan")}, {"img_size": 33}],
)
def test_train_config_refuses_bad_numbers(kw):
    with pytest.raises(InputError):
        TrainConfig(**kw)
