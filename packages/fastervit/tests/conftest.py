import json
from pathlib import Path

import pytest
import torch

torch.set_num_threads(1)

FIXTURES = Path(__file__).parent / "fixtures"
TINY = dict(dim=16, in_dim=8)  # FasterViT-0 topology at 1/4 width: fast on CPU, same code paths


@pytest.fixture(scope="session")
def official_layout() -> dict:
    return json.loads((FIXTURES / "official_layout.json").read_text())["variants"]


@pytest.fixture
def tiny_model():
    import timm

    import iclr24.fastervit  # noqa: F401  (registers the variants)

    def make(name: str = "faster_vit_0_224", **kw):
        torch.manual_seed(0)
        return timm.create_model(name, num_classes=kw.pop("num_classes", 10), **{**TINY, **kw})

    return make
