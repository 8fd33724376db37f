"""Bad input that used to reach torch (wrong channel counts) or to be found only after minutes of work
(--selection-p): one clear line at the boundary, before any work."""

import pytest
import torch

from iclr24.rlcf.cli import main
from iclr24.rlcf.data import DIGIT_NAMES as NAMES
from iclr24.rlcf.data import class_prompts
from iclr24.rlcf.model import check_images
from iclr24.rlcf.model import image_input_spec
from iclr24.rlcf.model import tokenize
from iclr24.rlcf.retrieval import RetrievalTTA
from iclr24.rlcf.reward import CLIPReward
from iclr24.rlcf.tta import TTAConfig
from iclr24.rlcf.tta import TTARunner


def test_the_input_spec_of_the_toy_and_an_open_clip_vit():
    import open_clip

    from iclr24.rlcf.toyclip import build_toy_clip

    assert image_input_spec(build_toy_clip()) == (1, (8, 8))
    vit = open_clip.model.VisionTransformer(image_size=16, patch_size=8, width=16, layers=1, heads=2,
                                            mlp_ratio=2.0, output_dim=8)  # fmt: skip
    assert image_input_spec(vit) == (3, (16, 16))
    with pytest.raises(ValueError, match=r"takes 3-channel images .* got 1 channels"):
        check_images(vit, torch.rand(2, 1, 16, 16), "policy")
    with pytest.raises(ValueError, match="takes 16x16 images, got 8x8"):
        check_images(vit, torch.rand(2, 3, 8, 8), "policy")
    assert check_images(vit, torch.rand(2, 3, 8, 8), "policy", check_size=False).shape == (2, 3, 8, 8)


@pytest.mark.parametrize("method", ["rlcf", "tpt", "zero-shot"])
def test_views_with_the_wrong_channel_count_are_refused_by_the_runner(toy_pair, digits_kw, method):
    policy, reward_model = toy_pair
    r = TTARunner(policy, CLIPReward(reward_model), NAMES,
                  TTAConfig(method=method, mode="image", n_views=16, selection_p=0.25), **digits_kw)  # fmt: skip
    with pytest.raises(ValueError, match="the policy's image encoder takes 1-channel images") as e:
        r.adapt(torch.rand(16, 3, 8, 8))  # RGB views for the one-channel digit CLIP
    assert "\n" not in str(e.value)
    with pytest.raises(ValueError, match="takes 8x8 images, got 16x16"):
        r.adapt(torch.rand(16, 1, 16, 16))


def test_the_reward_model_checks_its_own_channels(toy_pair):
    _, reward_model = toy_pair
    with pytest.raises(ValueError, match="reward model's image encoder takes 1-channel images"):
        CLIPReward(reward_model).set_image_features(torch.rand(4, 3, 8, 8))
    # views of another side are resized to the reward model's resolution, then checked
    assert CLIPReward(reward_model, resolution=8).set_image_features(torch.rand(4, 1, 12, 12)).shape[0] == 4


@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_retrieval_refuses_wrong_channels(toy_pair, direction):
    policy, reward_model = toy_pair
    caps = tokenize(class_prompts(NAMES, "a photo of the digit {}."), 16)
    rt = RetrievalTTA(policy, CLIPReward(reward_model), direction=direction, steps=1, sample_k=2)
    if direction == "t2i":
        with pytest.raises(ValueError, match="1-channel images"):
            rt.set_gallery(torch.rand(10, 3, 8, 8))
    else:
        rt.set_gallery(caps)
        with pytest.raises(ValueError, match="1-channel images"):
            rt.query(torch.rand(1, 3, 8, 8))


def test_selection_p_is_refused_before_the_tiny_clips_train(tmp_path, monkeypatch, capsys):
    """`rlcf adapt --selection-p 0.001` used to fail only after ~2 minutes of training."""
    import iclr24.rlcf.experiments as ex

    def no_work(*a, **k):
        raise AssertionError("training started before the settings were checked")

    monkeypatch.setattr(ex, "train_digit_clips", no_work)
    out = tmp_path / "o"
    for argv, expect in (
        (["--selection-p", "0.001"], "selects no view"),
        (["--selection-p", "0"], "selection_p must be a fraction in (0, 1]"),
        (["--sample-k", "11"], "exceeds the 10 classes"),
        (["--momentum", "1.0"], "momentum"),
    ):
        assert main(["adapt", *argv, "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err.strip()
        assert len(err.splitlines()) == 1 and expect in err, err
        assert not out.exists()  # the failed command left no --out folder


def test_a_folder_without_classes_is_refused_before_any_model_loads(tmp_path, monkeypatch, capsys):
    import iclr24.rlcf.cli as cli

    def no_load(*a, **k):
        raise AssertionError("a model loaded before the data folder was checked")

    monkeypatch.setattr(cli, "_load", no_load)
    empty = tmp_path / "images"
    empty.mkdir()
    argv = ["adapt", "--policy", "p.pt", "--reward", "r.pt", "--out", str(tmp_path / "o"), "--quiet"]
    assert main([*argv, "--data", str(empty)]) == 2
    assert "no class subfolders" in capsys.readouterr().err
    (empty / "a").mkdir()
    (empty / "b").mkdir()
    assert main([*argv, "--data", str(empty)]) == 2
    assert "class folder(s) without images: a, b" in capsys.readouterr().err
    from PIL import Image

    for c in ("a", "b"):
        Image.new("RGB", (4, 4)).save(empty / c / "0.png")
    assert main([*argv, "--data", str(empty), "--sample-k", "3"]) == 2
    assert "exceeds the 2 classes" in capsys.readouterr().err
    assert main([*argv, "--data", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


def test_tokenize_honours_or_refuses_its_context_length():
    assert tuple(tokenize(["a cat"], context_length=5).shape) == (1, 5)
    for bad in (0, 1, -3, 2.5, True):
        with pytest.raises(ValueError, match="context_length"):
            tokenize(["a cat"], context_length=bad)
    with pytest.raises(ValueError, match="list of strings"):
        tokenize("a cat")


def test_average_entropy_refuses_nan_logits():
    from iclr24.paperkit.errors import InputError
    from iclr24.rlcf.losses import average_entropy

    with pytest.raises(InputError, match="NaN"):
        average_entropy(torch.tensor([[0.0, float("nan")], [1.0, 2.0]]))
    assert torch.isfinite(average_entropy(torch.randn(4, 3)))


def test_load_clip_on_a_damaged_or_pickled_file_never_shows_the_unsafe_advice(tmp_path):
    import argparse

    from iclr24.paperkit.errors import InputFileError
    from iclr24.rlcf.model import load_clip

    junk = tmp_path / "junk.pt"
    junk.write_bytes(b"not a checkpoint at all" * 4)
    obj = tmp_path / "obj.pt"
    torch.save({"args": argparse.Namespace(lr=1)}, obj)
    for path, arch in ((junk, None), (junk, "ViT-B-16"), (obj, None)):
        with pytest.raises(InputFileError) as e:
            load_clip(path, arch=arch)
        msg = str(e.value).replace(str(path), "P")
        assert str(path) in str(e.value) and "weights_only" not in msg and "trusted" not in msg
