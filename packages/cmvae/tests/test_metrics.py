import numpy as np
import pytest
import torch

from iclr24.cmvae.metrics import cluster_accuracy
from iclr24.cmvae.metrics import clustering_scores
from iclr24.cmvae.metrics import conditional_coherence
from iclr24.cmvae.metrics import unconditional_coherence
from iclr24.cmvae.model import majority_vote


def test_permutation_invariance():  # acceptance check 7
    s = clustering_scores([0, 0, 1, 1], [1, 1, 0, 0])
    assert s == pytest.approx({"acc": 1.0, "nmi": 1.0, "ari": 1.0})


def test_rectangular_hungarian_brute_force():
    from itertools import permutations

    rng = np.random.default_rng(0)
    y, c = rng.integers(0, 3, 40), rng.integers(0, 5, 40)  # more clusters than classes
    best = 0
    for perm in permutations(range(5), 3):  # injective maps class -> cluster
        best = max(best, sum(int(((y == k) & (c == perm[k])).sum()) for k in range(3)))
    assert cluster_accuracy(y, c) == pytest.approx(best / 40)
    assert cluster_accuracy(c, y) == pytest.approx(best / 40)  # and fewer clusters than classes


def test_metric_bad_input():
    with pytest.raises(ValueError, match="differ in length"):
        cluster_accuracy([0, 1], [0])
    with pytest.raises(ValueError, match="1-D"):
        cluster_accuracy(np.zeros((2, 2)), np.zeros((2, 2)))
    with pytest.raises(ValueError, match="empty"):
        cluster_accuracy([], [])


def test_majority_vote_smallest_index_wins():  # acceptance check 8
    votes = torch.tensor([[3, 3, 5], [2, 5, 7], [7, 2, 5]])
    assert majority_vote(votes, 8).tolist() == [3, 2, 2]
    valid = torch.tensor([[False, False, True], [True, True, True], [True, True, True]])
    assert majority_vote(votes, 8, valid).tolist()[0] == 5  # missing modalities do not vote


def test_coherence():
    a = np.array([1, 2, 3, 4])
    assert unconditional_coherence([a, a, np.array([1, 2, 0, 4])]) == 0.75
    assert conditional_coherence([a, np.array([1, 0, 3, 4])], a) == 7 / 8
