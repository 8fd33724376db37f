"""Bad input at the Python API: the MLP refuses inputs of the wrong width in one InputError line (not torch's
addmm message); pearson refuses a constant series instead of answering NaN; CIFAR-10 paths are InputFileErrors."""

import pytest
import torch

from iclr24.opposing_signals import cifar10_subset
from iclr24.opposing_signals import make_mlp
from iclr24.opposing_signals import pearson
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


def test_the_mlp_names_the_width_it_takes():
    model = make_mlp(d_in=64)
    with pytest.raises(InputError, match=r"\(N, 64\)") as e:
        model(torch.zeros(200, 10))
    assert "addmm" not in str(e.value) and "mat1" not in str(e.value)
    with pytest.raises(InputError, match="float64"):
        model(torch.zeros(3, 64, dtype=torch.float64))
    assert isinstance(model, torch.nn.Sequential) and model(torch.zeros(2, 64)).shape == (2, 10)


def test_pearson_of_a_constant_series_is_refused():
    with pytest.raises(InputError, match="constant"):
        pearson(torch.ones(8), torch.arange(8.0))
    with pytest.raises(InputError, match="NaN"):
        pearson(torch.tensor([1.0, float("nan"), 3.0]), torch.arange(3.0))


def test_cifar10_paths_are_input_file_errors(tmp_path):
    f = tmp_path / "batches"
    f.write_text("not a folder")
    with pytest.raises(InputFileError, match="is a file") as e:
        cifar10_subset(f)
    assert isinstance(e.value, NotADirectoryError)
    with pytest.raises(InputFileError):
        cifar10_subset(tmp_path / "nope")


def test_make_opposing_digits_refuses_an_alpha_that_overflows_float32():
    from iclr24.opposing_signals import make_opposing_digits

    with pytest.raises(InputError, match=r"alpha must be a number in \[0, 1e6\]"):
        make_opposing_digits(alpha=1e300)
