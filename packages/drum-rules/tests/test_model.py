import numpy as np
import pytest
import torch

from iclr24.drum_rules import DRUM
from iclr24.drum_rules import KG
from iclr24.drum_rules import path_weights
from iclr24.drum_rules import rank_max_weights
from iclr24.drum_rules import walk_counts
from iclr24.drum_rules.model import propagate


@pytest.mark.parametrize("agg", ["sum", "sm", "mm"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_scores_equal_walk_count_expansion(agg, seed, make_kg, make_attention):
    """Acceptance check 1: score = sum_s w_s N_s (DRUM); max analogues for SM/MM."""
    rng = np.random.default_rng(seed)
    kg = make_kg(seed, n_entities=9, n_relations=2, n_facts=20)
    att = make_attention(rng, 3, 2 + seed % 2, 2)
    m = DRUM.with_fixed_attention({0: att}, 2, aggregation=agg)
    S = m.score_matrix(0, kg)
    if agg == "sum":
        X = sum(w * walk_counts(kg, p).toarray() for p, w in path_weights(att).items())
    else:
        per = [
            np.max([w * (walk_counts(kg, p).toarray() >= 1) for p, w in wr.items()], axis=0)
            for wr in rank_max_weights(att)
        ]
        X = np.max(per, axis=0) if agg == "mm" else np.sum(per, axis=0)
    assert np.abs(S - X).max() < 1e-6


def test_attention_rows_are_distributions():
    """Acceptance check 2 (model side): a_{j,i} >= 0 and sums to 1 over 2|R|+1 operators."""
    m = DRUM(5, rank=3, steps=3, embed_dim=8, hidden_dim=8)
    a = m.attention(torch.arange(10))
    assert a.shape == (10, 3, 3, 11)
    assert (a >= 0).all() and torch.allclose(a.sum(-1), torch.ones(10, 3, 3))


def test_sparse_equals_dense_and_gradients_flow(make_kg):
    kg = make_kg(3, n_entities=8, n_relations=2, n_facts=18)
    m = DRUM(2, rank=2, steps=2, embed_dim=8, hidden_dim=8)
    q, t = torch.tensor([0, 1, 2, 3]), torch.tensor([0, 1, 2, 3])
    s = m(q, t, kg, normalize=True)
    a = m.attention(q).detach()
    M = kg.dense_operators()
    for b in range(4):
        ref = 0
        for j in range(2):
            v = torch.zeros(8)
            v[t[b]] = 1
            for i in range(2):
                v = torch.einsum("k,kef,f->e", a[b, j, i, :-1], M, v) + a[b, j, i, -1] * v
                v = v / v.sum().clamp_min(1e-20)
            ref = ref + v
        assert torch.allclose(s[b], ref, atol=1e-6)
    s.sum().backward()
    assert m.linear.weight.grad.abs().sum() > 0


def test_normalisation_counter_example():
    """Acceptance check 5: T=1, a_p=.9, a_I=.1, beta=.5: one p-neighbour scores .9, three score .9/2.8 < beta."""
    att = np.array([[[0.9, 0.0, 0.1]]])  # ops: p, inv_p, identity
    m = DRUM.with_fixed_attention({0: att}, 1, normalize=True)
    one = KG(("x", "y", "a", "b"), ("p",), np.array([[0, 0, 1]]))
    three = KG(("x", "y", "a", "b"), ("p",), np.array([[0, 0, 1], [2, 0, 1], [3, 0, 1]]))
    assert m.score_matrix(0, one)[0, 1] == pytest.approx(0.9)
    s3 = m.score_matrix(0, three)[0, 1]
    assert s3 == pytest.approx(0.9 / 2.8) and s3 < 0.5
    from iclr24.drum_rules import check_faithfulness
    from iclr24.drum_rules import path_rules

    prog = path_rules(m, 0.5)
    assert [r.atoms for r in prog] == [(((0,), 1),)]  # p(x,y) is extracted and fires on (x, y) ...
    rep = check_faithfulness(m, prog, [one, three])
    assert (
        rep.per_dataset[0]["precision"] == 1.0 and rep.per_dataset[1]["precision"] < 1.0
    )  # ... but is unsound


def test_bad_model_input(make_kg):
    with pytest.raises(ValueError, match="aggregation"):
        DRUM(3, aggregation="avg")
    with pytest.raises(ValueError, match="rows summing to 1"):
        DRUM.with_fixed_attention({0: np.ones((1, 1, 3))}, 1)
    with pytest.raises(ValueError, match="operator columns"):
        DRUM.with_fixed_attention({0: np.ones((1, 1, 4)) / 4}, 1)
    m = DRUM.with_fixed_attention({0: np.ones((1, 1, 5)) / 5}, 2)
    with pytest.raises(ValueError, match="no fixed attention"):
        m.attention(torch.tensor([1]))
    with pytest.raises(ValueError, match="relations"):
        m.score_matrix(0, make_kg(0, n_relations=3))
    with pytest.raises(ValueError, match="2\\*1\\+1"):
        propagate(torch.ones(1, 1, 1, 7) / 7, torch.tensor([0]), make_kg(0, n_relations=1))


@pytest.mark.parametrize("agg", ["sum", "sm", "mm"])
@pytest.mark.parametrize("normalize", [False, True])
def test_score_matrix_equals_the_batched_propagation(agg, normalize, make_kg):
    """score_matrix (one attention shared by all tails: one operator mix per step, or the reduceat max-product)
    gives the scores of the per-query propagation that training uses; the max-product without normalisation is
    bit-identical (max and products are exact), the sums agree to round-off."""
    kg = make_kg(5, n_entities=11, n_relations=3, n_facts=40)
    m = DRUM(3, rank=2, steps=3, aggregation=agg, normalize=normalize, embed_dim=8, hidden_dim=8)
    for q in (0, 4):
        S = m.score_matrix(q, kg, batch_size=4)  # several tail batches
        attn = torch.as_tensor(m.attention_for(q))[None].expand(11, -1, -1, -1)
        ref = propagate(attn, torch.arange(11), kg, agg, normalize).t().numpy()
        assert S.shape == (11, 11) and S.max() > 0
        if agg != "sum" and not normalize:
            assert np.array_equal(S, ref)
        else:
            assert np.abs(S - ref).max() <= 1e-12 * max(1.0, np.abs(ref).max())


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_sum_step_equals_the_stacked_and_per_relation_products(dtype):
    """The DRUM step (gather/scatter over entries) gives the scores and gradients of one training step that the
    earlier stacked-COO product and the official per-relation CSR layout give (the step-time bench compares them)."""
    from iclr24.drum_rules.bench import official_train_step
    from iclr24.drum_rules.bench import per_relation_csr_step
    from iclr24.drum_rules.bench import random_kg
    from iclr24.drum_rules.bench import stacked_coo_step
    from iclr24.drum_rules.model import sum_step

    kg = random_kg(n_entities=120, n_relations=4, n_facts=600, seed=1)
    torch.set_default_dtype(dtype)
    try:
        step = official_train_step(kg, batch=16, dim=8, seed=2)
        ours, ref, csr = step(sum_step), step(stacked_coo_step), step(per_relation_csr_step)
    finally:
        torch.set_default_dtype(torch.float32)
    tol = 1e-5 if dtype == torch.float32 else 1e-12
    for other in (ref, csr):
        assert ours[0].dtype == dtype and torch.allclose(ours[0], other[0], rtol=tol, atol=tol * 1e-3)
        assert len(ours[1]) == len(other[1]) == 27  # embedding, 3 BiLSTMs x 8 tensors, linear: all reached
        for g, h in zip(ours[1], other[1]):
            assert torch.allclose(g, h, rtol=tol, atol=tol * float(h.abs().max()))
    assert ours[0].abs().max() > 0 and any(float(g.abs().max()) > 0 for g in ours[1])


def test_operator_mix_gradients_match_finite_differences(make_kg):
    from iclr24.drum_rules.model import sum_step

    kg = make_kg(5, n_entities=7, n_relations=2, n_facts=15)
    g = torch.Generator().manual_seed(0)
    v = torch.rand(3, 7, dtype=torch.float64, generator=g, requires_grad=True)
    a = torch.rand(3, 5, dtype=torch.float64, generator=g, requires_grad=True)
    assert torch.autograd.gradcheck(lambda v, a: sum_step(v, a, kg), (v, a))
    dense = torch.einsum("k,kef,f->e", a[1, :4].detach(), kg.dense_operators(torch.float64), v[1].detach())
    assert torch.allclose(sum_step(v, a, kg)[1].detach(), dense + a[1, 4].detach() * v[1].detach())
