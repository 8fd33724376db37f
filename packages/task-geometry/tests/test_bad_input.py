"""Bad input at the Python API raises InputError naming the argument (issue 62): no hangs on huge sizes, no raw
torch/numpy errors."""

import numpy as np
import pytest
import torch

import iclr24.task_geometry as tg
from iclr24.paperkit.errors import InputError


def test_huge_sizes_are_refused_not_enumerated():
    with pytest.raises(InputError, match="P must be"):
        tg.balanced_dichotomies(2**40)
    with pytest.raises(InputError, match="too many to enumerate"):
        tg.balanced_dichotomies(64)
    with pytest.raises(InputError, match="n_bits"):
        tg.walsh_cube(40)
    with pytest.raises(InputError, match="k must be"):
        tg.random_kernel(8, k=2**40)
    with pytest.raises(InputError, match="epochs"):
        tg.TrainConfig(epochs=10**20)


def test_metric_settings_are_checked():
    rng = np.random.default_rng(0)
    cond = np.repeat(np.arange(4), 3)
    Z, y = rng.standard_normal((12, 5)), np.array([0, 0, 1, 1])
    with pytest.raises(InputError, match="C must be"):
        tg.ccgp(Z, cond, y, C=float("inf"))
    with pytest.raises(InputError, match="ridge must be"):
        tg.ccgp(Z, cond, y, classifier="ridge", ridge=float("nan"))
    with pytest.raises(InputError, match="seed"):
        tg.decodability(Z, cond, y, classifier="ridge", seed=-1)
    with pytest.raises(InputError, match="n_conditions"):
        tg.condition_means(Z, cond, n_conditions=2**40)
    with pytest.raises(InputError, match="dichotomies must be"):
        tg.decodability(Z, cond, [["a", "b", "c", "d"]], classifier="ridge")


def test_models_name_wrong_inputs():
    mlp = tg.MLP(8, 1, width=4)
    with pytest.raises(InputError, match="MLP input must be a torch.float32 tensor"):
        mlp(torch.zeros(3, 8, dtype=torch.float64))
    with pytest.raises(InputError, match=r"\[\.\.\., 8\]"):
        mlp(torch.zeros(3, 5))
    with pytest.raises(InputError, match="layer"):
        mlp.representation(np.zeros((3, 8)), layer=5)
    cnn = tg.SmallCNN(2, side=8, width=4)
    with pytest.raises(InputError, match="SmallCNN input"):
        cnn(torch.zeros(0, 1, 8, 8))
    with pytest.raises(InputError, match="not called by the model's forward pass"):
        tg.activations(_Unused(), torch.zeros(2, 3), "unused")
    with pytest.raises(InputError, match="cannot take inputs of shape"):
        tg.activations(torch.nn.Sequential(torch.nn.Linear(3, 3)), torch.zeros(2, 4), "0")


class _Unused(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.unused = torch.nn.Linear(3, 3)

    def forward(self, x):
        return x


def test_training_checks_its_data():
    cfg = tg.TrainConfig(width=4, epochs=1, batch_size=4)
    with pytest.raises(InputError, match="not empty"):
        tg.train_student((np.zeros((0, 3)), np.zeros((0, 1))), "tanh", cfg)
    with pytest.raises(InputError, match="a Task or a pair"):
        tg.train_student(object(), "tanh", cfg)
    with pytest.raises(InputError, match="config must be a TrainConfig"):
        tg.train_student(tg.walsh_cube(2, 1, dim=8, n_samples=8), "tanh", {"epochs": 1})
    with pytest.raises(InputError, match="unknown TrainConfig fields"):
        tg.train_student(tg.walsh_cube(2, 1, dim=8, n_samples=8), "tanh", cfg, epoch=1)
    with pytest.raises(InputError, match="labels must be"):
        tg.train_cnn(np.zeros((4, 64), np.float32), np.array([0.5, 1, 2, 3]), tg.digit_dichotomies(), side=8)
    with pytest.raises(InputError, match="rows must be"):
        tg.summarise([])
