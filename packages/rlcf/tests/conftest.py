import pytest
import torch

from iclr24.rlcf.data import DIGIT_TEMPLATE
from iclr24.rlcf.model import ToyCLIPConfig
from iclr24.rlcf.model import tokenize
from iclr24.rlcf.toyclip import build_toy_clip


def tok16(texts, context_length=16):
    return tokenize(texts, context_length)


@pytest.fixture(autouse=True)
def _one_thread():
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


@pytest.fixture
def toy_pair():
    """An untrained tiny policy and reward CLIP (conv towers, open_clip text transformer, context 16)."""
    return build_toy_clip(ToyCLIPConfig(vision_width=4), seed=0), build_toy_clip(
        ToyCLIPConfig(vision_width=8), seed=1
    )


@pytest.fixture
def digits_kw():
    return dict(template=DIGIT_TEMPLATE, ctx_init="a photo of the digit", policy_tokenizer=tok16,
                reward_tokenizer=tok16)  # fmt: skip
