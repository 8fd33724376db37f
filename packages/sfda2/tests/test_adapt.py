"""The adaptation loop end to end on tiny data (acceptance check 8's shape part), models and bad input."""

import copy
import math

import pytest
import torch
from torch import nn

from iclr24.sfda2 import SFDA2Config
from iclr24.sfda2 import SFDAModel
from iclr24.sfda2 import SourceConfig
from iclr24.sfda2 import adapt
from iclr24.sfda2 import digits_model
from iclr24.sfda2 import split_timm
from iclr24.sfda2 import train_source
from iclr24.sfda2.adapt import accuracy
from iclr24.sfda2.adapt import per_class_accuracy
from iclr24.sfda2.adapt import predict
from iclr24.sfda2.model import Bottleneck
from iclr24.sfda2.model import pointnet_model
from iclr24.sfda2.model import weight_norm_classifier

TINY = SFDA2Config(lr=1e-2, alpha_2=1.0, max_epoch=2, batch_size=16, interval=2)


def _blobs(n=60, C=3, A=5, seed=0, shift=0.0):
    g = torch.Generator().manual_seed(seed)
    centres = 3 * torch.randn(C, A, generator=g)
    y = torch.arange(n) % C
    return centres[y] + torch.randn(n, A, generator=g) + shift, y


def _mlp(C=3, A=5, bottleneck=7):
    return SFDAModel(
        nn.Sequential(nn.Linear(A, 16), nn.ReLU()),
        Bottleneck(16, bottleneck),
        weight_norm_classifier(bottleneck, C),
    )


@pytest.mark.parametrize("method", ["sfda2", "aad", "shot-im"])
def test_loop_runs_with_non_256_bottleneck_and_c_not_12(method):
    torch.manual_seed(0)
    xs, ys = _blobs(C=5)
    model = train_source(_mlp(C=5, bottleneck=11), xs, ys, SourceConfig(lr=1e-2, epochs=3, batch_size=16))
    xt, yt = _blobs(C=5, seed=0, shift=0.5)
    c0 = copy.deepcopy(model.classifier.state_dict())
    res = adapt(model, xt, SFDA2Config(**{**TINY.__dict__, "method": method}), labels=yt)
    iters = 2 * math.ceil(60 / 16)
    assert len(res.history) == iters and res.nonfinite == 0
    assert [e["iter"] for e in res.evals] == [0, 4, 8]
    keys = (
        {"im", "total", "lr"}
        if method == "shot-im"
        else {"pos", "neg", "ifa", "fd", "alpha_t", "lambda_t", "total", "lr"}
    )
    assert set(res.history[0]) == keys
    if method == "sfda2":
        assert all(h["ifa"] > 0 for h in res.history)
        assert res.history[-1]["lambda_t"] == pytest.approx(5.0)
        assert res.history[0]["alpha_t"] == 1.0
    if method == "aad":
        assert all(h["ifa"] == 0 and h["fd"] == 0 for h in res.history)
    frozen = all(torch.equal(c0[k], v) for k, v in model.classifier.state_dict().items())
    assert frozen == (method == "shot-im")  # SHOT freezes the classifier; SF(DA)^2 and AaD train it


def test_adapt_is_deterministic_in_seed():
    xs, ys = _blobs()
    base = train_source(_mlp(), xs, ys, SourceConfig(lr=1e-2, epochs=2, batch_size=16), seed=1)
    xt, _ = _blobs(shift=0.3)
    a = adapt(copy.deepcopy(base), xt, TINY, seed=3)
    b = adapt(copy.deepcopy(base), xt, TINY, seed=3)
    assert [h["total"] for h in a.history] == [h["total"] for h in b.history]


def test_dataset_and_loader_targets_match_tensor():
    xs, ys = _blobs()
    base = train_source(_mlp(), xs, ys, SourceConfig(lr=1e-2, epochs=2, batch_size=16), seed=1)
    xt, yt = _blobs(shift=0.3)
    ds = torch.utils.data.TensorDataset(xt, yt)
    a = adapt(copy.deepcopy(base), xt, TINY, seed=2)
    b = adapt(copy.deepcopy(base), torch.utils.data.DataLoader(ds, batch_size=5), TINY, seed=2)
    for ha, hb in zip(a.history, b.history):
        assert ha["total"] == pytest.approx(hb["total"], rel=1e-5)


def test_source_training_learns():
    xs, ys = _blobs(n=90)
    model = train_source(_mlp(), xs, ys, SourceConfig(lr=5e-2, epochs=10, batch_size=16))
    assert accuracy(predict(model, xs)[1].argmax(1), ys) > 90


def test_per_class_accuracy():
    pc = per_class_accuracy(torch.tensor([0, 0, 1, 2]), torch.tensor([0, 1, 1, 1]), 4)
    assert pc[0] == 100 and pc[1] == pytest.approx(100 / 3) and math.isnan(pc[3])


def test_digits_and_pointnet_models_shapes():
    z, logits = digits_model(bottleneck_dim=48).forward_with_features(torch.rand(4, 1, 8, 8))
    assert z.shape == (4, 48) and logits.shape == (4, 10)
    z, logits = pointnet_model(num_classes=7, bottleneck_dim=32, width=8).forward_with_features(
        torch.rand(3, 3, 50)
    )
    assert z.shape == (3, 32) and logits.shape == (3, 7)


@pytest.mark.slow  # imports timm (seconds)
def test_split_timm_model():
    m = split_timm("resnet10t", num_classes=4, bottleneck_dim=32)
    z, logits = m.eval().forward_with_features(torch.rand(2, 3, 32, 32))
    assert z.shape == (2, 32) and logits.shape == (2, 4)
    w = m.classifier_weight()
    assert w.shape == (4, 32)
    torch.testing.assert_close(logits, z @ w.T + m.classifier.bias)
    # a pre-logits head (conv_head to 1024 after 288 pooled channels): the bottleneck takes the pooled output
    m = split_timm("mobilenetv3_small_050", num_classes=4, bottleneck_dim=8)
    assert m.bottleneck[0].in_features == 1024
    assert m.eval()(torch.rand(2, 3, 32, 32)).shape == (2, 4)


# bad input, each at the public boundary
def test_bad_dims_do_not_compose():
    model = SFDAModel(nn.Flatten(), Bottleneck(5, 8), weight_norm_classifier(6, 3))
    with pytest.raises(ValueError, match="bottleneck output and the classifier input do not compose"):
        adapt(model, torch.randn(20, 5), TINY)


def test_k_larger_than_target_set():
    with pytest.raises(ValueError, match="K=5 neighbours is larger than the target set"):
        adapt(_mlp(), torch.randn(4, 5), TINY)


def test_empty_and_non_finite_target():
    with pytest.raises(ValueError, match="empty"):
        adapt(_mlp(), torch.randn(0, 5), TINY)
    x = torch.randn(20, 5)
    x[3, 1] = float("nan")
    with pytest.raises(ValueError, match="NaN"):
        adapt(_mlp(), x, TINY)


def test_label_class_count_mismatch():
    with pytest.raises(ValueError, match=r"\[0, 3\)"):
        adapt(_mlp(C=3), torch.randn(20, 5), TINY, labels=torch.arange(20) % 5)
    with pytest.raises(ValueError, match="source labels"):
        train_source(_mlp(C=3), torch.randn(20, 5), torch.arange(20) % 4)


@pytest.mark.parametrize(
    "field,value,match",
    [
        ("method", "nrc", "method must be one of"),
        ("K", 0, "K must be"),
        ("alpha_2", -1.0, "alpha_2"),
        ("batch_size", 1, "batch_size"),
    ],
)
def test_bad_config(field, value, match):
    with pytest.raises(ValueError, match=match):
        adapt(_mlp(), torch.randn(20, 5), SFDA2Config(**{**TINY.__dict__, field: value}))


def test_not_a_model():
    with pytest.raises(ValueError, match="expected an SFDAModel"):
        adapt(nn.Linear(5, 3), torch.randn(20, 5), TINY)
    with pytest.raises(ValueError, match="linear layer"):
        SFDAModel(nn.Identity(), nn.Identity(), nn.ReLU())


def test_load_shot_checkpoint_round_trip(tmp_path):
    from iclr24.sfda2 import load_shot_checkpoint

    src = digits_model(num_classes=4, bottleneck_dim=12)
    with torch.no_grad():
        for p in src.parameters():
            p.add_(torch.randn_like(p) * 0.1)
    torch.save(src.features.state_dict(), tmp_path / "source_F.pt")
    b = src.bottleneck.state_dict()
    torch.save(
        {k.replace("0.", "bottleneck.", 1) if k.startswith("0.") else "bn." + k[2:]: v for k, v in b.items()},
        tmp_path / "source_B.pt",
    )
    c = src.classifier.state_dict()
    torch.save(
        {
            "fc.weight_g": c["parametrizations.weight.original0"],
            "fc.weight_v": c["parametrizations.weight.original1"],
            "fc.bias": c["bias"],
        },
        tmp_path / "source_C.pt",
    )
    dst = load_shot_checkpoint(tmp_path, digits_model(num_classes=4, bottleneck_dim=12))
    x = torch.rand(3, 1, 8, 8)
    torch.testing.assert_close(dst.eval()(x), src.eval()(x))
    with pytest.raises(ValueError, match="4 classes x 12 bottleneck"):
        load_shot_checkpoint(tmp_path, digits_model(num_classes=5, bottleneck_dim=12))
    (tmp_path / "source_B.pt").unlink()
    with pytest.raises(FileNotFoundError, match="source_B.pt"):
        load_shot_checkpoint(tmp_path, dst)


def test_label_smoothing_is_the_official_formula():
    """src_pretrain.py's CrossEntropyLabelSmooth(epsilon=0.1): mean over the batch of -sum_c t_c log p_c with
    t = (1 - eps) onehot + eps / C; train_source uses torch's label_smoothing, which must equal it."""
    import torch.nn.functional as F

    torch.manual_seed(0)
    logits, y = torch.randn(7, 5), torch.randint(0, 5, (7,))
    eps, C = 0.1, 5
    t = (1 - eps) * F.one_hot(y, C).float() + eps / C
    official = (-t * torch.log_softmax(logits, 1)).sum(1).mean()
    assert torch.allclose(F.cross_entropy(logits, y, label_smoothing=eps), official, atol=1e-6)
    assert not torch.allclose(F.cross_entropy(logits, y), official, atol=1e-3)  # smoothing matters here
