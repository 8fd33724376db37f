"""Banks, neighbours and the composed objective (acceptance check 7)."""

import math

import pytest
import torch
import torch.nn.functional as F

from iclr24.sfda2.banks import NeighbourBanks
from iclr24.sfda2.banks import SFDA2Loss
from iclr24.sfda2.banks import nearest_neighbours
from iclr24.sfda2.losses import alpha_schedule
from iclr24.sfda2.losses import snc_negative_loss
from iclr24.sfda2.losses import snc_positive_loss


def test_neighbours_never_self_even_with_duplicates():
    g = torch.Generator().manual_seed(0)
    bank = F.normalize(torch.randn(20, 4, generator=g), dim=1)
    bank[5] = bank[3]  # an exact duplicate ties with self
    idx = torch.tensor([3, 5, 0, 19])
    near = nearest_neighbours(bank[idx], bank, idx, k=4)
    assert near.shape == (4, 4)
    assert not (near == idx[:, None]).any()
    assert near[0, 0] == 5 and near[1, 0] == 3


def test_neighbours_match_brute_force():
    g = torch.Generator().manual_seed(1)
    bank = F.normalize(torch.randn(30, 3, generator=g), dim=1)
    idx = torch.arange(30)
    near = nearest_neighbours(bank, bank, idx, k=3)
    for i in range(30):
        sims = [(float(bank[i] @ bank[j]), j) for j in range(30) if j != i]
        assert set(near[i].tolist()) == {j for _, j in sorted(sims, reverse=True)[:3]}


def test_neighbours_k_too_large():
    bank = torch.eye(4)
    with pytest.raises(ValueError, match="K must be in"):
        nearest_neighbours(bank, bank, torch.arange(4), k=4)


def test_bank_update_and_scores_shape():
    g = torch.Generator().manual_seed(2)
    banks = NeighbourBanks(torch.randn(12, 5, generator=g), torch.softmax(torch.randn(12, 3, generator=g), 1))
    idx = torch.tensor([1, 4])
    z, p = torch.randn(2, 5, generator=g), torch.tensor([[0.1, 0.1, 0.8], [0.9, 0.05, 0.05]])
    banks.update(idx, z, p)
    torch.testing.assert_close(banks.fea_bank[idx], F.normalize(z, dim=1))
    assert banks.pseudo_bank[idx].tolist() == [2, 0]
    near, s = banks.neighbour_scores(idx, z, 4)
    assert s.shape == (2, 4, 3) and not (near == idx[:, None]).any()


def test_bank_rejects_non_finite_features():
    with pytest.raises(ValueError, match="NaN"):
        NeighbourBanks(torch.tensor([[float("nan"), 1.0], [0.0, 1.0]]), torch.full((2, 2), 0.5))


def test_loss_terms_compose_and_aad_is_snc_only():
    g = torch.Generator().manual_seed(3)
    N, A, C, B = 40, 6, 5, 8
    feats, logits_all = torch.randn(N, A, generator=g), torch.randn(N, C, generator=g)
    idx = torch.arange(B)
    z = torch.randn(B, A, generator=g, requires_grad=True)
    logits = torch.randn(B, C, generator=g, requires_grad=True)
    w = torch.randn(C, A, generator=g)
    full = SFDA2Loss(C, A, K=3, alpha_2=1.0)
    full.init_banks(feats, logits_all)
    t = full(z, logits, idx, it=3, max_iter=10, w=w)
    assert set(t) == {"pos", "neg", "ifa", "fd", "alpha_t", "lambda_t", "total"}
    assert all(math.isfinite(float(v.detach())) for v in t.values())
    expect = t["pos"] + alpha_schedule(3, 10) * t["neg"] + 1e-4 * t["ifa"] + 1.0 * t["fd"]
    torch.testing.assert_close(t["total"], expect)
    assert float(t["lambda_t"]) == pytest.approx(5.0 * 4 / 10)
    t["total"].backward()
    assert z.grad.abs().sum() > 0  # IFA/FD reach the features through the covariance
    aad = SFDA2Loss(C, A, K=3, use_ifa=False, use_fd=False)
    aad.init_banks(feats, logits_all)
    z2 = z.detach().requires_grad_(True)
    ta = aad(z2, logits.detach(), idx, it=3, max_iter=10)
    p = torch.softmax(logits.detach(), 1)
    _, s = aad.banks.neighbour_scores(idx, z2, 3)
    torch.testing.assert_close(
        ta["total"], snc_positive_loss(p, s) + alpha_schedule(3, 10) * snc_negative_loss(p)
    )
    assert float(ta["ifa"]) == 0 and float(ta["fd"]) == 0


def test_loss_bad_inputs():
    crit = SFDA2Loss(3, 4, K=2)
    with pytest.raises(ValueError, match="init_banks"):
        crit(torch.randn(2, 4), torch.randn(2, 3), torch.arange(2), 0, 5, torch.randn(3, 4))
    with pytest.raises(ValueError, match="num_classes=3"):
        crit.init_banks(torch.randn(10, 4), torch.randn(10, 7))
    with pytest.raises(ValueError, match="more than K"):
        crit.init_banks(torch.randn(2, 4), torch.randn(2, 3))
    crit.init_banks(torch.randn(10, 4), torch.randn(10, 3))
    with pytest.raises(ValueError, match="non-finite"):
        crit(torch.full((2, 4), float("inf")), torch.randn(2, 3), torch.arange(2), 0, 5, torch.randn(3, 4))
    with pytest.raises(ValueError, match=r"z \[B, 4\]"):
        crit(torch.randn(2, 5), torch.randn(2, 3), torch.arange(2), 0, 5, torch.randn(3, 4))
    with pytest.raises(ValueError, match="IFA needs"):
        crit(torch.randn(2, 4), torch.randn(2, 3), torch.arange(2), 0, 5, None)
    with pytest.raises(ValueError, match="alpha_2"):
        SFDA2Loss(3, 4, alpha_2=float("nan"))
    with pytest.raises(ValueError, match="num_classes"):
        SFDA2Loss(1, 4)


def test_an_empty_pseudo_class_keeps_every_term_and_gradient_finite():
    """No bank row is pseudo-labelled class 3 (of 4). The official FD term takes ``torch.mean`` over the empty
    selection of that class (NaN, which poisons the loss and, through SGD, every weight); ours uses a zero class
    mean, so the loss, its gradients and the step stay finite, at the paper's FD weight 10."""
    assert torch.isnan(
        torch.mean(torch.rand(5, 4)[torch.zeros(5, dtype=torch.bool)], dim=0)
    ).all()  # the premise
    g = torch.Generator().manual_seed(3)
    C, A, N = 4, 6, 24
    bank_logits = torch.randn(N, C, generator=g)
    bank_logits[:, 3] = -20.0  # class 3 never wins in the bank
    crit = SFDA2Loss(C, A, K=3, alpha_2=10.0)
    crit.init_banks(torch.randn(N, A, generator=g), bank_logits)
    z = torch.randn(8, A, generator=g, requires_grad=True)
    w = torch.randn(C, A, generator=g, requires_grad=True)
    logits = z @ w.T
    logits = logits - 20.0 * F.one_hot(torch.full((8,), 3), C)  # nor in the batch
    terms = crit(z, logits, torch.arange(8), it=3, max_iter=10, w=w)
    assert crit.banks.pseudo_bank.bincount(minlength=C)[3] == 0
    assert all(torch.isfinite(v).all() for v in terms.values())
    terms["total"].backward()
    assert (
        torch.isfinite(z.grad).all() and torch.isfinite(w.grad).all() and float(terms["fd"].detach()) != 0.0
    )
