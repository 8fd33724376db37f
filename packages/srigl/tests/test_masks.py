import math

import pytest
import torch

from iclr24.srigl.masks import ablate_neurons
from iclr24.srigl.masks import constant_fan_in
from iclr24.srigl.masks import cosine_drop_fraction
from iclr24.srigl.masks import erk_densities
from iclr24.srigl.masks import is_update_step
from iclr24.srigl.masks import layer_budget
from iclr24.srigl.masks import random_constant_fan_in_mask
from iclr24.srigl.masks import random_unstructured_mask
from iclr24.srigl.masks import rigl_update
from iclr24.srigl.masks import srigl_update
from iclr24.srigl.masks import topk_mask


def test_layer_budget_and_fan_in_formula():
    # k = floor(floor(numel * (1 - S)) / n_active)
    assert layer_budget(256 * 256, 0.1) == 6553
    assert layer_budget(16384, 1 - 0.95) == 819
    assert constant_fan_in(819, 256, 64) == 3
    assert constant_fan_in(819, 200, 64) == 4  # fewer active neurons -> larger fan-in
    assert constant_fan_in(10_000, 2, 64) == 64  # capped at the dense fan-in
    # the spec's infeasible case: 64-input layer at 99%: k = floor(163 / 256) = 0
    assert constant_fan_in(layer_budget(256 * 64, 0.01), 256, 64) == 0


def test_erk_matches_budget_and_favours_small_layers():
    shapes = [(256, 64), (256, 256), (10, 256)]
    d = erk_densities(shapes, 0.1)
    numels = [math.prod(s) for s in shapes]
    assert sum(di * n for di, n in zip(d, numels)) == pytest.approx(0.1 * sum(numels), rel=1e-9)
    assert all(0 < di <= 1 for di in d)
    # raw ERK score (sum/prod) is largest for the 10x256 layer -> densest
    assert d[2] > d[0] > d[1]


def test_erk_makes_overfull_layers_dense_and_resolves():
    shapes = [(4, 4), (1000, 1000)]
    d = erk_densities(shapes, 0.5)
    assert d[0] == 1.0
    assert 16 * d[0] + 1e6 * d[1] == pytest.approx(0.5 * (16 + 1e6))


def test_random_masks_have_exact_counts():
    g = torch.Generator().manual_seed(0)
    m = random_constant_fan_in_mask(50, 30, 7, g)
    assert m.dtype == torch.bool and (m.sum(1) == 7).all()
    u = random_unstructured_mask(50, 30, 123, g)
    assert int(u.sum()) == 123
    with pytest.raises(ValueError):
        random_constant_fan_in_mask(5, 3, 4)


def test_cosine_schedule_and_update_steps():
    a = 0.3
    assert cosine_drop_fraction(0, a, 95) == pytest.approx(a)
    assert cosine_drop_fraction(95 / 2, a, 95) == pytest.approx(a / 2)
    assert cosine_drop_fraction(95, a, 95) == pytest.approx(0.0, abs=1e-12)
    steps = [t for t in range(0, 200) if is_update_step(t, 10, 95)]
    assert steps == [10, 20, 30, 40, 50, 60, 70, 80, 90]


def test_topk_mask_brute_force():
    s = torch.tensor([[0.1, 5.0, 3.0], [4.0, -1.0, 2.0]])
    m = topk_mask(s, 3)
    assert m.tolist() == [[False, True, True], [True, False, False]]
    assert not topk_mask(s, 0).any()


def _random_case(seed, out=12, fan_in=20, k=5):
    g = torch.Generator().manual_seed(seed)
    mask = random_constant_fan_in_mask(out, fan_in, k, g)
    w = torch.randn(out, fan_in, generator=g) * mask
    grad = torch.randn(out, fan_in, generator=g)
    return w, grad, mask


@pytest.mark.parametrize("seed", range(20))
def test_rigl_update_keeps_nnz_and_grow_is_disjoint_from_keep(seed):
    w, grad, _ = _random_case(seed)
    g = torch.Generator().manual_seed(seed)
    mask = random_unstructured_mask(12, 20, 60, g)
    w = w.abs() * mask + 0.01 * mask  # all active weights non-zero
    res = rigl_update(w, grad, mask, 0.3)
    assert int(res.mask.sum()) == int(mask.sum())
    n_prune = math.floor(60 * 0.3)
    keep = res.mask & mask & ~res.grown
    # kept = the top (60 - n_prune) |W| among active; the rest of the new mask is grown (disjoint, fresh)
    kept_vals = w[mask].abs().sort(descending=True).values[: 60 - n_prune]
    assert torch.equal(w[keep].abs().sort(descending=True).values[: len(kept_vals)], kept_vals)
    assert not (res.grown & mask).any()


@pytest.mark.parametrize("seed", range(20))
@pytest.mark.parametrize("gamma", [0.0, 0.3, 0.9])
def test_srigl_update_constant_fan_in_invariant(seed, gamma):
    w, grad, mask = _random_case(seed)
    budget = 12 * 5
    res = srigl_update(w, grad, mask, 0.3, budget=budget, k0=5, gamma_sal=gamma)
    fans = res.mask.sum(1)
    assert (fans[res.ablated] == 0).all()
    assert (fans[~res.ablated] == res.fan_in).all()
    assert res.fan_in == budget // int((~res.ablated).sum())
    assert int(res.mask.sum()) <= budget
    if gamma == 0.0:
        assert not res.ablated.any()


def test_srigl_keeps_largest_weights_and_regrows_by_gradient():
    # one row, fan-in 3 of 6, drop fraction 1/3 -> drop the smallest |W|, grow the largest |grad| elsewhere
    mask = torch.tensor([[True, True, True, False, False, False]])
    w = torch.tensor([[3.0, 0.5, 2.0, 0.0, 0.0, 0.0]])
    grad = torch.tensor([[0.0, 0.0, 0.0, 0.1, 9.0, 0.2]])
    res = srigl_update(w, grad, mask, 1 / 3, budget=3, k0=3, gamma_sal=0.0)
    assert res.mask.tolist() == [[True, False, True, False, True, False]]
    assert res.grown.tolist() == [[False, False, False, False, True, False]]


def test_ablation_removes_rows_without_salient_weights():
    # row 0 has tiny weights and zero gradient -> no salient weight -> ablated; others keep theirs
    g = torch.Generator().manual_seed(0)
    mask = random_constant_fan_in_mask(8, 16, 4, g)
    w = (torch.rand(8, 16, generator=g) + 1.0) * mask
    w[0] *= 1e-6
    grad = torch.rand(8, 16, generator=g)
    grad[0] = 0.0
    n_ones = int(mask.sum())
    n_prune = math.floor(0.2 * n_ones)
    abl = ablate_neurons(w, grad, mask, n_ones - n_prune, n_prune, 0.3, 4, budget=32)
    assert abl.tolist() == [True] + [False] * 7
    res = srigl_update(w, grad, mask, 0.2, budget=32, k0=4, gamma_sal=0.3)
    assert res.ablated[0] and res.mask[0].sum() == 0
    assert res.fan_in == 32 // 7 and (res.mask[1:].sum(1) == 32 // 7).all()
    # never ablated when the layer is exempt
    res2 = srigl_update(w, grad, mask, 0.2, budget=32, k0=4, gamma_sal=0.3, allow_ablation=False)
    assert not res2.ablated.any() and (res2.mask.sum(1) == 4).all()


def test_ablation_safeguard_keeps_fan_in_within_dense_fan_in():
    # nothing is salient anywhere: the safeguard keeps ceil(budget / fan_in) rows so k <= fan_in
    mask = torch.ones(10, 4, dtype=torch.bool)
    w = torch.zeros(10, 4)
    grad = torch.zeros(10, 4)
    res = srigl_update(w, grad, mask, 0.3, budget=20, k0=2, gamma_sal=0.9)
    assert res.fan_in <= 4
    assert int(res.mask.sum()) <= 20


def test_budget_rounding_keeps_the_exact_floor_where_the_official_int_drops_a_weight():
    # 640 weights at 10 % density: 640 * (1 - 0.9) is 63.999999999999986 in binary floating point. The official
    # int(numel * (1 - S)) keeps 63, so a 16 x 40 layer gets fan-in 63 // 16 = 3; the exact floor is 64, fan-in 4.
    assert int(640 * (1 - 0.9)) == 63 and int(640 * (1 - 0.9)) // 16 == 3
    assert layer_budget(640, 1 - 0.9) == 64
    assert constant_fan_in(layer_budget(640, 1 - 0.9), 16, 40) == 4


def test_drop_after_ablation_keeps_only_nonzero_weights_and_grows_by_gradient():
    # 4 neurons x 8 inputs, fan-in 4 (budget 16). Neuron 3 holds the 4 smallest weights and no gradient: ablated at
    # gamma_sal 0.9. Drop fraction 1/8: n_keep = 14, more than the 12 non-zero weights of the three active neurons.
    # The official drop step (top-14 of |W| with the ablated row at min - 1) then keeps 2 inactive zero-weight
    # positions, in arbitrary order among the ties; here only the 12 non-zero weights are kept and every active
    # neuron grows to the new fan-in k = floor(16 / 3) = 5 by the largest |grad| among its inactive inputs.
    mask = torch.zeros(4, 8, dtype=torch.bool)
    mask[:, :4] = True
    weight = torch.zeros(4, 8)
    weight[:3, :4] = torch.arange(1.0, 13.0).view(3, 4)
    weight[3, :4] = 1e-3
    grad = torch.zeros(4, 8)
    grad[:3, 4:] = torch.tensor([[0.1, 0.9, 0.2, 0.3], [0.8, 0.1, 0.2, 0.3], [0.1, 0.2, 0.3, 0.7]])
    r = srigl_update(weight, grad, mask, drop_fraction=0.125, budget=16, k0=4, gamma_sal=0.9)
    assert r.ablated.tolist() == [False, False, False, True] and r.fan_in == 5
    assert not r.mask[3].any() and r.mask[:3].sum(dim=1).tolist() == [5, 5, 5]
    assert (r.mask[:3, :4] == mask[:3, :4]).all()  # every non-zero weight of an active neuron is kept
    assert r.grown[:3, 4:].nonzero().tolist() == [[0, 1], [1, 0], [2, 3]]  # the largest |grad| per neuron
