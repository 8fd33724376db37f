import argparse
import pickle

import pytest
import timm
import torch

import iclr24.fastervit as fv


def _logits(m, x):
    m.eval()
    with torch.no_grad():
        return m(x)


def test_checkpoint_path_loads_strictly_through_timm(tiny_model, tmp_path):
    src = tiny_model("faster_vit_3_224")
    p = tmp_path / "plain.pth"
    torch.save(src.state_dict(), p)
    dst = timm.create_model("faster_vit_3_224", num_classes=10, dim=16, in_dim=8, checkpoint_path=str(p))
    x = torch.randn(1, 3, 64, 64)
    torch.testing.assert_close(_logits(dst, x), _logits(src, x))


def test_official_style_checkpoint_with_pickled_args_loads_with_weights_only(tiny_model, tmp_path):
    src = tiny_model()
    p = tmp_path / "fastervit_0_224_1k.pth.tar"
    sd = {f"module.{k}": v for k, v in src.state_dict().items()}
    torch.save(
        {"epoch": 3, "arch": "faster_vit_0_224", "state_dict": sd, "args": argparse.Namespace(lr=5e-3)}, p
    )
    dst = fv.create_model("faster_vit_0_224", num_classes=10, dim=16, in_dim=8, checkpoint_path=p)
    x = torch.randn(2, 3, 64, 64)
    torch.testing.assert_close(_logits(dst, x), _logits(src, x))
    via_timm = timm.create_model("faster_vit_0_224", num_classes=10, dim=16, in_dim=8, checkpoint_path=str(p))
    torch.testing.assert_close(_logits(via_timm, x), _logits(src, x))


def test_checkpoint_built_for_another_resolution_loads(tiny_model, tmp_path):
    # geometry buffers (relative_coords_table, relative_bias, ...) are derived, not learned: they are recomputed
    src = tiny_model("faster_vit_0_any_res", resolution=(224, 224))
    p = tmp_path / "a.pth"
    torch.save(src.state_dict(), p)
    dst = fv.create_model("faster_vit_0_any_res", num_classes=10, dim=16, in_dim=8, resolution=(448, 448))
    assert dst.state_dict()["levels.2.blocks.0.hat_pos_embed.relative_bias"].shape[1] == 64
    fv.load_checkpoint(dst, p)  # strict
    x = torch.randn(1, 3, 448, 448)
    torch.testing.assert_close(_logits(dst, x), _logits(src, x))


def test_checkpoint_of_another_variant_names_the_first_mismatching_key(tiny_model, tmp_path):
    p = tmp_path / "one.pth"
    torch.save(tiny_model("faster_vit_1_224").state_dict(), p)
    with pytest.raises(ValueError, match=r"levels\.0\.blocks\.1\.") as e:
        fv.load_checkpoint(tiny_model("faster_vit_0_224"), p)
    assert "another variant" in str(e.value)
    torch.save(tiny_model("faster_vit_0_224", dim=24).state_dict(), p)
    with pytest.raises(ValueError, match="has shape"):
        fv.load_checkpoint(tiny_model("faster_vit_0_224"), p)


class _Evil:
    def __reduce__(self):
        return (print, ("this must never run",))


def test_loading_is_weights_only_and_errors_are_clear(tmp_path):
    p = tmp_path / "evil.pth"
    p.write_bytes(pickle.dumps({"state_dict": {"x": _Evil()}}))
    with pytest.raises(ValueError, match="cannot be read as a torch checkpoint") as e:
        fv.read_state_dict(p)
    msg = str(e.value).replace(str(p), "P")
    assert "weights_only" not in msg and "trust" not in msg  # never the unsafe advice
    with pytest.raises(FileNotFoundError, match="does not exist"):
        fv.read_state_dict(tmp_path / "missing.pth")
    q = tmp_path / "empty.pth"
    torch.save({"epoch": 1}, q)
    with pytest.raises(ValueError, match="no tensors"):
        fv.read_state_dict(q)


def test_finetuning_init_replaces_only_a_mismatched_head(tiny_model, tmp_path):
    from iclr24.fastervit.registry import load_for_finetuning

    p = tmp_path / "c.pth"
    src = tiny_model(num_classes=1000)
    torch.save({"state_dict": src.state_dict()}, p)
    dst = tiny_model(num_classes=7)
    assert load_for_finetuning(dst, p) == ["head.weight", "head.bias"]
    torch.testing.assert_close(dst.patch_embed.conv_down[0].weight, src.patch_embed.conv_down[0].weight)


def test_missing_checkpoint_and_unknown_keywords_are_named(tmp_path):
    """timm itself raises a FileNotFoundError without a message for a missing checkpoint_path, and the
    constructor a bare TypeError for an unknown keyword: both are named here, before the model is built."""
    import timm

    from iclr24.fastervit import create_model

    for make in (timm.create_model, create_model):
        with pytest.raises(FileNotFoundError, match="nope.pth"):
            make("faster_vit_0_224", checkpoint_path=str(tmp_path / "nope.pth"), dim=16, in_dim=8)
        with pytest.raises(ValueError, match="unknown model keyword.*'dimm'.*known ones are dim, in_dim"):
            make("faster_vit_0_224", dimm=16)
