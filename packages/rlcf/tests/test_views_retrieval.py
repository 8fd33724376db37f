"""Views of one test image, and RLCF for retrieval."""

import pytest
import torch

from iclr24.rlcf.data import DIGIT_NAMES
from iclr24.rlcf.data import class_prompts
from iclr24.rlcf.data import load_image_folder
from iclr24.rlcf.model import tokenize
from iclr24.rlcf.retrieval import RetrievalTTA
from iclr24.rlcf.retrieval import recall_at_k
from iclr24.rlcf.reward import CLIPReward
from iclr24.rlcf.views import CLIP_MEAN
from iclr24.rlcf.views import CLIP_STD
from iclr24.rlcf.views import clip_views
from iclr24.rlcf.views import digit_views


def test_digit_views_keep_the_original_first():
    img = torch.rand(1, 8, 8)
    v = digit_views(img, 64, generator=torch.Generator().manual_seed(0))
    assert v.shape == (64, 1, 8, 8) and torch.equal(v[0], img)
    assert not torch.allclose(v[1], img)
    assert digit_views(img, 1).shape == (1, 1, 8, 8)


def test_clip_views_shapes_and_normalisation():
    img = torch.rand(3, 40, 30)
    g = torch.Generator().manual_seed(0)
    v = clip_views(img, 5, resolution=16, augmix=True, generator=g)
    assert v.shape == (5, 3, 16, 16)
    raw = clip_views(img, 5, resolution=16, normalize=False, generator=torch.Generator().manual_seed(0))
    assert raw.min() >= 0 and raw.max() <= 1
    norm = (raw - torch.tensor(CLIP_MEAN)[:, None, None]) / torch.tensor(CLIP_STD)[:, None, None]
    again = clip_views(img, 5, resolution=16, generator=torch.Generator().manual_seed(0))
    assert torch.allclose(norm, again, atol=1e-6)  # seeded: the same views
    with pytest.raises(ValueError, match="channel"):
        clip_views(torch.rand(1, 8, 8), 4)
    with pytest.raises(ValueError, match="image tensor"):
        clip_views(torch.rand(8, 8), 4)


def test_image_folder_loader(tmp_path):
    from PIL import Image

    for c in ("golden_retriever", "tabby"):
        (tmp_path / c).mkdir()
        Image.new("RGB", (20, 10), (200, 10, 10)).save(tmp_path / c / "a.png")
    x, y, names = load_image_folder(tmp_path, size=16)
    assert x.shape == (2, 3, 16, 16) and y.tolist() == [0, 1] and names == ["golden_retriever", "tabby"]
    assert class_prompts(names) == ["a photo of a golden retriever.", "a photo of a tabby."]
    (tmp_path / "tabby" / "b.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="cannot read image"):
        load_image_folder(tmp_path, size=16)
    with pytest.raises(FileNotFoundError):
        load_image_folder(tmp_path / "missing")


def test_recall_at_k_closed_form():
    s = torch.tensor([[0.9, 0.1, 0.5], [0.2, 0.3, 0.1]])
    r = recall_at_k(s, [{2}, {1}], ks=(1, 2))
    assert r == {"R@1": 50.0, "R@2": 100.0}


@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_retrieval_tta_resets_and_changes_scores(toy_pair, direction):
    policy, reward_model = toy_pair
    caps = tokenize(class_prompts(DIGIT_NAMES, "a photo of the digit {}."), 16)
    imgs = torch.rand(10, 1, 8, 8)
    rt = RetrievalTTA(policy, CLIPReward(reward_model), direction=direction, steps=2, lr=1e-2, sample_k=4)
    rt.set_gallery(caps if direction == "i2t" else imgs)
    before = [p.detach().clone() for p in rt.params]
    q = imgs[:1] if direction == "i2t" else caps[:1]
    with torch.no_grad():
        s0 = rt._scores(q)[0]
    s = rt.query(q)
    assert s.shape == (10,) and not torch.allclose(s, s0)
    assert all(torch.equal(a, b) for a, b in zip(before, rt.params))
    with pytest.raises(ValueError, match="exceeds the gallery"):
        RetrievalTTA(policy, CLIPReward(reward_model), direction=direction, sample_k=20).set_gallery(
            caps if direction == "i2t" else imgs
        )
