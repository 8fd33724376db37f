"""Closed forms and brute force for the SF(DA)^2 loss terms (acceptance checks 1-6)."""

import math

import numpy as np
import pytest
import torch

from iclr24.sfda2.losses import alpha_schedule
from iclr24.sfda2.losses import class_mean_scores
from iclr24.sfda2.losses import feature_disentanglement_loss
from iclr24.sfda2.losses import ifa_sigma2
from iclr24.sfda2.losses import implicit_feature_augmentation_loss
from iclr24.sfda2.losses import implicit_feature_augmentation_loss_loop
from iclr24.sfda2.losses import information_maximization_loss
from iclr24.sfda2.losses import lambda_schedule
from iclr24.sfda2.losses import lr_decay
from iclr24.sfda2.losses import snc_negative_loss
from iclr24.sfda2.losses import snc_positive_loss
from iclr24.sfda2.losses import update_class_covariance


@pytest.fixture(autouse=True)
def _f64():
    torch.set_default_dtype(torch.float64)
    yield
    torch.set_default_dtype(torch.float32)


# 1. negative term
def test_negative_term_closed_forms():
    assert float(snc_negative_loss(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))) == 0.0
    assert float(snc_negative_loss(torch.tensor([[0.5, 0.5], [0.5, 0.5]]))) == pytest.approx(0.25)


def test_negative_term_brute_force():
    g = torch.Generator().manual_seed(0)
    p = torch.softmax(torch.randn(7, 4, generator=g), 1)
    brute = np.mean([sum(float(p[i] @ p[j]) ** 2 for j in range(7) if j != i) for i in range(7)])
    assert float(snc_negative_loss(p)) == pytest.approx(brute, rel=1e-12)


# 2. schedules
def test_schedule_endpoints():
    assert alpha_schedule(0, 100) == 1.0
    assert alpha_schedule(100, 100) == pytest.approx(11.0**-5, rel=1e-12)
    assert alpha_schedule(100, 100) == pytest.approx(6.2092e-6, rel=1e-4)
    assert lambda_schedule(50, 100, 5.0) == pytest.approx(2.5)
    assert lambda_schedule(0, 100, 5.0) == 0.0
    assert lr_decay(0, 10) == 1.0 and lr_decay(10, 10) == pytest.approx(11**-0.75)


@pytest.mark.parametrize("t,T", [(-1, 10), (11, 10), (0, 0)])
def test_schedule_bad_iteration(t, T):
    with pytest.raises(ValueError, match="iteration|iterations"):
        alpha_schedule(t, T)


# 3. positive-term gradient
def test_positive_term_gradient_is_minus_neighbour_sum():
    g = torch.Generator().manual_seed(1)
    B, K, C = 5, 3, 4
    p = torch.softmax(torch.randn(B, C, generator=g), 1).requires_grad_(True)
    S = torch.softmax(torch.randn(B, K, C, generator=g), 2)
    snc_positive_loss(p, S).backward()
    torch.testing.assert_close(p.grad, -S.sum(1) / B)


def test_positive_term_matches_kl_div_with_probability_input():
    g = torch.Generator().manual_seed(2)
    p = torch.softmax(torch.randn(4, 3, generator=g), 1)
    S = torch.softmax(torch.randn(4, 2, 3, generator=g), 2)
    S[0, 0] = torch.tensor([1.0, 0.0, 0.0])  # a zero entry: 0 log 0 = 0
    ref = (
        torch.nn.functional.kl_div(p.unsqueeze(1).expand(-1, 2, -1), S, reduction="none")
        .sum(-1)
        .sum(1)
        .mean()
    )
    torch.testing.assert_close(snc_positive_loss(p, S), ref)


def test_positive_term_shape_error():
    with pytest.raises(ValueError, match="score_near"):
        snc_positive_loss(torch.rand(4, 3), torch.rand(4, 2, 5))


# 4. covariance update
def _stats(C, A):
    return torch.zeros(C), torch.zeros(C, A), torch.zeros(C, A, A)


def test_covariance_first_batch_matches_np_cov_and_absent_class_stays_zero():
    g = torch.Generator().manual_seed(3)
    C, A = 4, 3
    z = torch.randn(12, A, generator=g)
    y = torch.tensor([0, 0, 0, 1, 1, 1, 1, 2, 2, 0, 1, 2])  # class 3 absent
    amount, mean, cov = update_class_covariance(z, y, *_stats(C, A))
    for c in range(3):
        zc = z[y == c].numpy()
        np.testing.assert_allclose(cov[c].numpy(), np.cov(zc.T, bias=True), atol=1e-12)
        np.testing.assert_allclose(mean[c].numpy(), zc.mean(0), atol=1e-12)
    assert torch.all(cov[3] == 0) and torch.all(mean[3] == 0)
    assert torch.isfinite(cov).all() and torch.isfinite(mean).all()
    assert amount.tolist() == [4, 5, 3, 0]


def test_covariance_second_batch_is_pooled_biased_covariance():
    g = torch.Generator().manual_seed(4)
    C, A = 3, 4
    z1, z2 = torch.randn(10, A, generator=g), torch.randn(9, A, generator=g) + 0.5
    y1 = torch.tensor([0, 1, 2] * 3 + [0])
    y2 = torch.tensor([0, 1, 1, 1, 0, 0, 1, 1, 0])  # class 2 absent in batch 2
    state = update_class_covariance(z1, y1, *_stats(C, A))
    amount, mean, cov = update_class_covariance(z2, y2, *state)
    z, y = torch.cat([z1, z2]), torch.cat([y1, y2])
    for c in range(C):
        zc = z[y == c].numpy()
        np.testing.assert_allclose(cov[c].numpy(), np.cov(zc.T, bias=True), atol=1e-5)
        np.testing.assert_allclose(mean[c].numpy(), zc.mean(0), atol=1e-5)
    assert amount.tolist() == [float((y == c).sum()) for c in range(C)]


def test_covariance_keeps_gradient_through_batch_only():
    g = torch.Generator().manual_seed(5)
    z = torch.randn(6, 2, generator=g, requires_grad=True)
    old = torch.eye(2).expand(2, 2, 2).clone().requires_grad_(True)
    amount, mean, cov = update_class_covariance(
        z, torch.tensor([0, 0, 0, 1, 1, 1]), torch.ones(2), torch.zeros(2, 2), old
    )
    assert cov.requires_grad and not mean.requires_grad
    cov.sum().backward()
    assert z.grad is not None and z.grad.abs().sum() > 0
    assert old.grad is None  # the old covariance is detached


def test_covariance_shape_error():
    with pytest.raises(ValueError, match="does not compose"):
        update_class_covariance(torch.randn(4, 5), torch.zeros(4, dtype=torch.long), *_stats(3, 4))


# 5. IFA
def test_ifa_zero_covariance_closed_form():
    logits = torch.zeros(1, 2)
    w = torch.randn(2, 3)
    out = implicit_feature_augmentation_loss(logits, w, torch.zeros(2, 3, 3), lam=5.0)
    assert float(out[0]) == pytest.approx(4 * math.log(2))
    assert float(out[0]) == pytest.approx(2.7726, abs=1e-4)
    g = torch.Generator().manual_seed(6)
    logits = torch.randn(5, 4, generator=g)
    out = implicit_feature_augmentation_loss(
        logits, torch.randn(4, 3, generator=g), torch.zeros(4, 3, 3), lam=2.0
    )
    C = 4
    torch.testing.assert_close(out, 2 * (C * torch.logsumexp(logits, 1) - logits.sum(1)))


def _random_cov(C, A, g):
    M = torch.randn(C, A, A, generator=g)
    return M @ M.transpose(1, 2) / A


@pytest.mark.parametrize("C,A", [(3, 2), (10, 64), (12, 7)])
def test_ifa_vectorised_equals_loop(C, A):
    g = torch.Generator().manual_seed(C * 100 + A)
    logits = torch.randn(9, C, generator=g, requires_grad=True)
    w = torch.randn(C, A, generator=g, requires_grad=True)
    cov = _random_cov(C, A, g).requires_grad_(True)
    vec = implicit_feature_augmentation_loss(logits, w, cov, 1.7)
    loop = implicit_feature_augmentation_loss_loop(logits, w, cov, 1.7)
    torch.testing.assert_close(vec, loop, atol=1e-6, rtol=1e-6)
    gv = torch.autograd.grad(vec.sum(), (logits, w, cov))
    gl = torch.autograd.grad(loop.sum(), (logits, w, cov))
    for a, b in zip(gv, gl):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-6)


def test_ifa_sigma2_brute_force():
    g = torch.Generator().manual_seed(7)
    C, A = 3, 4
    w, cov = torch.randn(C, A, generator=g), _random_cov(C, A, g)
    pseudo = torch.tensor([2, 0])
    s2 = ifa_sigma2(w, cov, pseudo, 0.5)
    for n in range(2):
        for i in range(C):
            for c in range(C):
                d = w[c] - w[i]
                assert float(s2[n, i, c]) == pytest.approx(
                    0.5 * float(d @ cov[pseudo[n]] @ d), rel=1e-10, abs=1e-12
                )
    assert torch.all(torch.diagonal(s2, dim1=1, dim2=2) == 0)


def test_ifa_shape_error():
    with pytest.raises(ValueError, match="cov"):
        implicit_feature_augmentation_loss(torch.randn(2, 3), torch.randn(3, 4), torch.zeros(3, 5, 5), 1.0)


# 6. FD
def test_fd_identical_covariances_is_zero():
    cov = _random_cov(1, 3, torch.Generator().manual_seed(8)).expand(4, 3, 3)
    m = torch.softmax(torch.randn(4, 4), 1)
    assert float(feature_disentanglement_loss(cov, m)) == pytest.approx(0.0, abs=1e-12)


def test_fd_closed_form_minus_032():
    cov = torch.stack([torch.diag(torch.tensor([1.0, 0.0])), torch.diag(torch.tensor([0.0, 1.0]))])
    m = torch.tensor([[0.8, 0.2], [0.2, 0.8]])
    assert float(feature_disentanglement_loss(cov, m)) == pytest.approx(-0.32)


def test_class_mean_scores_empty_class_is_zero_not_nan():
    scores = torch.tensor([[0.7, 0.2, 0.1], [0.6, 0.3, 0.1], [0.1, 0.8, 0.1]])
    m = class_mean_scores(scores, scores.argmax(1), 3)
    torch.testing.assert_close(m[0], torch.tensor([0.65, 0.25, 0.1]))
    assert torch.all(m[2] == 0) and torch.isfinite(m).all()
    fd = feature_disentanglement_loss(_random_cov(3, 2, torch.Generator().manual_seed(9)), m)
    assert math.isfinite(float(fd))


def test_fd_zero_covariance_is_finite():
    assert math.isfinite(float(feature_disentanglement_loss(torch.zeros(3, 2, 2), torch.eye(3))))


def test_information_maximisation():
    # confident and balanced predictions: entropy 0, diversity log C
    p = torch.eye(4)
    assert float(information_maximization_loss(p)) == pytest.approx(-math.log(4), abs=1e-3)
    # uniform predictions: H(p) = H(mean p) = log C
    assert float(information_maximization_loss(torch.full((3, 4), 0.25), eps=0.0)) == pytest.approx(
        0.0, abs=1e-12
    )
