"""Acceptance check 7: logits equal the authors' package (fastervit 1.0.0) with identical weights. Skipped unless
that package is importable (it is never a dependency): PYTHONPATH=<dir with fastervit 1.0.0> pytest ..."""

import warnings

import pytest
import torch

from iclr24.fastervit import registry


@pytest.fixture
def official():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            from fastervit.models import faster_vit, faster_vit_any_res
        except Exception:  # noqa: BLE001 - absent, or broken by this timm
            pytest.skip("the authors' fastervit package is not importable")
    yield faster_vit, faster_vit_any_res
    registry.reregister()  # their import re-registered the same names in timm


@pytest.mark.slow
def test_logits_equal_the_official_implementation(official):
    faster_vit, faster_vit_any_res = official
    for fn, name, kw, size in [
        (faster_vit.faster_vit_0_224, "faster_vit_0_224", {}, 224),
        (faster_vit.faster_vit_3_224, "faster_vit_3_224", dict(dim=32, in_dim=16), 224),
        (faster_vit_any_res.faster_vit_0_any_res, "faster_vit_0_any_res", dict(resolution=[256, 256]), 256),
    ]:
        torch.manual_seed(0)
        theirs = fn(**kw).eval()
        sd = theirs.state_dict()
        for k, v in sd.items():  # move BN statistics and layer scales off their initial values
            if v.is_floating_point() and ("running" in k or "gamma" in k):
                v.add_(0.1 * torch.rand(v.shape))
        ours = registry._build(name, **kw).eval()
        ours.load_state_dict(sd, strict=True)
        x = torch.randn(2, 3, size, size)
        with torch.no_grad():
            torch.testing.assert_close(ours(x), theirs(x), rtol=0, atol=1e-4)
    import timm

    registry.reregister()
    assert (
        type(timm.create_model("faster_vit_0_224", dim=16, in_dim=8)).__module__ == "iclr24.fastervit.model"
    )
