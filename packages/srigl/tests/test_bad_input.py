"""Bad input at the Python API: load_npz on a text file or a folder is one InputFileError naming it (never numpy's
allow_pickle message, never a raw IsADirectoryError); the update rules refuse mismatched tensors."""

import numpy as np
import pytest
import torch

from iclr24.paperkit.data.readers import load_npz as paperkit_load_npz
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.srigl import NonFiniteError
from iclr24.srigl import load_npz
from iclr24.srigl import rigl_update


def test_load_npz_on_a_text_file_says_so_without_numpy_advice(tmp_path):
    p = tmp_path / "data.npz"
    p.write_text("x,y\n1,2\n")
    for load in (load_npz, paperkit_load_npz):
        with pytest.raises(InputFileError) as e:
            load(p)
        assert str(p) in str(e.value) and "allow_pickle" not in str(e.value) and "pickle" not in str(e.value)


def test_load_npz_on_a_folder_is_an_input_file_error(tmp_path):
    d = tmp_path / "data.npz"
    d.mkdir()
    for load in (load_npz, paperkit_load_npz):
        with pytest.raises(InputFileError, match="folder"):
            load(d)


def test_load_npz_of_object_arrays_is_refused(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, x=np.array([{"a": 1}] * 4, dtype=object), y=np.arange(4))
    with pytest.raises(InputFileError, match="Python objects") as e:
        load_npz(p)
    assert "allow_pickle" not in str(e.value)


def test_rigl_update_refuses_a_mask_of_another_shape():
    w = torch.randn(4, 6)
    with pytest.raises(InputError, match="mask"):
        rigl_update(w, w, torch.ones(4, 5, dtype=torch.bool), 0.3)


def test_non_finite_error_is_an_input_error_and_stays_a_value_error():
    assert issubclass(NonFiniteError, InputError) and issubclass(NonFiniteError, ValueError)
    assert issubclass(NonFiniteError, FloatingPointError)
