"""The networks: shapes, direct encoding, the per-norm wiring, and training end to end on a tiny split."""

from __future__ import annotations

import pytest
import torch

from iclr24.tab_snn.data import seq_digits
from iclr24.tab_snn.model import SpikingMLP
from iclr24.tab_snn.model import SpikingResNet19
from iclr24.tab_snn.model import SpikingVGG9
from iclr24.tab_snn.model import build_model
from iclr24.tab_snn.norms import TAB
from iclr24.tab_snn.norms import TDBN
from iclr24.tab_snn.packed import PackedSpikingMLP
from iclr24.tab_snn.packed import train_packed
from iclr24.tab_snn.train import TrainConfig
from iclr24.tab_snn.train import train_on

torch.set_num_threads(1)


def test_mlp_shapes_and_static_encoding():
    m = SpikingMLP(8, 10, 8, norm="tab")
    assert m(torch.rand(5, 8, 8)).shape == (5, 8, 10)
    s = SpikingMLP(64, 10, 4, norm="bntt")
    assert s(torch.rand(5, 64)).shape == (5, 4, 10)
    assert sum(isinstance(x, TAB) for x in m.modules()) == 2


def test_vgg9_and_resnet19_forward():
    v = SpikingVGG9(10, T=2, width=0.125, norm="tab")
    assert v(torch.rand(2, 3, 32, 32)).shape == (2, 2, 10)
    assert sum(isinstance(x, TAB) for x in v.modules()) == 7  # seven conv layers
    r = SpikingResNet19(100, T=2, width=0.0625, norm="tdbn")
    assert r(torch.rand(2, 3, 32, 32)).shape == (2, 2, 100)
    alphas = sorted({round(x.alpha, 4) for x in r.modules() if isinstance(x, TDBN)})
    assert alphas == [round(2**-0.5, 4), 1.0]  # 1/sqrt(2) before the residual additions
    assert isinstance(build_model("vgg9", T=2, width=0.125), SpikingVGG9)


def test_model_bad_input():
    m = SpikingMLP(8, 10, 8)
    with pytest.raises(ValueError, match="T=8"):
        m(torch.rand(5, 4, 8))
    with pytest.raises(ValueError, match="unknown norm"):
        SpikingMLP(8, 10, 8, norm="layer")
    with pytest.raises(ValueError, match="T"):
        SpikingVGG9(T=0)
    with pytest.raises(ValueError, match="architecture"):
        build_model("vit")


def test_packed_training_equals_separate_runs():
    """Packing (norm, seed) runs side by side changes nothing: same losses and accuracies as train_on."""
    d = seq_digits()
    d.x_train, d.y_train = d.x_train[:192], d.y_train[:192]
    d.x_test, d.y_test = d.x_test[:90], d.y_test[:90]
    cfg = TrainConfig(epochs=2, batch_size=64)
    packed = train_packed(d, ["tab", "tebn"], [3, 4], cfg, hidden=(32, 32), progress=False)
    for (norm, seed), r in packed.items():
        solo = train_on(
            d, norm, TrainConfig(epochs=2, batch_size=64, seed=seed), hidden=(32, 32), progress=False
        )
        assert r.train_loss == pytest.approx(solo.train_loss, abs=1e-4)
        assert r.test_acc == pytest.approx(solo.test_acc, abs=1e-3)
        assert r.firing_rate["lif1"] == pytest.approx(solo.firing_rate["features.2"], abs=1e-3)


def test_training_learns_seq_digits_quickly():
    d = seq_digits()
    r = train_packed(d, ["tab"], [0], TrainConfig(epochs=3), hidden=(64, 64), progress=False)[("tab", 0)]
    assert r.test_acc > 40.0  # chance is 10 %
    assert r.train_loss[-1] < r.train_loss[0]


def test_training_bad_data():
    d = seq_digits()
    d.x_train = d.x_train[:0]
    with pytest.raises(ValueError, match="empty"):
        train_on(d, "tab", TrainConfig(epochs=1), progress=False)
    with pytest.raises(ValueError, match="epochs"):
        TrainConfig(epochs=0)
    with pytest.raises(ValueError, match="norms"):
        PackedSpikingMLP(8, 10, 8, ["tab", "tab"], [0])


def test_crop_flip_keeps_shape_and_content():
    from iclr24.tab_snn.train import crop_flip

    x = torch.arange(2 * 3 * 4 * 4, dtype=torch.float32).reshape(2, 3, 4, 4) + 1
    y = crop_flip(x, torch.Generator().manual_seed(0), pad=1)
    assert y.shape == x.shape
    # every non-zero value of a crop comes from the same image, and a zero-pad crop keeps >= 9 of 16 pixels
    for i in range(2):
        vals = set(y[i][y[i] > 0].tolist())
        assert vals <= set(x[i].flatten().tolist()) and len(vals) >= 9 * 3
    z = crop_flip(x, torch.Generator().manual_seed(0), pad=0)
    assert all(torch.equal(z[i], x[i]) or torch.equal(z[i], x[i].flip(-1)) for i in range(2))


def test_cifar_padding_is_the_official_pad_then_normalise():
    """The official loader pads the raw image with zeros, then normalises; padding normalised inputs with
    pad_fill = -mean / std must give exactly that."""
    from iclr24.tab_snn.data import CIFAR_MEAN
    from iclr24.tab_snn.data import CIFAR_STD
    from iclr24.tab_snn.train import crop_flip

    raw = torch.rand(5, 3, 8, 8)
    mean, std = torch.tensor(CIFAR_MEAN).reshape(3, 1, 1), torch.tensor(CIFAR_STD).reshape(3, 1, 1)
    fill = [-m / s for m, s in zip(CIFAR_MEAN, CIFAR_STD, strict=True)]
    official = (crop_flip(raw, torch.Generator().manual_seed(1), pad=4) - mean) / std
    ours = crop_flip((raw - mean) / std, torch.Generator().manual_seed(1), pad=4, fill=fill)
    assert torch.allclose(official, ours, atol=1e-6)
    # padding normalised inputs with 0 (the old pipeline) is not the same
    zero = crop_flip((raw - mean) / std, torch.Generator().manual_seed(1), pad=4)
    assert not torch.allclose(official, zero, atol=1e-3)
    with pytest.raises(ValueError, match="one value per channel"):
        crop_flip(raw, torch.Generator(), fill=[0.0, 0.0])


def test_star_import_gives_every_public_name():
    from iclr24.paperkit.runner.testing import check_star_import

    check_star_import("iclr24.tab_snn")
