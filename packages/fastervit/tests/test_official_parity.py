"""Acceptance check 7, in every run: our models load state dicts of the authors' release (fastervit 1.0.0) with
``strict=True`` and give its logits. The fixture was recorded once with the authors' package by
``scripts/make_parity_fixture.py`` (tiny configurations of FasterViT-0, FasterViT-3 with layer scale and carrier-token
propagation, and the any_res model); that package is never needed here."""

import json
from pathlib import Path

import pytest
import timm
import torch

import iclr24.fastervit  # noqa: F401  (registers the variants)

FIXTURES = Path(__file__).parent / "fixtures"
META = json.loads((FIXTURES / "official_parity.json").read_text())


@pytest.fixture(scope="module")
def recorded():
    return torch.load(FIXTURES / "official_parity.pt", map_location="cpu", weights_only=True)


def _state_dict(recorded, case):
    sd = {**recorded["state_dict"], **recorded["extra_keys"][case]}
    return {k: v.float() if v.is_floating_point() else v for k, v in sd.items()}


@pytest.mark.parametrize("case", list(META["cases"]))
def test_official_state_dict_loads_strictly_and_gives_the_official_logits(recorded, case):
    info = META["cases"][case]
    kwargs = dict(info["kwargs"])
    if isinstance(kwargs["resolution"], list):
        kwargs["resolution"] = tuple(kwargs["resolution"])
    ours = timm.create_model(info["ours"], **kwargs).eval()
    sd = _state_dict(recorded, case)
    assert set(sd) == set(ours.state_dict())  # the same keys, none left over on either side
    ours.load_state_dict(sd, strict=True)
    assert sum(p.numel() for p in ours.parameters()) == info["params"]
    with torch.no_grad():
        logits = ours(recorded["input"])
    expected = recorded["logits"][case]
    assert expected.abs().max() > 0.1  # the recorded logits are not trivially small
    torch.testing.assert_close(logits, expected, rtol=0, atol=1e-5)


def test_a_changed_weight_changes_the_logits(recorded):
    """The comparison above can fail: perturbing one carrier-token weight moves the logits past the tolerance."""
    info = META["cases"]["faster_vit_3"]
    ours = timm.create_model(info["ours"], **info["kwargs"]).eval()
    sd = _state_dict(recorded, "faster_vit_3")
    sd["levels.2.blocks.0.hat_attn.qkv.weight"] = sd["levels.2.blocks.0.hat_attn.qkv.weight"] * 1.5
    ours.load_state_dict(sd, strict=True)
    with torch.no_grad():
        diff = (ours(recorded["input"]) - recorded["logits"]["faster_vit_3"]).abs().max()
    assert diff > 1e-4
