import pickle
import struct

import numpy as np
import pytest
import torch

from iclr24.opposing_signals.data import TOP_LEFT_PATCH
from iclr24.opposing_signals.data import cifar10_subset
from iclr24.opposing_signals.data import make_opposing_digits


def test_planting():
    d = make_opposing_digits(alpha=10.0)
    clean = make_opposing_digits(alpha=0.0)
    assert d.x_train.shape == (1200, 64) and d.x_test.shape == (597, 64)
    assert len(d.group_a) == 60 and len(d.group_b) == 30
    assert (d.y_train[d.group_a] == 0).all() and (d.y_train[d.group_b] == 1).all()
    assert d.base_rate == pytest.approx(90 / 1200)
    diff = d.x_train - clean.x_train
    planted = d.planted
    assert torch.equal(diff[~planted], torch.zeros_like(diff[~planted]))
    patch = list(TOP_LEFT_PATCH)
    assert torch.allclose(diff[planted][:, patch], torch.full((90, 9), 10.0))
    other = [i for i in range(64) if i not in patch]
    assert torch.equal(diff[planted][:, other], torch.zeros(90, 55))
    assert float(clean.x_train.max()) <= 1.0
    torch.testing.assert_close(d.x_test, clean.x_test)


def test_bad_input():
    with pytest.raises(ValueError, match="alpha must be"):
        make_opposing_digits(alpha=float("nan"))
    with pytest.raises(ValueError, match="two different digits"):
        make_opposing_digits(class_a=3, class_b=3)
    with pytest.raises(ValueError, match="n for class 0"):
        make_opposing_digits(n_a=10_000)
    with pytest.raises(ValueError, match="pixel indices"):
        make_opposing_digits(patch=[64])
    with pytest.raises(ValueError, match="n_train"):
        make_opposing_digits(n_train=5)


def _py2_str(b: bytes) -> bytes:
    # a Python 2 ``str``: SHORT_BINSTRING, or BINSTRING when longer than 255 bytes
    return (b"U" + bytes([len(b)]) + b) if len(b) < 256 else (b"T" + struct.pack("<i", len(b)) + b)


def _py2_int(v: int) -> bytes:
    if 0 <= v < 256:
        return b"K" + bytes([v])
    if 0 <= v < 65536:
        return b"M" + struct.pack("<H", v)
    return b"J" + struct.pack("<i", v)


def _py2_cifar_batch(data: np.ndarray, labels, batch_label: str, filenames) -> bytes:
    """The bytes Python 2's cPickle (protocol 2) writes for a CIFAR-10 batch dict, as in cifar-10-python.tar.gz:
    str keys as Python 2 strings, ``data`` a numpy 1 ``_reconstruct`` of a uint8 (N, 3072) array."""
    n, d = data.shape
    arr = (
        b"cnumpy.core.multiarray\n_reconstruct\ncnumpy\nndarray\n"
        + _py2_int(0)
        + b"\x85"
        + _py2_str(b"b")
        + b"\x87R("
        + _py2_int(1)
        + _py2_int(n)
        + _py2_int(d)
        + b"\x86cnumpy\ndtype\n"
        + _py2_str(b"u1")
        + _py2_int(0)
        + _py2_int(1)
        + b"\x87R("
        + _py2_int(3)
        + _py2_str(b"|")
        + b"NNN"
        + _py2_int(-1)
        + _py2_int(-1)
        + _py2_int(0)
        + b"tb\x89"
        + _py2_str(np.ascontiguousarray(data, dtype=np.uint8).tobytes())
        + b"tb"
    )
    labs = b"](" + b"".join(_py2_int(int(v)) for v in labels) + b"e"
    names = b"](" + b"".join(_py2_str(f.encode()) for f in filenames) + b"e"
    return (
        b"\x80\x02}("
        + _py2_str(b"data")
        + arr
        + _py2_str(b"labels")
        + labs
        + _py2_str(b"batch_label")
        + _py2_str(batch_label.encode())
        + _py2_str(b"filenames")
        + names
        + b"u."
    )


def test_cifar10_subset_reads_the_python_release_layout(tmp_path):
    # cifar-10-python.tar.gz unpacks to cifar-10-batches-py/ with five training batches, a test batch,
    # batches.meta and readme.html; each batch is a Python 2 pickle of a dict with str keys
    rng = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    names = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]
    per = 3
    data = rng.integers(0, 256, (len(names) * per, 3072), dtype=np.uint8)
    labels = rng.integers(0, 10, len(names) * per)
    for b, name in enumerate(names):
        sl = slice(b * per, (b + 1) * per)
        raw = _py2_cifar_batch(data[sl], labels[sl], f"batch {b}", [f"img_{b}_{i}.png" for i in range(per)])
        (folder / name).write_bytes(raw)
    (folder / "readme.html").write_text("<html></html>")
    (folder / "batches.meta").write_bytes(b"\x80\x02}(U\x0bnum_vis\x00\x00\x00M\x00\x0cu.")
    # the Python 2 pickle is what it claims: plain pickle with latin-1 reads back the same array
    first = pickle.loads((folder / "data_batch_1").read_bytes(), encoding="latin1")
    assert np.array_equal(first["data"], data[:per]) and first["labels"] == labels[:per].tolist()

    n_train = 5 * per
    for path in (folder, tmp_path):  # the batches folder itself, or the folder the archive was unpacked into
        x, y = cifar10_subset(path, n=n_train, seed=0)
        assert x.shape == (n_train, 3, 32, 32) and x.dtype == torch.float32 and y.dtype == torch.int64
        # all training images, in file order; channel c, row h, column w is byte c * 1024 + h * 32 + w
        want = torch.from_numpy(data[:n_train].reshape(n_train, 3, 32, 32).astype(np.float32) / 255.0)
        torch.testing.assert_close(x, want)
        assert y.tolist() == labels[:n_train].tolist()
    xt, yt = cifar10_subset(folder, n=per, split="test")
    assert float(xt[1, 2, 5, 7]) == pytest.approx(data[n_train + 1, 2 * 1024 + 5 * 32 + 7] / 255.0)
    assert yt.tolist() == labels[n_train:].tolist()
    x4, _ = cifar10_subset(folder, n=4, seed=1)
    assert x4.shape == (4, 3, 32, 32)

    with pytest.raises(ValueError, match="split must be one of"):
        cifar10_subset(folder, n=2, split="val")
    # a pickle that would run a shell command when loaded
    (folder / "data_batch_3").write_bytes(b"\x80\x02cos\nsystem\n(U\x04trueR.")
    with pytest.raises(ValueError, match="refusing to unpickle os.system"):
        cifar10_subset(folder, n=2)
    (folder / "data_batch_3").write_bytes(_py2_cifar_batch(data[:2], [0, 1], "b", ["a", "b"])[:100])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        cifar10_subset(folder, n=2)
    (folder / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        cifar10_subset(folder, n=2)


def test_digits_arrays_are_sklearns_load_digits():
    # read from scikit-learn's bundled file without importing scikit-learn: the same values
    from sklearn.datasets import load_digits

    from iclr24.opposing_signals.data import digits_arrays

    x, y = digits_arrays()
    ref = load_digits()
    assert x.dtype == np.float32 and y.dtype == np.int64 and x.shape == (1797, 64)
    np.testing.assert_array_equal(x, ref.data.astype(np.float32) / 16.0)
    np.testing.assert_array_equal(y, ref.target)
    assert not x.flags.writeable and not y.flags.writeable
