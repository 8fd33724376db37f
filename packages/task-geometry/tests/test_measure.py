import numpy as np
import pytest
import torch

from iclr24.task_geometry.cnn import SmallCNN
from iclr24.task_geometry.cnn import digit_dichotomies
from iclr24.task_geometry.cnn import measure_cnn
from iclr24.task_geometry.cnn import train_cnn
from iclr24.task_geometry.measure import activations
from iclr24.task_geometry.measure import measure
from iclr24.task_geometry.metrics import kernel_alignment
from iclr24.task_geometry.students import MLP
from iclr24.task_geometry.tasks import cube_bits
from iclr24.task_geometry.tasks import walsh_cube


def test_measure_factorised_cube_geometry():
    # hidden means = the +-1 cube itself: faces are perfectly parallel and aligned to their own kernel
    cube = cube_bits(3) * 2.0 - 1.0
    cond = np.repeat(np.arange(8), 30)
    Z = cube[cond] + 0.1 * np.random.default_rng(0).standard_normal((cond.size, 3))
    targets = (cube_bits(3)[:, :1]).astype(float)
    g = measure(Z, cond, targets=targets, means=cube, input_kernel=cube @ cube.T, classifier="ridge")
    assert g.ps == pytest.approx(1.0) and g.cka_input == pytest.approx(1.0)
    assert g.cka_target == pytest.approx(kernel_alignment(cube, cube[:, :1]))
    assert g.ccgp >= 0.9 and g.participation_ratio == pytest.approx(3.0)
    assert g.sd_untrained < g.sd <= 1.0


def test_measure_a_torch_layer_equals_measuring_its_activations():
    t = walsh_cube(3, k=1, a=1.0, n_samples=64)
    torch.manual_seed(0)
    model = MLP(100, 1, width=16)
    X, cond = t.trials(6, seed=1)
    Z = activations(model, X, "hidden.1")
    np.testing.assert_allclose(Z, model.representation(X), atol=1e-6)
    a = measure(model, cond, targets=t.targets, inputs=X, layer="hidden.1", classifier="ridge")
    b = measure(Z, cond, targets=t.targets, inputs=X, classifier="ridge")
    da, db = a.as_dict(), b.as_dict()
    assert da.keys() == db.keys()
    for key in da:
        assert np.asarray(da[key]) == pytest.approx(np.asarray(db[key]), abs=1e-9), key
    with pytest.raises(ValueError, match="unknown layer 'nope'"):
        activations(model, X, "nope")
    with pytest.raises(ValueError, match="needs inputs= and layer="):
        measure(model, cond, targets=t.targets)
    with pytest.raises(ValueError, match=r"targets must be \(P, k\)"):
        measure(Z, cond, targets=np.zeros((5, 1)))


def test_small_cnn_pipeline_on_tiny_images():
    g = np.random.default_rng(0)
    labels = np.repeat(np.arange(10), 4)
    protos = g.random((10, 784)).astype(np.float32)
    x = np.clip(protos[labels] + 0.05 * g.standard_normal((40, 784)), 0, 1).astype(np.float32)
    T = digit_dichotomies()
    assert T.sum(0).tolist() == [5, 5]
    model = train_cnn(x, labels, T, act="relu", epochs=1, seed=0)
    assert isinstance(model, SmallCNN)
    geo, acc = measure_cnn(model, x, labels, T)
    assert 0 <= acc <= 1 and np.isfinite(list(geo.as_dict()["ps_per_target"])).all()
    assert geo.n_conditions == 10 and geo.cka_input is not None
    with pytest.raises(ValueError, match="1x28x28 values"):
        train_cnn(x[:, :100], labels, T)
    with torch.no_grad():
        assert model(torch.as_tensor(x[:2])).shape == (2, 2)


def _write_cifar_batch(path, images, labels):
    """One batch file in the official CIFAR-10 python format: a pickled dict, ``data`` uint8 (N, 3072) = the
    red, green, then blue planes of each image, ``labels`` a list of ints."""
    import pickle

    data = images.transpose(0, 3, 1, 2).reshape(len(images), -1)  # HWC -> planes R, G, B
    with open(path, "wb") as fh:
        pickle.dump({"batch_label": "tiny", "labels": [int(v) for v in labels], "data": data}, fh, protocol=2)


def test_cifar10_from_a_user_path_trains_the_cnn(tmp_path):
    """The README's CIFAR-10 route: load_cifar10 on a tiny folder in the real format, then train_cnn/measure_cnn
    with in_channels=3, side=32; channels-last uint8 input is the same as CHW floats in [0, 1]."""
    from iclr24.paperkit.data import load_cifar10
    from iclr24.task_geometry.cnn import _images

    g = np.random.default_rng(0)
    folder = tmp_path / "cifar-10-batches-py"
    folder.mkdir()
    labels = np.tile(np.arange(10), 2)
    for name in [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]:
        _write_cifar_batch(folder / name, g.integers(0, 256, (20, 32, 32, 3), dtype=np.uint8), labels)
    data = load_cifar10(tmp_path)
    (x, y), (xte, yte) = data["train"], data["test"]
    assert x.shape == (100, 32, 32, 3) and x.dtype == np.uint8
    chw = x.transpose(0, 3, 1, 2).astype(np.float32) / 255.0
    assert torch.equal(_images(x, 3, 32), torch.as_tensor(chw))
    assert torch.equal(_images(chw.reshape(100, -1), 3, 32), torch.as_tensor(chw))
    T = (np.arange(10)[:, None] >= 5).astype(np.float64)  # a balanced dichotomy of the 10 classes
    model = train_cnn(x, y, T, in_channels=3, side=32, epochs=1, seed=0)
    geo, acc = measure_cnn(model, xte, yte, T)
    assert geo.n_conditions == 10 and 0 <= acc <= 1 and np.isfinite(geo.cka_target)
    with pytest.raises(ValueError, match="3x32x32 values"):
        train_cnn(x[:, :16], y, T, in_channels=3, side=32)
