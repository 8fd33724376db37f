import pytest
import torch
from PIL import Image

from iclr24.fastervit.data import digits_dataset
from iclr24.fastervit.data import image_folder_datasets
from iclr24.fastervit.data import quadrant_copy_batch


def test_quadrant_copy_task_layout():
    x, y = quadrant_copy_batch(64, torch.Generator().manual_seed(0), size=32, square=4)
    assert x.shape == (64, 3, 32, 32) and set(y.tolist()) <= {0, 1}
    for i in range(64):
        tl = x[i, :, :16, :16]
        # the label colour sits in the top-left quadrant: a full-intensity pixel in channel y (red=0, green=1)
        assert (tl[y[i]] == 1.0).sum() == 16
    with pytest.raises(ValueError):
        quadrant_copy_batch(4, torch.Generator(), size=30)


@pytest.mark.parametrize("square", [4, 8])
def test_quadrant_copy_batch_paints_the_same_images_as_sample_by_sample(square):
    """The vectorised painting gives the images of the original per-sample loop, bit for bit (same RNG draws)."""
    from iclr24.fastervit.data import _COLOURS

    x, y = quadrant_copy_batch(50, torch.Generator().manual_seed(3), size=32, square=square)
    g = torch.Generator().manual_seed(3)  # replay the draws in the same order
    ref = 0.1 * torch.randn(50, 3, 32, 32, generator=g)
    yr = torch.randint(0, 2, (50,), generator=g)
    pos = torch.randint(0, 16 // square, (50, 4), generator=g) * square
    distract = torch.randint(0, 4, (50,), generator=g)
    for i in range(50):
        r, c = int(pos[i, 0]), int(pos[i, 1])
        ref[i, :, r : r + square, c : c + square] = _COLOURS[yr[i]].view(3, 1, 1)
        r, c = 16 + int(pos[i, 2]), 16 + int(pos[i, 3])
        ref[i, :, r : r + square, c : c + square] = _COLOURS[distract[i]].view(3, 1, 1)
    assert torch.equal(y, yr) and torch.equal(x, ref)


def test_digits_dataset_shapes():
    tr, te, classes = digits_dataset(size=32)
    assert len(tr) + len(te) == 1797 and classes == [str(i) for i in range(10)]
    assert tr[0][0].shape == (3, 32, 32)
    with pytest.raises(ValueError, match="multiple of 32"):
        digits_dataset(size=40)


def test_image_folder_loading_and_errors(tmp_path):
    for split in ("train", "val"):
        for cls in ("cat", "dog"):
            d = tmp_path / split / cls
            d.mkdir(parents=True)
            for i in range(2):
                Image.new("RGB", (40, 50), (i * 100, 20, 30)).save(d / f"{i}.png")
    tr, va, classes = image_folder_datasets(tmp_path, img_size=32)
    assert classes == ["cat", "dog"] and len(tr) == 4 and va[0][0].shape == (3, 32, 32)
    with pytest.raises(FileNotFoundError, match="does not exist"):
        image_folder_datasets(tmp_path / "nope")
    (tmp_path / "val").rename(tmp_path / "other")
    with pytest.raises(FileNotFoundError, match="val"):
        image_folder_datasets(tmp_path, img_size=32)
