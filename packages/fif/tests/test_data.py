"""Toy manifolds and loaders from a user path (tiny files written here in the real formats)."""

import math

import numpy as np
import pytest
import torch

from iclr24.fif.data import check_data
from iclr24.fif.data import load_array
from iclr24.fif.data import load_tabular
from iclr24.fif.data import toy_dataset
from iclr24.fif.data import toy_splits


def test_sine_lies_on_its_manifold():
    x = toy_dataset("sine", 500, seed=0)
    assert x.shape == (500, 2)
    assert torch.allclose(x[:, 1], torch.sin(math.pi * x[:, 0] / 2), atol=1e-6)
    tr, te, d = toy_splits("s_curve", 300, 100, seed=1)
    assert tr.shape == (300, 3) and te.shape == (100, 3) and d == 2
    assert torch.allclose(tr.mean(0), torch.zeros(3), atol=1e-5)
    assert torch.equal(
        toy_dataset("scurve", 20, seed=2), toy_dataset("s_curve", 20, seed=2)
    )  # the name
    with pytest.raises(ValueError, match="unknown toy dataset"):
        toy_dataset("moons", 10)
    with pytest.raises(ValueError, match="int >= 1"):
        toy_dataset("sine", 0)


def test_s_curve_draws_the_same_points_as_sklearn():
    """The in-package S-curve is sklearn's ``make_s_curve`` (noise 0) point for point, from the same stream."""
    datasets = pytest.importorskip("sklearn.datasets")
    from iclr24.fif.data import _s_curve

    for n, state in ((1, 0), (257, 12345), (5000, 2**31 - 1)):
        want, _ = datasets.make_s_curve(n, random_state=state)
        np.testing.assert_array_equal(_s_curve(n, state), want)
    # and the generated toy set is that stream: the state is drawn from the dataset seed as before
    rng = np.random.default_rng(3)
    want, _ = datasets.make_s_curve(40, random_state=int(rng.integers(2**31)))
    assert torch.equal(toy_dataset("s_curve", 40, seed=3), torch.as_tensor(want, dtype=torch.float32))


def test_load_array_formats(tmp_path):
    a = np.arange(12, dtype=np.float32).reshape(4, 3)
    np.save(tmp_path / "a.npy", a)
    np.savez(tmp_path / "a.npz", x=a)
    (tmp_path / "a.csv").write_text("c1,c2,c3\n" + "\n".join(",".join(str(v) for v in r) for r in a) + "\n")
    for name in ("a.npy", "a.npz", "a.csv"):
        assert torch.equal(load_array(tmp_path / name), torch.as_tensor(a))


def test_load_array_bad_inputs(tmp_path):
    with pytest.raises(FileNotFoundError, match="not found"):
        load_array(tmp_path / "missing.npy")
    (tmp_path / "bad.npy").write_bytes(b"not an array")
    with pytest.raises(ValueError, match="not a readable"):
        load_array(tmp_path / "bad.npy")
    (tmp_path / "x.pkl").write_bytes(b"\x80\x04N.")
    with pytest.raises(ValueError, match="pickle"):
        load_array(tmp_path / "x.pkl")
    np.save(tmp_path / "nan.npy", np.array([[1.0, np.nan]]))
    with pytest.raises(ValueError, match="NaN or inf"):
        load_array(tmp_path / "nan.npy")
    np.save(tmp_path / "empty.npy", np.zeros((0, 3)))
    with pytest.raises(ValueError, match="empty"):
        load_array(tmp_path / "empty.npy")
    with pytest.raises(ValueError, match="directory"):
        load_array(tmp_path)
    with pytest.raises(ValueError, match="shape"):
        check_data(torch.zeros(3))


def test_load_tabular(tmp_path):
    (tmp_path / "power").mkdir()
    np.save(tmp_path / "power" / "data.npy", np.random.default_rng(0).standard_normal((10, 6)))
    assert load_tabular("POWER", tmp_path).shape == (10, 6)
    with pytest.raises(FileNotFoundError, match="gas/data.npy"):
        load_tabular("gas", tmp_path)
    (tmp_path / "miniboone").mkdir()
    np.save(tmp_path / "miniboone" / "data.npy", np.zeros((5, 7)))
    with pytest.raises(ValueError, match="D=43"):
        load_tabular("miniboone", tmp_path)
    with pytest.raises(ValueError, match="unknown tabular"):
        load_tabular("cifar", tmp_path)


def _write_images(folder, n, size, mode="L", seed=0):
    from PIL import Image

    rng = np.random.default_rng(seed)
    folder.mkdir(parents=True, exist_ok=True)
    arrays = []
    for i in range(n):
        shape = (size, size) if mode == "L" else (size, size, 3)
        a = rng.integers(0, 256, shape, dtype=np.uint8)
        Image.fromarray(a, mode=mode).save(folder / f"img{i:02d}.png")
        arrays.append(a)
    return arrays


def test_load_image_folder(tmp_path):
    from iclr24.fif.data import load_image_folder

    arrays = _write_images(tmp_path / "digits" / "class0", 3, 8)
    x, shape = load_image_folder(tmp_path / "digits", grayscale=True)
    assert shape == (1, 8, 8) and x.shape == (3, 64) and x.dtype == torch.float32
    assert torch.allclose(x[0], torch.as_tensor(arrays[0].reshape(-1) / 255.0, dtype=torch.float32))
    rgb = _write_images(tmp_path / "rgb", 2, 6, mode="RGB")
    x, shape = load_image_folder(tmp_path / "rgb")
    assert shape == (3, 6, 6)
    assert torch.allclose(
        x[1].reshape(3, 6, 6)[2], torch.as_tensor(rgb[1][..., 2] / 255.0, dtype=torch.float32)
    )
    x, shape = load_image_folder(tmp_path / "rgb", size=4, max_images=1)
    assert shape == (3, 4, 4) and x.shape == (1, 48)


def test_load_image_folder_bad_inputs(tmp_path):
    from iclr24.fif.data import load_image_folder

    with pytest.raises(FileNotFoundError, match="image folder not found"):
        load_image_folder(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "notes.txt").write_text("no images here")
    with pytest.raises(ValueError, match="holds no images"):
        load_image_folder(tmp_path / "empty")
    _write_images(tmp_path / "mixed", 1, 8)
    _write_images(tmp_path / "mixed" / "sub", 1, 12)
    with pytest.raises(ValueError, match="pass size="):
        load_image_folder(tmp_path / "mixed", grayscale=True)
    assert load_image_folder(tmp_path / "mixed", size=8, grayscale=True)[0].shape == (2, 64)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "a.png").write_bytes(b"not a png")
    with pytest.raises(ValueError, match="not a readable image"):
        load_image_folder(tmp_path / "broken")
    with pytest.raises(ValueError, match="got a file"):
        load_image_folder(tmp_path / "broken" / "a.png")


def test_load_tabular_from_the_maf_archive_files(tmp_path):
    """Tiny files in the layout of the MAF data archive, preprocessed to the paper's D."""
    rng = np.random.default_rng(0)
    (tmp_path / "power").mkdir()
    raw = rng.standard_normal((50, 8))
    np.save(tmp_path / "power" / "data.npy", raw)
    x = load_tabular("power", tmp_path)
    assert x.shape == (50, 6)
    kept = np.delete(raw, [1, 3], axis=1)
    diff = x.double().numpy() - kept  # dequantisation noise: in [0, 0.001), [0, 0.01), [0, 1)^3, none on time
    assert (diff >= -1e-6).all() and (diff[:, 0] < 1e-3 + 1e-6).all() and (diff[:, 1] < 1e-2 + 1e-6).all()
    assert np.allclose(diff[:, 5], 0, atol=1e-5)
    # GAS: the UCI text file; 8 independent sensors plus 8 near-copies of them -> the 8 are kept
    (tmp_path / "gas").mkdir()
    base = rng.standard_normal((200, 8))
    sensors = np.hstack([base, base + 1e-3 * rng.standard_normal((200, 8))])
    table = np.hstack([np.arange(200)[:, None], rng.random((200, 2)), sensors])
    lines = ["Time (seconds), CO conc (ppm), Ethylene conc (ppm), sensor readings (16 channels)"]
    lines += [" ".join(f"{v:.6f}" for v in row) for row in table]
    (tmp_path / "gas" / "ethylene_CO.txt").write_text("\n".join(lines) + "\n")
    g = load_tabular("gas", tmp_path)
    assert g.shape == (200, 8)
    # HEPMASS: label, 27 features, mass; 6 features with a repeated minimum (and mass) are dropped
    (tmp_path / "hepmass").mkdir()
    feats = rng.standard_normal((30, 27))
    feats[:12, :6] = -5.0  # 8 signal rows share the minimum of these 6 features
    mass = np.full((30, 1), 1000.0)
    label = (np.arange(30) % 3 != 0).astype(float)[:, None]
    header = "# label, " + ", ".join(f"f{i}" for i in range(27)) + ", mass"
    body = "\n".join(",".join(f"{v:.6f}" for v in r) for r in np.hstack([label, feats, mass]))
    (tmp_path / "hepmass" / "1000_train.csv").write_text(header + "\n" + body + "\n")
    h = load_tabular("hepmass", tmp_path)
    assert h.shape == (20, 21)
    assert torch.allclose(h[0].double(), torch.as_tensor(feats[1, 6:]), atol=1e-5)
    # BSDS300: 8x8 patches, the last pixel dropped; the HDF5 original is refused with what to do
    (tmp_path / "BSDS300").mkdir()
    (tmp_path / "BSDS300" / "BSDS300.hdf5").write_bytes(b"\x89HDF\r\n\x1a\n")
    with pytest.raises(ValueError, match="numpy.save"):
        load_tabular("bsds300", tmp_path)
    np.save(tmp_path / "BSDS300" / "data.npy", rng.random((7, 64)))
    assert load_tabular("bsds300", tmp_path).shape == (7, 63)
