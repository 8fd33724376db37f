import numpy as np
import pytest

from iclr24.drum_rules import DRUM
from iclr24.drum_rules import TrainConfig
from iclr24.drum_rules import check_faithfulness
from iclr24.drum_rules import link_prediction
from iclr24.drum_rules import path_rules
from iclr24.drum_rules import search_for_beta
from iclr24.drum_rules import select_beta
from iclr24.drum_rules import synthetic
from iclr24.drum_rules import train
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


def test_auc_pr_matches_official_definition():
    """The official get_test_auc: thresholds .01..2.99 with `>`, precision 0 where nothing is predicted, end
    points (recall 1, precision 0) and (recall 0, precision 1): a perfect ranking scores exactly 0.5 there."""
    from iclr24.drum_rules.train import auc_pr

    y = np.array([1, 1, 0, 0])
    perfect = np.array([0.9, 0.9, 0.1, 0.1])
    assert auc_pr(perfect, y) == pytest.approx(0.5)
    assert auc_pr(perfect, y, "scores", skip_empty=True) == pytest.approx(1.0)
    # hand-computed: scores .9 (pos), .6 (neg), .3 (pos), .1 (neg) at thresholds .2, .5, .7
    s, y = np.array([0.9, 0.6, 0.3, 0.1]), np.array([1, 0, 1, 0])
    # b=.2: P 2/3 R 1; b=.5: P 1/2 R 1/2; b=.7: P 1 R 1/2 -> points (1,0) (1,2/3) (.5,.5) (.5,1) (0,1)
    expect = 0 + 0.5 * (2 / 3 + 0.5) / 2 + 0 + 0.5 * (1 + 1) / 2
    assert auc_pr(s, y, [0.2, 0.5, 0.7]) == pytest.approx(expect)
    # tiny no-norm scores: nothing above 0.01, points (1,0) (0,0) (0,1): area 0 on the official grid
    assert auc_pr(np.full(4, 1e-3), y) == pytest.approx(0.0)
    with pytest.raises(ValueError, match="0/1 labels"):
        auc_pr(s, np.array([0, 0, 0, 0]))
    with pytest.raises(ValueError, match="finite"):
        auc_pr(np.array([np.nan, 1, 0, 0]), y)


def _identity_model(n_rel: int) -> DRUM:
    """Attention on the identity only: score(h | q, t) = [h = t], so every other candidate ties at 0."""
    a = np.zeros((1, 2, 2 * n_rel + 1))
    a[..., -1] = 1.0
    return DRUM.with_fixed_attention({q: a for q in range(2 * n_rel)}, n_rel)


def test_link_prediction_tie_breaking():
    data = synthetic.family(3, seed=0)
    m = _identity_model(data.kg.n_relations)
    opt = link_prediction(m, data, ties="optimistic")
    pes = link_prediction(m, data, ties="pessimistic")
    mean = link_prediction(m, data, ties="mean")
    rnd = link_prediction(m, data, ties="random", seed=0)
    # only the tail itself scores above the answer (score 1 vs 0); DRUM's default p > p_head ranks every tie below
    assert opt["mrr"] == 0.5 and opt["hits@3"] == 1.0
    assert pes["hits@10"] == 0.0 and pes["mrr"] < 0.05
    assert pes["mrr"] < rnd["mrr"] < opt["mrr"] and pes["mrr"] < mean["mrr"] < opt["mrr"]
    assert rnd["queries_with_ties"] == rnd["n_queries"]
    assert link_prediction(m, data, ties="random", seed=0) == rnd  # seeded
    with pytest.raises(ValueError, match="ties must be"):
        link_prediction(m, data, ties="first")


def test_degenerate_beta_warns():
    from iclr24.drum_rules.train import DegenerateBetaWarning

    data = synthetic.family(3, seed=0)
    with pytest.warns(DegenerateBetaWarning, match="validation negatives"):
        beta, info = select_beta(_identity_model(data.kg.n_relations), data)
    assert info["degenerate"] and info["valid_negatives_predicted"] >= 0.9
    assert "auc_pr" in info["test"] and "auc_pr_all_thresholds" in info["test"]


def test_expected_ties_are_the_mean_of_random_tie_breaking():
    """``ties="expected"`` is the exact expectation of ``"random"``: the closed form E[1/(1+X)] for X ~ Bin(n, 1/2),
    and the average of many seeded random draws."""
    from iclr24.drum_rules.train import _binomial_half

    for n in (0, 1, 7, 400):
        p = _binomial_half(n)
        assert abs(p.sum() - 1) < 1e-12
        assert abs(p @ (1 / (1 + np.arange(n + 1))) - (2 ** (n + 1) - 1) / ((n + 1) * 2**n)) < 1e-12
    data = synthetic.family(3, seed=0)
    m = _identity_model(data.kg.n_relations)
    exp = link_prediction(m, data, ties="expected")
    draws = [link_prediction(m, data, ties="random", seed=s) for s in range(40)]
    for key in ("mrr", "hits@10"):
        v = np.array([d[key] for d in draws])
        assert abs(v.mean() - exp[key]) < 4 * v.std() / np.sqrt(len(v)) + 1e-9
    mean = link_prediction(m, data, ties="mean")
    assert exp["mrr"] > mean["mrr"]  # Jensen: E[1/rank] > 1/E[rank] when ranks vary
