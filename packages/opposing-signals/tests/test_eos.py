import pytest

from iclr24.opposing_signals.eos import edge_of_stability_report
from iclr24.opposing_signals.eos import loss_increase_steps
from iclr24.opposing_signals.train import History
from iclr24.opposing_signals.train import TrainConfig


def test_loss_increase_steps():
    assert loss_increase_steps([1.0, 1.005, 1.2, 1.0, 1.02]) == [1, 3]
    assert loss_increase_steps([1.0, 1.005], tol=0.0) == [0]


def test_report_on_a_history():
    h = History(TrainConfig(lr=0.5))
    h.loss = [1.0, 0.5, 0.6, 0.4, 0.41, 0.3]
    h.sharpness = [1.0, 3.0, 4.2, 3.8, 4.0]
    h.sharpness_steps = [0, 10, 20, 30, 40]
    r = edge_of_stability_report(h)
    assert r.threshold == pytest.approx(4.0)
    assert r.first_crossing_step == 20  # first >= 0.9 * 4 = 3.6
    assert r.late_median_sharpness == pytest.approx(4.0)  # steps >= 40 // 3 = 13: [4.2, 3.8, 4.0]
    assert r.late_ratio == pytest.approx(1.0)
    assert r.loss_increase_steps == 2
    assert r.largest_spike == pytest.approx(1.2)
    assert edge_of_stability_report(h, lr=0.1, momentum=0.9).threshold == pytest.approx(38.0)


def test_report_bad_input():
    h = History(TrainConfig())
    h.loss = [1.0, 0.9]
    with pytest.raises(ValueError, match="no sharpness measurements"):
        edge_of_stability_report(h)
    with pytest.raises(ValueError, match="loss history of length >= 2"):
        loss_increase_steps([1.0])
