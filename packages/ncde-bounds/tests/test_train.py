import pytest
import torch

from iclr24.ncde_bounds.train import GRUBaseline
from iclr24.ncde_bounds.train import TrainConfig
from iclr24.ncde_bounds.train import evaluate
from iclr24.ncde_bounds.train import fit
from iclr24.ncde_bounds.train import make_ncde


def test_fit_reduces_the_loss_and_folds_the_target_scaling():
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 6)
    v = torch.randn(64, 6, 1).cumsum(1) * 0.3
    y = 5.0 + 2.0 * (v[:, -1, 0] - v[:, 0, 0])  # a CDE-expressible target with an offset and scale
    cfg = TrainConfig(epochs=60, substeps=1, lr=2e-2)
    model = make_ncde(1, cfg)
    before = evaluate(model, t, v, y)["loss"]
    res = fit(model, t, v, y, cfg)
    after = evaluate(model, t, v, y)["loss"]
    assert after < 0.05 * before and res.losses[-1] < res.losses[0]
    # the model predicts in the targets' units after the readout fold
    with torch.no_grad():
        assert abs(float(model(t, v).mean()) - 5.0) < 0.5


def test_classification_and_gru_baseline_run():
    torch.manual_seed(0)
    t = torch.linspace(0, 1, 5)
    v = torch.randn(20, 5, 2)
    labels = (v[:, -1, 0] > v[:, 0, 0]).long()
    cfg = TrainConfig(epochs=3, loss="cross_entropy", substeps=1)
    m = make_ncde(2, cfg, output_dim=2)
    fit(m, t, v, labels, cfg)
    assert 0.0 <= evaluate(m, t, v, labels, loss="cross_entropy")["accuracy"] <= 1.0
    g = GRUBaseline(2, 8)
    fit(g, t, v, v[:, -1, 0], TrainConfig(epochs=2))
    assert g(t, v).shape == (20, 1)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"epochs": 0}, "epochs"),
        ({"lr": -1.0}, "lr"),
        ({"solver": "heun"}, "solver"),
        ({"loss": "hinge"}, "loss"),
        ({"batch_size": 0}, "batch_size"),
    ],
)
def test_bad_train_config_is_refused(kwargs, match):
    with pytest.raises(ValueError, match=match):
        TrainConfig(**kwargs)


def test_bad_targets_are_refused():
    m = make_ncde(1, TrainConfig())
    t = torch.linspace(0, 1, 4)
    v = torch.zeros(3, 4, 1)
    with pytest.raises(ValueError, match="targets must have shape"):
        fit(m, t, v, torch.zeros(4), TrainConfig(epochs=1))
    with pytest.raises(ValueError, match="integer class labels"):
        fit(m, t, v, torch.zeros(3), TrainConfig(epochs=1, loss="cross_entropy"))

    with pytest.raises(ValueError, match="one class only"):
        fit(m, t, v, torch.ones(3, dtype=torch.long), TrainConfig(epochs=1, loss="cross_entropy"))
    with pytest.raises(ValueError, match=">= 0"):
        fit(m, t, v, torch.tensor([0, -1, 1]), TrainConfig(epochs=1, loss="cross_entropy"))
    # evaluating on a one-class test subset is fine
    cfg = TrainConfig(epochs=1, loss="cross_entropy", substeps=1)
    m2 = make_ncde(1, cfg, output_dim=2)
    assert evaluate(m2, t, v, torch.ones(3, dtype=torch.long), loss="cross_entropy")["accuracy"] in (0.0, 1.0)
