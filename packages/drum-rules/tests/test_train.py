import numpy as np
import pytest

from iclr24.drum_rules import (
    DRUM,
    TrainConfig,
    check_faithfulness,
    link_prediction,
    path_rules,
    search_for_beta,
    select_beta,
    synthetic,
    train,
)
from iclr24.drum_rules.train import f1_at


def test_grid_search_for_beta_on_toy_set():
    """Acceptance check 7 (the reference's 11-point grid refinement) on a toy set with one F1 peak."""
    s = np.array([0.9, 0.8, 0.75, 0.7, 0.52, 0.35, 0.3, 0.2, 0.1, 0.05, 0.4, 0.6])
    y = np.array([1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 1])
    beta = search_for_beta(s, y)
    assert f1_at(s, y, beta) == 1.0 and 0.4 < beta <= 0.52


@pytest.mark.parametrize("seed", range(3))
def test_exact_search_for_beta_maximises_f1(seed):
    """Acceptance check 7: beta reaches the best F1 over all thresholds, also on overlapping scores."""
    method = "exact"
    rng = np.random.default_rng(seed)
    pos, neg = rng.uniform(0.3, 1.0, 40), rng.uniform(0.0, 0.6, 40)
    s = np.concatenate([pos, neg])
    y = np.r_[np.ones(40), np.zeros(40)].astype(int)
    best = max(f1_at(s, y, c) for c in np.unique(s))
    beta = search_for_beta(s, y, method=method)
    assert f1_at(s, y, beta) == pytest.approx(best)
    with pytest.raises(ValueError):
        search_for_beta(s, y[:3])


def test_trained_no_norm_drum_path_baseline_is_sound_but_incomplete():
    """Acceptance check 4: on a trained no-norm DRUM the path baseline has precision 1 and recall < 1."""
    data = synthetic.family(5, seed=0)
    m = DRUM(data.kg.n_relations, rank=2, steps=2, embed_dim=16, hidden_dim=16)
    hist = train(m, data, TrainConfig(epochs=3, batch_size=8, lr=1e-2, loss="nll"))
    assert hist["train_loss"][-1] < hist["train_loss"][0]
    assert m.head_relations == sorted(set(data.train[:, 1].tolist()))
    beta, info = select_beta(m, data)
    rep = check_faithfulness(m, path_rules(m, beta), [data.kg])
    assert rep.precision == 1.0 and rep.recall < 1.0
    lp = link_prediction(m, data)
    assert 0 < lp["mrr"] <= 1 and lp["hits@10"] >= lp["hits@1"]
    with pytest.raises(ValueError, match="fixed attention"):
        train(DRUM.with_fixed_attention({0: np.ones((1, 1, 25)) / 25}, 12), data)
