"""The lazy real-image path: the synthetic VisDA-format folder, the official views, streaming adaptation."""

import copy

import numpy as np
import pytest
import torch

from iclr24.sfda2 import SFDA2Config
from iclr24.sfda2 import adapt
from iclr24.sfda2 import digits_model
from iclr24.sfda2.images import IMAGENET_MEAN
from iclr24.sfda2.images import IMAGENET_STD
from iclr24.sfda2.images import VISDA_CLASSES
from iclr24.sfda2.images import ImageFolderDataset
from iclr24.sfda2.images import eval_transform
from iclr24.sfda2.images import synthetic_visda_folder
from iclr24.sfda2.images import train_transform


@pytest.fixture(scope="module")
def visda(tmp_path_factory):
    return synthetic_visda_folder(tmp_path_factory.mktemp("visda"), 36, side=(20, 48), seed=0)


def test_synthetic_folder_has_the_visda_layout(visda):
    assert sorted(p.name for p in visda.iterdir()) == list(VISDA_CLASSES)
    for c in VISDA_CLASSES:
        files = sorted((visda / c).iterdir())
        assert len(files) == 3 and all(f.suffix == ".jpg" for f in files)
        assert files[0].read_bytes()[:3] == b"\xff\xd8\xff"  # JPEG magic
    from PIL import Image

    sizes = {Image.open(f).size for c in VISDA_CLASSES for f in (visda / c).iterdir()}
    assert len(sizes) > 10 and all(20 <= w <= 48 and 20 <= h <= 48 for w, h in sizes)  # varied, as VisDA's


def test_dataset_is_lazy_and_reads_each_file_when_asked(visda, tmp_path):
    import shutil

    root = shutil.copytree(visda, tmp_path / "copy")
    ds = ImageFolderDataset(root)
    assert len(ds) == 36 and ds.classes == list(VISDA_CLASSES)
    assert ds.labels.tolist() == sorted(ds.labels.tolist()) and torch.bincount(ds.labels).tolist() == [3] * 12
    assert not any(isinstance(v, torch.Tensor) and v.ndim > 1 for v in vars(ds).values())  # no image tensors
    x, y = ds[0]
    assert x.shape[0] == 3 and float(x.min()) >= 0 and float(x.max()) <= 1 and y == 0
    first = ds.samples[0][0]
    with open(first, "wb") as fh:  # changed on disk after the listing: read at access time, not before
        fh.write(b"not an image")
    with pytest.raises(ValueError, match="cannot read image .*synthetic_000000.jpg"):
        ds[0]


def test_official_views(tmp_path):
    from PIL import Image

    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    arr = np.zeros((30, 50, 3), np.uint8)
    arr[:, :25] = 200  # left half bright: a flip is visible
    Image.fromarray(arr).save(tmp_path / "a" / "x.png")
    Image.fromarray(np.full((10, 10, 3), 128, np.uint8)).save(tmp_path / "b" / "y.png")
    ev = ImageFolderDataset(tmp_path, eval_transform(36, 32))
    tr = ev.with_transform(train_transform(36, 32))
    x, _ = ev[0]
    assert x.shape == (3, 32, 32)
    # resize to 36 x 36 (aspect not kept), centre 32 crop: bright left columns, dark right ones, normalised
    bright = (200 / 255 - IMAGENET_MEAN[0]) / IMAGENET_STD[0]
    assert float(x[0, 16, 0]) == pytest.approx(bright, abs=1e-5)
    assert float(x[0, 16, -1]) == pytest.approx(-IMAGENET_MEAN[0] / IMAGENET_STD[0], abs=1e-5)
    grey, _ = ev[1]
    want = torch.tensor([(128 / 255 - m) / s for m, s in zip(IMAGENET_MEAN, IMAGENET_STD)])
    assert torch.allclose(grey.mean((1, 2)), want, atol=1e-5)
    torch.manual_seed(0)
    views = torch.stack([tr[0][0] for _ in range(40)])
    assert views.shape == (40, 3, 32, 32)
    flipped = views[:, 0, 16, 0] < views[:, 0, 16, -1]  # dark on the left: the view was flipped
    assert 0 < int(flipped.sum()) < 40  # random horizontal flip
    assert len({tuple(v.flatten()[:200].tolist()) for v in views[~flipped]}) > 1  # random crop positions
    with pytest.raises(ValueError, match="crop"):
        train_transform(32, 36)
    with pytest.raises(ValueError, match="source model has 3"):
        ImageFolderDataset(tmp_path, class_names=["a", "b", "c"])
    (tmp_path / "c").mkdir()
    with pytest.raises(ValueError, match="without images.*c"):
        ImageFolderDataset(tmp_path)
    with pytest.raises(FileNotFoundError, match="not found"):
        ImageFolderDataset(tmp_path / "nope")


@pytest.mark.slow  # importing torchvision takes seconds
def test_views_equal_the_official_torchvision_compositions_draw_for_draw(visda):
    """tar_adaptation.py's image_train / image_test, built from torchvision, against ours on the same seeds."""
    from torchvision import transforms as T

    norm = T.Normalize(IMAGENET_MEAN, IMAGENET_STD)
    official_train = T.Compose(
        [T.Resize((36, 36)), T.RandomCrop(32), T.RandomHorizontalFlip(), T.ToTensor(), norm]
    )
    official_test = T.Compose([T.Resize((36, 36)), T.CenterCrop(32), T.ToTensor(), norm])
    ds = ImageFolderDataset(visda)
    for i in range(0, 36, 5):
        from PIL import Image

        img = Image.open(ds.samples[i][0]).convert("RGB")
        torch.manual_seed(i)
        ours = torch.stack([train_transform(36, 32)(img) for _ in range(4)])
        torch.manual_seed(i)
        theirs = torch.stack([official_train(img) for _ in range(4)])
        assert torch.equal(ours, theirs)
        assert torch.equal(eval_transform(36, 32)(img), official_test(img))


class _Counting(torch.utils.data.Dataset):
    def __init__(self, x):
        self.x, self.reads = x, 0

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        self.reads += 1
        return self.x[i], -1


def test_adapt_streams_a_dataset_through_the_same_loop_as_a_tensor():
    torch.manual_seed(0)
    x = torch.rand(40, 1, 8, 8)
    model = digits_model(num_classes=4, bottleneck_dim=8)
    cfg = SFDA2Config(lr=1e-2, alpha_2=1.0, batch_size=8, max_epoch=2, interval=2)
    labels = torch.arange(40) % 4
    a = adapt(copy.deepcopy(model), x, cfg, labels=labels, seed=3)
    ds = _Counting(x)
    b = adapt(copy.deepcopy(model), ds, cfg, labels=labels, seed=3)
    assert [h["total"] for h in a.history] == pytest.approx([h["total"] for h in b.history], abs=1e-6)
    assert [e["acc"] for e in a.evals] == [e["acc"] for e in b.evals]
    # item by item: adapt's shape check (1), the bank fill and 3 evaluations (4 x (1 shape check + 40)), 2 epochs
    assert ds.reads == 1 + 4 * 41 + 80
    with pytest.raises(ValueError, match="same 40 target samples"):
        adapt(copy.deepcopy(model), ds, cfg, eval_data=x[:10])


def test_adapt_on_an_image_folder_with_the_official_views(visda):
    torch.manual_seed(0)
    model = digits_model(num_classes=12, bottleneck_dim=8, in_channels=3, width=4)
    ds = ImageFolderDataset(visda, train_transform(18, 16))
    ev = ds.with_transform(eval_transform(18, 16))
    res = adapt(
        model,
        ds,
        SFDA2Config(lr=1e-2, batch_size=12, max_epoch=1, interval=1),
        labels=ds.labels,
        eval_data=ev,
    )
    assert len(res.history) == 3 and res.nonfinite == 0 and len(res.evals) == 2
