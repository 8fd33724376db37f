import ast
import gzip
import os
import pickle
from pathlib import Path

import numpy as np
import pytest

from iclr24.paperkit.data import CIFAR10_CLASSES
from iclr24.paperkit.data import digits_shift
from iclr24.paperkit.data import image_folder
from iclr24.paperkit.data import load_cifar10
from iclr24.paperkit.data import load_mnist
from iclr24.paperkit.data._unpickle import UnsafePickle
from iclr24.paperkit.data._unpickle import load_restricted
from iclr24.paperkit.data.cifar import read_cifar_batch
from iclr24.paperkit.data.folder import DataMissing
from iclr24.paperkit.data.folder import is_present
from iclr24.paperkit.data.mnist import read_mnist_pickle

PAPERKIT = Path(__file__).parents[1] / "src" / "iclr24" / "paperkit"


class Evil:
    """Unpickles to a call of os.system; the restricted unpickler must refuse it before any call."""

    def __reduce__(self):
        return (os.system, ("touch SHOULD-NOT-EXIST",))


def _load_bytes(b: bytes):
    import io

    return load_restricted(io.BytesIO(b))


@pytest.mark.parametrize("protocol", [2, 3, 4, 5])
def test_restricted_unpickler_round_trips_arrays(protocol):
    obj = {
        "x": np.arange(12, dtype=np.float32).reshape(3, 4),
        "y": [np.int64(3), np.array([1, 2], dtype=np.int64)],
        "t": (np.zeros(0, dtype=np.uint8), b"raw", "text"),
        "f": np.asfortranarray(np.ones((2, 3))),
    }
    back = _load_bytes(pickle.dumps(obj, protocol=protocol))
    assert back["x"].dtype == np.float32 and np.array_equal(back["x"], obj["x"])
    assert back["y"][0] == 3 and np.array_equal(back["y"][1], [1, 2])
    assert back["t"][1] == b"raw" and back["t"][2] == "text" and np.array_equal(back["f"], obj["f"])


@pytest.mark.parametrize("protocol", [2, 5])
def test_restricted_unpickler_refuses_code(tmp_path, monkeypatch, protocol):
    monkeypatch.chdir(tmp_path)
    evil = pickle.dumps({"data": np.zeros(3), "x": Evil()}, protocol=protocol)
    with pytest.raises(UnsafePickle, match=r"refusing to unpickle (posix|nt|os)\.system"):
        _load_bytes(evil)
    assert not (tmp_path / "SHOULD-NOT-EXIST").exists()
    with pytest.raises(UnsafePickle, match=r"(builtins|__builtin__)\.eval"):
        _load_bytes(pickle.dumps(_Reduce(eval, ("1+1",)), protocol=protocol))
    with pytest.raises(UnsafePickle, match="collections.OrderedDict"):
        from collections import OrderedDict

        _load_bytes(pickle.dumps(OrderedDict(a=1), protocol=protocol))


class _Reduce:
    def __init__(self, fn, args):
        self.fn, self.args = fn, args

    def __reduce__(self):
        return (self.fn, self.args)


# ---- MNIST -------------------------------------------------------------------------------------------------


def write_mnist(path: Path, sizes=(6, 3, 2), payload=None) -> Path:
    rng = np.random.default_rng(0)
    splits = tuple(
        (rng.random((n, 784), dtype=np.float32), rng.integers(0, 10, n).astype(np.int64)) for n in sizes
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wb") as fh:
        pickle.dump(payload if payload is not None else splits, fh, protocol=2)
    return path


def test_load_mnist_from_data_dir(tmp_path):
    write_mnist(tmp_path / "mnist" / "mnist.pkl.gz")
    d = load_mnist(tmp_path)
    assert list(d) == ["train", "val", "test"]
    for (x, y), n in zip(d.values(), (6, 3, 2)):
        assert x.shape == (n, 784) and x.dtype == np.float32 and 0 <= x.min() and x.max() <= 1
        assert y.shape == (n,) and y.dtype == np.int64


def test_load_mnist_missing_names_command(tmp_path):
    with pytest.raises(DataMissing, match="iclr24 data get mnist --data-dir"):
        load_mnist(tmp_path)


def test_mnist_bad_files(tmp_path):
    p = write_mnist(tmp_path / "m.pkl.gz")
    trunc = tmp_path / "trunc.pkl.gz"
    trunc.write_bytes(p.read_bytes()[:-40])
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_mnist_pickle(trunc)
    (tmp_path / "plain.pkl.gz").write_text("not gzip at all")
    with pytest.raises(ValueError, match="truncated or corrupt"):
        read_mnist_pickle(tmp_path / "plain.pkl.gz")
    evil = write_mnist(tmp_path / "evil.pkl.gz", payload=(Evil(), 1, 2))
    with pytest.raises(ValueError, match="refusing to unpickle .*system"):
        read_mnist_pickle(evil)
    wrong = write_mnist(tmp_path / "wrong.pkl.gz", payload=((np.zeros((2, 10)), np.zeros(2)),) * 3)
    with pytest.raises(ValueError, match=r"expected \(N, 784\)"):
        read_mnist_pickle(wrong)
    big = write_mnist(tmp_path / "big.pkl.gz", payload=((np.full((2, 784), 255.0), np.zeros(2, int)),) * 3)
    with pytest.raises(ValueError, match=r"outside \[0, 1\]"):
        read_mnist_pickle(big)
    with pytest.raises(FileNotFoundError):
        read_mnist_pickle(tmp_path / "absent.pkl.gz")


@pytest.mark.slow
@pytest.mark.skipif(not is_present("mnist"), reason="real MNIST not fetched (iclr24 data get mnist)")
def test_real_mnist_shapes():
    d = load_mnist()
    assert [len(d[s][0]) for s in ("train", "val", "test")] == [50000, 10000, 10000]
    assert d["train"][0].dtype == np.float32 and d["test"][1].dtype == np.int64


# ---- CIFAR-10 ----------------------------------------------------------------------------------------------


def write_cifar_batch(path: Path, n: int, seed: int, keys=str) -> np.ndarray:
    rng = np.random.default_rng(seed)
    data = rng.integers(0, 256, (n, 3072), dtype=np.uint8)
    batch = {
        keys("batch_label"): "training batch",
        keys("labels"): [int(v) for v in rng.integers(0, 10, n)],
        keys("data"): data,
        keys("filenames"): [f"img_{i}.png" for i in range(n)],
    }
    with open(path, "wb") as fh:
        pickle.dump(batch, fh, protocol=2)
    return data


def write_cifar(root: Path, n: int = 3) -> Path:
    folder = root / "cifar-10-batches-py"
    folder.mkdir(parents=True)
    for i in range(1, 6):
        write_cifar_batch(folder / f"data_batch_{i}", n, seed=i)
    write_cifar_batch(folder / "test_batch", n + 1, seed=0, keys=str.encode)  # bytes keys are accepted too
    return folder


def test_load_cifar10_layout(tmp_path):
    folder = write_cifar(tmp_path)
    for where in (folder, tmp_path):  # the batches folder or the folder holding it
        d = load_cifar10(where)
        x, y = d["train"]
        assert x.shape == (15, 32, 32, 3) and x.dtype == np.uint8 and y.shape == (15,) and y.dtype == np.int64
        assert d["test"][0].shape == (4, 32, 32, 3)
    data = write_cifar_batch(tmp_path / "one", 2, seed=7)
    x, _ = read_cifar_batch(tmp_path / "one")
    # channel-first rows of 1024 pixels: R, G, B; each row-major 32x32
    assert x[1, 4, 7, 0] == data[1, 4 * 32 + 7] and x[1, 4, 7, 2] == data[1, 2048 + 4 * 32 + 7]
    assert len(CIFAR10_CLASSES) == 10


def test_cifar_bad_input(tmp_path):
    folder = write_cifar(tmp_path)
    (folder / "data_batch_3").unlink()
    with pytest.raises(FileNotFoundError, match="data_batch_3"):
        load_cifar10(folder)
    with pytest.raises(FileNotFoundError, match="not found"):
        load_cifar10(tmp_path / "nowhere")
    with pytest.raises(NotADirectoryError, match="is a file"):
        load_cifar10(folder / "test_batch")
    full = (folder / "data_batch_1").read_bytes()
    (folder / "trunc").write_bytes(full[: len(full) // 2])
    with pytest.raises(ValueError, match="CIFAR-10 batch"):
        read_cifar_batch(folder / "trunc")
    with open(folder / "evil", "wb") as fh:
        pickle.dump({"data": Evil()}, fh, protocol=2)
    with pytest.raises(ValueError, match="refusing to unpickle"):
        read_cifar_batch(folder / "evil")
    with open(folder / "nolabels", "wb") as fh:
        pickle.dump({"data": np.zeros((2, 3072), np.uint8)}, fh, protocol=2)
    with pytest.raises(ValueError, match="no 'labels'"):
        read_cifar_batch(folder / "nolabels")


# ---- ImageFolder -------------------------------------------------------------------------------------------


def write_png(path: Path, size=(6, 4), colour=(255, 0, 0)):
    from PIL import Image

    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", size, colour).save(path)


def test_image_folder(tmp_path):
    write_png(tmp_path / "mug" / "b.png", colour=(0, 255, 0))
    write_png(tmp_path / "mug" / "a.PNG", colour=(255, 255, 255))
    write_png(tmp_path / "bike" / "x.jpg", colour=(0, 0, 255))
    (tmp_path / "bike" / "notes.txt").write_text("ignored")
    (tmp_path / "README").write_text("files at the top are ignored")
    x, y, names = image_folder(tmp_path)
    assert names == ["bike", "mug"] and y.tolist() == [0, 1, 1] and y.dtype == np.int64
    assert x.shape == (3, 4, 6, 3) and x.dtype == np.float32 and x.min() >= 0 and x.max() == 1.0
    assert np.allclose(x[1], 1.0) and np.allclose(x[2], [0, 1, 0])  # a.PNG (white) before b.png (green)
    xs, _, _ = image_folder(tmp_path, size=(5, 7))
    assert xs.shape == (3, 5, 7, 3)
    assert image_folder(tmp_path, size=3)[0].shape == (3, 3, 3, 3)


def test_image_folder_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError):
        image_folder(tmp_path / "nowhere")
    (tmp_path / "file.png").write_bytes(b"x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        image_folder(tmp_path / "file.png")
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(ValueError, match="no class subfolders"):
        image_folder(empty)
    (empty / "cat").mkdir()
    (empty / "cat" / "x.txt").write_text("no image")
    with pytest.raises(ValueError, match="without images.*cat"):
        image_folder(empty)
    mixed = tmp_path / "mixed"
    write_png(mixed / "a" / "1.png", size=(4, 4))
    write_png(mixed / "a" / "2.png", size=(5, 4))
    with pytest.raises(ValueError, match="pass size="):
        image_folder(mixed)
    assert image_folder(mixed, size=4)[0].shape == (2, 4, 4, 3)
    (mixed / "a" / "3.png").write_bytes(b"\x89PNG\r\n\x1a\n broken")
    with pytest.raises(ValueError, match="cannot read image .*3.png"):
        image_folder(mixed, size=4)
    for bad in (0, (4,), (4, -1), 2.5, True):
        with pytest.raises(ValueError, match="size must be"):
            image_folder(mixed, size=bad)


# ---- digits shift ------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def shift():
    return digits_shift(angle=(15, 45), noise_std=0.1, test_fraction=0.3, seed=0)


def test_digits_shift_shapes_and_split(shift):
    s = shift
    n_src, n_tgt, n_test = len(s.source_y), len(s.target_y), len(s.target_test_y)
    assert n_src + n_tgt + n_test == 1797 and abs(n_src - (n_tgt + n_test)) <= 10
    assert abs(n_test / (n_tgt + n_test) - 0.3) < 0.02
    for x, y in ((s.source_x, s.source_y), (s.target_x, s.target_y), (s.target_test_x, s.target_test_y)):
        assert x.dtype == np.float32 and x.shape == (len(y), 1, 8, 8) and 0 <= x.min() and x.max() <= 1
        assert y.dtype == np.int64 and set(np.unique(y)) == set(range(10))  # every class in every part
    a = np.abs(s.target_angles)
    assert len(a) == n_tgt + n_test and a.min() >= 15 and a.max() <= 45
    assert (s.target_angles < 0).any() and (s.target_angles > 0).any()


def test_digits_shift_is_a_shift_and_deterministic(shift):
    clean = digits_shift(angle=0.0, noise_std=0.0, seed=0)
    assert np.array_equal(clean.target_y, shift.target_y)  # same split for the same seed
    assert np.abs(clean.target_x - shift.target_x).mean() > 0.05  # rotation + noise changed the target
    assert np.allclose(clean.target_x.mean(), clean.source_x.mean(), atol=0.02)  # no shift: same statistics
    # source, target and target_test partition the 1797 digits: each image in exactly one part
    from iclr24.paperkit.data.digits_shift import _digits

    parts = np.concatenate([clean.source_x, clean.target_x, clean.target_test_x])[:, 0]
    assert sorted(b.tobytes() for b in parts) == sorted(b.tobytes() for b in _digits()[0])
    other = digits_shift(angle=30.0, noise_std=0.0, seed=1)
    assert np.allclose(np.abs(other.target_angles), 30.0)
    assert not np.array_equal(other.source_y, shift.source_y)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"angle": (45, 15)},
        {"angle": (-5, 10)},
        {"angle": 200.0},
        {"angle": "abc"},
        {"angle": (1, 2, 3)},
        {"angle": float("nan")},
        {"noise_std": -0.1},
        {"noise_std": float("inf")},
        {"test_fraction": 0.0},
        {"test_fraction": 1.0},
        {"seed": -1},
        {"seed": 1.5},
    ],
)
def test_digits_shift_validates(kwargs):
    with pytest.raises(ValueError):
        digits_shift(**kwargs)


def test_no_torch_in_data_modules():
    # every module of the data ring but its two tensor helpers (samples: torch datasets, user: DataLoader input)
    files = [PAPERKIT / "metrics.py"]
    files += sorted(p for p in (PAPERKIT / "data").glob("*.py") if p.name not in ("samples.py", "user.py"))
    for f in files:
        for node in ast.walk(ast.parse(f.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            assert not any(n == "torch" or n.startswith("torch.") for n in names), f"{f.name} imports torch"
