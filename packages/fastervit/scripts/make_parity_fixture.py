"""Record the official-parity fixture: tiny official FasterViT models, their weights and their logits.

Run once, by hand, with an interpreter that has the authors' package (never a dependency of this package):

    uv venv /tmp/fv-official --python 3.11
    uv pip install --python /tmp/fv-official/bin/python fastervit==1.0.0 torch timm
    /tmp/fv-official/bin/python packages/fastervit/scripts/make_parity_fixture.py

It writes ``tests/fixtures/official_parity.pt`` (tensors, strings and numbers only: it loads with
``torch.load(weights_only=True)``) and ``tests/fixtures/official_parity.json`` (the versions and configurations).
``tests/test_official_parity.py`` then checks, in every run and without the authors' package, that our models
load each state dict with ``strict=True`` and give the recorded logits.
"""

from __future__ import annotations

import json
import warnings
from importlib.metadata import version
from pathlib import Path

import torch

warnings.filterwarnings("ignore")

FIXTURES = Path(__file__).resolve().parents[1] / "tests" / "fixtures"
SIZE = 64  # stage 3 is 4x4 with 2x2 windows (HAT: 16 carrier tokens), stage 4 one 2x2 window
TINY = dict(dim=8, in_dim=8, depths=[1, 1, 2, 2], window_size=[7, 7, 2, 2], num_classes=10, resolution=SIZE)
# case -> (official module, official constructor, our registered name, keyword arguments)
CASES = {
    "faster_vit_0": ("faster_vit", "faster_vit_0_224", "faster_vit_0_224", TINY),
    # layer scale 1e-5 and carrier-token propagation (the FasterViT-3..6 code paths)
    "faster_vit_3": ("faster_vit", "faster_vit_3_224", "faster_vit_3_224", TINY),
    "faster_vit_0_any_res": (
        "faster_vit_any_res",
        "faster_vit_0_any_res",
        "faster_vit_0_any_res",
        dict(TINY, resolution=[SIZE, SIZE]),
    ),
}


DERIVED = (
    "relative_coords_table",
    "relative_position_index",
    "relative_bias",
)  # recomputed from the geometry


def _perturb(sd: dict[str, torch.Tensor], gen: torch.Generator) -> dict[str, torch.Tensor]:
    """Move every learned value off its initialisation (zero biases, unit norms, 1e-5 layer scales, fresh BN
    statistics), so that each term of the forward pass shows in the logits; then round the learned values to
    bfloat16 (stored as such: half the file, and exact again once cast back to float32)."""
    out = {}
    for k, v in sd.items():
        v = v.clone()
        if v.is_floating_point() and k.rsplit(".", 1)[-1] not in DERIVED:
            if "running_var" in k:
                v.add_(0.5 * torch.rand(v.shape, generator=gen))
            elif "gamma" in k:
                v.add_(0.2 + 0.3 * torch.rand(v.shape, generator=gen))
            else:
                v.add_(0.05 * torch.randn(v.shape, generator=gen))
            v = v.to(torch.bfloat16).float()
        out[k] = v
    # the official TokenInitializer registers one conv under two names: keep the two copies equal
    for k in [k for k in out if ".global_tokenizer.to_global_feature.pos." in k]:
        out[k] = out[k.replace("to_global_feature.pos.", "pos_embed.")]
    return out


def _compact(sd: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    return {
        k: v.to(torch.bfloat16) if v.is_floating_point() and k.rsplit(".", 1)[-1] not in DERIVED else v
        for k, v in sd.items()
    }


def main() -> None:
    import importlib

    gen = torch.Generator().manual_seed(0)
    x = torch.randn(2, 3, SIZE, SIZE, generator=gen)
    # one state dict for all cases: the any_res model has FasterViT-0's keys, FasterViT-3 adds layer scales
    out: dict = {"input": x, "state_dict": {}, "extra_keys": {}, "logits": {}}
    meta: dict = {
        "source": f"fastervit=={version('fastervit')} (PyPI, NVlabs), torch {torch.__version__}, "
        f"timm {version('timm')}",
        "input": [2, 3, SIZE, SIZE],
        "cases": {},
    }
    for case, (module, fn, ours, kwargs) in CASES.items():
        mod = importlib.import_module(f"fastervit.models.{module}")
        torch.manual_seed(0)
        model = getattr(mod, fn)(**kwargs).eval()
        base = out["state_dict"]
        sd = model.state_dict()
        if not base:
            base.update(_perturb(sd, gen))
        new = _perturb({k: v for k, v in sd.items() if k not in base}, gen)
        missing = set(base) - set(sd)
        if missing:
            raise RuntimeError(f"{case}: lacks {sorted(missing)[:3]}")
        model.load_state_dict({**base, **new}, strict=True)
        with torch.no_grad():
            logits = model(x)
        out["extra_keys"][case] = _compact(new)
        out["logits"][case] = logits
        meta["cases"][case] = {
            "official": f"fastervit.models.{module}.{fn}",
            "ours": ours,
            "kwargs": kwargs,
            "params": sum(p.numel() for p in model.parameters()),
            "max_abs_logit": float(logits.abs().max()),
        }
        print(case, meta["cases"][case]["params"], "params")
    out["state_dict"] = _compact(out["state_dict"])
    torch.save(out, FIXTURES / "official_parity.pt")
    (FIXTURES / "official_parity.json").write_text(json.dumps(meta, indent=1) + "\n")


if __name__ == "__main__":
    main()
