import numpy as np
import pytest
import timm
import torch
from PIL import Image

from iclr24.fastervit.data import IMAGENET_MEAN
from iclr24.fastervit.data import IMAGENET_STD
from iclr24.fastervit.validate import eval_data_config
from iclr24.fastervit.validate import validate

TINY = {"dim": 16, "in_dim": 8, "depths": [1, 1, 1, 1], "window_size": [7, 7, 2, 1]}


def _folder(root, classes=("ant", "bee", "cat"), n=3):
    for k, cls in enumerate(classes):
        (root / cls).mkdir(parents=True)
        for i in range(n):
            g = torch.Generator().manual_seed(10 * k + i)
            arr = (torch.rand(48, 40, 3, generator=g) * 255).to(torch.uint8).numpy()
            Image.fromarray(arr).save(root / cls / f"{i}.png")
    return root


def _checkpoint(tmp_path, classes):
    torch.manual_seed(0)
    m = timm.create_model("faster_vit_0_224", num_classes=len(classes), **TINY)
    path = tmp_path / "ck.pth"
    torch.save(
        {
            "state_dict": m.state_dict(),
            "model": "faster_vit_0_224",
            "classes": list(classes),
            "img_size": 32,
            "model_kwargs": TINY,
        },
        path,
    )
    return m.eval(), path


def test_eval_transform_is_timms_with_the_variants_crop_pct():
    fv0 = timm.create_model("faster_vit_0_224", **TINY)
    fv1 = timm.create_model("faster_vit_1_224", **TINY)
    c0, c1 = eval_data_config(fv0), eval_data_config(fv1)
    assert (c0["crop_pct"], c1["crop_pct"]) == (0.875, 1.0)  # as the official validation uses
    assert c0["interpolation"] == c1["interpolation"] == "bicubic" and c0["input_size"] == (3, 224, 224)
    assert eval_data_config(fv0, img_size=64, crop_pct=0.9)["input_size"] == (3, 64, 64)
    with pytest.raises(ValueError, match="crop_pct"):
        eval_data_config(fv0, crop_pct=1.5)


def test_validate_matches_a_hand_computed_top1_and_maps_classes_by_name(tmp_path):
    """A folder holding two of the checkpoint's three classes: targets are mapped by name, and top-1 equals the
    one computed by hand (resize the short side to 32 / 0.875 = 37 px bicubic, centre-crop 32, normalise)."""
    classes = ("ant", "bee", "cat")
    model, ck = _checkpoint(tmp_path, classes)
    data = _folder(tmp_path / "val", classes=("bee", "cat"))
    res = validate(ck, data, batch_size=4, show_progress=False)
    assert res["n"] == 6 and res["data_config"]["crop_pct"] == 0.875
    correct = 0
    mean, std = torch.tensor(IMAGENET_MEAN).view(3, 1, 1), torch.tensor(IMAGENET_STD).view(3, 1, 1)
    for label, cls in ((1, "bee"), (2, "cat")):
        for f in sorted((data / cls).iterdir()):
            img = Image.open(f).convert("RGB")
            w, h = img.size
            img = img.resize((37, round(37 * h / w)), Image.BICUBIC)
            left, top = (img.size[0] - 32) // 2, (img.size[1] - 32) // 2
            x = torch.from_numpy(np.asarray(img.crop((left, top, left + 32, top + 32)), dtype=np.float32))
            x = ((x.permute(2, 0, 1) / 255 - mean) / std).unsqueeze(0)
            with torch.no_grad():
                correct += int(model(x).argmax(1).item() == label)
    assert res["top1"] == pytest.approx(correct / 6) and res["top5"] == 1.0  # 3 classes: top-5 holds them all


def test_validate_rejects_bad_input(tmp_path):
    _, ck = _checkpoint(tmp_path, ("ant", "bee"))
    with pytest.raises(FileNotFoundError, match="does not exist"):
        validate(ck, tmp_path / "nope", show_progress=False)
    data = _folder(tmp_path / "other", classes=("dog",), n=1)
    with pytest.raises(ValueError, match="not among the checkpoint's classes"):
        validate(ck, data, show_progress=False)
    (tmp_path / "empty" / "ant").mkdir(parents=True)
    with pytest.raises(FileNotFoundError, match="not a usable ImageFolder"):
        validate(ck, tmp_path / "empty", show_progress=False)
    bare = tmp_path / "bare.pth"
    torch.save(torch.load(ck, weights_only=True)["state_dict"], bare)
    with pytest.raises(ValueError, match="does not record its variant"):
        validate(bare, data, show_progress=False)


def test_class_folders_map_to_imagenet_indices_by_synset(tmp_path):
    from iclr24.fastervit.validate import _class_map

    assert _class_map(["n01440764", "n01443537", "n15075141"], None, 1000, tmp_path) == [0, 1, 999]
    assert _class_map(["b", "c"], ["a", "b", "c"], 3, tmp_path) == [1, 2]
    assert _class_map(["x", "y"], None, 2, tmp_path) == [0, 1]
    with pytest.raises(ValueError, match="3 class folders but the checkpoint's head has 2"):
        _class_map(["x", "y", "z"], None, 2, tmp_path)
