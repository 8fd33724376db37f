import numpy as np
import pytest

from iclr24.cmvae.data import load_multimodal_npz
from iclr24.cmvae.data import load_polymnist
from iclr24.cmvae.data import poly_digits
from iclr24.cmvae.data import poly_mnist


def test_poly_digits_construction():
    d = poly_digits(n_train=200, n_test=50, n_modalities=3, seed=0)
    assert d.input_dims == [64, 64, 64] and d.train_labels.shape == (200,) and d.test_labels.shape == (50,)
    for x in d.train + d.test:
        assert x.dtype == np.float32 and x.min() >= 0 and x.max() <= 1
    # backgrounds differ per modality (fixed textures), the digit class is shared
    assert not np.allclose(d.train[0].mean(0), d.train[1].mean(0), atol=0.01)
    again = poly_digits(n_train=200, n_test=50, n_modalities=3, seed=0)
    assert all(np.array_equal(a, b) for a, b in zip(d.train, again.train, strict=True))
    with pytest.raises(ValueError, match="n_modalities must be >= 2"):
        poly_digits(10, 10, 1)
    with pytest.raises(ValueError, match="n_train"):
        poly_digits(0, 10)


def test_poly_mnist_missing_data_raises_datamissing(tmp_path):
    from iclr24.paperkit.data.folder import DataMissing

    with pytest.raises(DataMissing, match="iclr24 data get mnist"):
        poly_mnist(tmp_path, n_train=10, n_test=10)


def test_load_polymnist_tiny_folder(tmp_path):
    from PIL import Image

    rng = np.random.default_rng(0)
    for split in ("train", "test"):
        for m in range(2):
            (tmp_path / split / f"m{m}").mkdir(parents=True)
            for i, label in enumerate([3, 1, 4]):
                arr = (rng.random((28, 28, 3)) * 255).astype(np.uint8)
                Image.fromarray(arr).save(tmp_path / split / f"m{m}" / f"{i}.{label}.png")
    d = load_polymnist(tmp_path)
    assert d.n_modalities == 2 and d.input_dims == [3 * 28 * 28] * 2 and d.train_labels.tolist() == [3, 1, 4]
    with pytest.raises(FileNotFoundError, match="PolyMNIST folder not found"):
        load_polymnist(tmp_path / "nope")
    (tmp_path / "test" / "m1" / "0.3.png").write_bytes(b"broken")
    with pytest.raises(ValueError, match="0.3.png"):
        load_polymnist(tmp_path)


def test_load_multimodal_npz(tmp_path):
    p = tmp_path / "d.npz"
    np.savez(p, x0=np.random.rand(20, 16), x1=np.random.rand(20, 16), labels=np.arange(20) % 2)
    d = load_multimodal_npz(p)
    assert d.n_modalities == 2 and len(d.train_labels) == 16 and len(d.test_labels) == 4
    np.savez(p, x0=np.random.rand(20, 16))
    with pytest.raises(ValueError, match="x0, x1"):
        load_multimodal_npz(p)
    np.savez(p, x0=np.random.rand(20, 16), x1=np.full((20, 16), np.nan))
    with pytest.raises(ValueError, match="non-finite"):
        load_multimodal_npz(p)
