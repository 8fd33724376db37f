"""paperkit.data.user (a user's Dataset/DataLoader gives the tensor path's tensors) and paperkit.resume (an
interrupted and resumed loop equals the uninterrupted one)."""

from __future__ import annotations

import random

import numpy as np
import pytest
import torch
from torch.utils.data import DataLoader
from torch.utils.data import Dataset
from torch.utils.data import IterableDataset
from torch.utils.data import TensorDataset

from iclr24.paperkit.data.user import as_tensors
from iclr24.paperkit.data.user import is_user_data
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.resume import global_rng_state
from iclr24.paperkit.resume import load_train_state
from iclr24.paperkit.resume import save_train_state
from iclr24.paperkit.resume import set_global_rng_state

X = torch.arange(24, dtype=torch.float32).reshape(12, 2)
Y = torch.arange(12) % 3


class DictSet(Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        return {"image": X[i].numpy(), "label": int(Y[i])}


class Stream(IterableDataset):
    def __iter__(self):
        return iter(zip(X, Y))


@pytest.mark.parametrize(
    "data",
    [
        (X, Y),
        TensorDataset(X, Y),
        DataLoader(TensorDataset(X, Y), batch_size=5),
        DataLoader(TensorDataset(X, Y), batch_size=None),
        Stream(),
    ],
    ids=["tensors", "dataset", "loader", "unbatched-loader", "iterable"],
)
def test_every_kind_of_data_gives_the_tensor_paths_tensors(data):
    x, y = as_tensors(data, fields=2)
    assert torch.equal(x, X) and torch.equal(y, Y)


def test_reading_a_loader_leaves_the_global_rng_as_it_was():
    """A DataLoader draws its base seed from the global RNG; as_tensors reads it in a forked RNG, so a trainer
    that samples from the global RNG after reading gives the tensor path's result."""
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    torch.manual_seed(0)
    state = torch.get_rng_state()
    for loader in (
        DataLoader(TensorDataset(X, Y), batch_size=3),
        DataLoader(TensorDataset(X, Y), shuffle=True),
    ):
        as_tensors(loader, fields=2)
        assert torch.equal(torch.get_rng_state(), state)


def test_item_transforms_each_item_or_batch():
    from torch.utils.data import DataLoader

    pairs = [((X[i], X[i] + 1), Y[i]) for i in range(len(X))]  # ((inputs...), label) items
    for data in (pairs_ds := _ListDataset(pairs), DataLoader(pairs_ds, batch_size=4)):
        a, b = as_tensors(data, fields=2, item=lambda it: it[0])
        assert torch.equal(a, X) and torch.equal(b, X + 1)


class _ListDataset(torch.utils.data.Dataset):
    def __init__(self, items):
        self.items = items

    def __len__(self):
        return len(self.items)

    def __getitem__(self, i):
        return self.items[i]


def test_dict_items_in_key_order_and_a_lone_tensor():
    y, x = as_tensors(DictSet(), keys=["label", "image"])
    assert torch.equal(x, X) and torch.equal(y, Y)
    (only,) = as_tensors(X)
    assert only is X  # no copy on the tensor path
    assert is_user_data(TensorDataset(X)) and not is_user_data(X)


@pytest.mark.parametrize(
    ("data", "kwargs", "words"),
    [
        (None, {}, "got None"),
        ("train.csv", {}, "got a str"),
        (TensorDataset(X), {"fields": 2}, "expected 2"),
        ((X, Y[:5]), {}, "different lengths"),
        (TensorDataset(X[:0], Y[:0]), {}, "empty"),
        (DictSet(), {"keys": ["image", "mask"]}, "missing ['mask']"),
        ([X, "y"], {}, "is a str"),
    ],
)
def test_bad_data_is_one_input_error(data, kwargs, words):
    with pytest.raises(InputError, match=None) as e:
        as_tensors(data, what="train data", **kwargs)
    assert words in str(e.value)


def test_a_failing_user_dataset_is_named_not_raw():
    class Broken(Dataset):
        def __len__(self):
            return 3

        def __getitem__(self, i):
            raise KeyError(i)

    with pytest.raises(InputError, match="reading the user's data failed: KeyError"):
        as_tensors(Broken())


def _loop(path, steps, stop=None, resume=False):
    torch.manual_seed(0)
    np.random.seed(0)
    random.seed(0)
    model = torch.nn.Linear(3, 1)
    opt = torch.optim.Adam(model.parameters(), lr=0.05)
    sched = torch.optim.lr_scheduler.StepLR(opt, 2, 0.5)
    g = torch.Generator().manual_seed(1)
    start = 0
    if resume:
        start = load_train_state(
            path, model=model, optimizer=opt, scheduler=sched, generators={"g": g}, expect={"steps": steps}
        )
    for step in range(start, steps if stop is None else stop):
        x = torch.randn(8, 3, generator=g) + torch.randn(8, 3) + float(np.random.rand()) + random.random()
        loss = model(x).pow(2).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        save_train_state(
            path,
            step=step + 1,
            model=model,
            optimizer=opt,
            scheduler=sched,
            generators={"g": g},
            meta={"steps": steps},
        )
    return model.weight.detach().clone()


def test_interrupted_and_resumed_equals_uninterrupted(tmp_path):
    whole = _loop(tmp_path / "a.pt", 7)
    _loop(tmp_path / "b.pt", 7, stop=3)
    resumed = _loop(tmp_path / "b.pt", 7, resume=True)
    assert torch.equal(whole, resumed)


def test_resume_refuses_other_settings_and_foreign_files(tmp_path):
    _loop(tmp_path / "s.pt", 4, stop=2)
    with pytest.raises(InputError, match="steps=4, this run asks for steps=9"):
        _loop(tmp_path / "s.pt", 9, resume=True)
    torch.save({"weights": torch.zeros(1)}, tmp_path / "other.pt")
    with pytest.raises(InputFileError):
        load_train_state(tmp_path / "other.pt", model=torch.nn.Linear(3, 1))
    with pytest.raises(InputFileError, match="do not fit"):
        load_train_state(tmp_path / "s.pt", model=torch.nn.Linear(4, 1))
    with pytest.raises(InputError):
        save_train_state(tmp_path / "x.pt", step=-1, model=torch.nn.Linear(3, 1))


def test_global_rng_state_round_trips_torch_numpy_and_random(tmp_path):
    """A state taken, then drawn past, then set back gives the same draws again, also after a weights_only
    save and load (what a per-rank trainer does with it)."""
    torch.manual_seed(3)
    np.random.seed(3)
    random.seed(3)
    state = global_rng_state()

    def draws():
        return torch.rand(4).tolist(), np.random.rand(4).tolist(), [random.random() for _ in range(4)]

    first = draws()
    assert draws() != first  # the generators moved on
    set_global_rng_state(state)
    assert draws() == first
    torch.save(state, tmp_path / "rng.pt")
    set_global_rng_state(torch.load(tmp_path / "rng.pt", weights_only=True))
    assert draws() == first
