"""Bad input at the Python API and the CLI: a huge epoch count, bad metric input and bad .mat files are one
InputError line, never OverflowError, NaN or scipy's own errors."""

import numpy as np
import pytest

from iclr24.aemc_ne import AEMCNE
from iclr24.aemc_ne import FitConfig
from iclr24.aemc_ne import load_monti
from iclr24.aemc_ne import make_synthetic
from iclr24.aemc_ne import rmse
from iclr24.aemc_ne.cli import main
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


def test_a_huge_epoch_count_is_refused_not_an_overflow(tmp_path, capsys):
    with pytest.raises(InputError, match="epochs"):
        FitConfig(epochs=99999999999999999999)
    train = make_synthetic(n_rows=8, n_cols=10, rank=2).train
    with pytest.raises(InputError, match="epochs"):
        AEMCNE(main_hidden=(4,)).fit(train, epochs=99999999999999999999, quiet=True)
    rc = main(["train", "--epochs", "99999999999999999999", "--out", str(tmp_path / "o"), "--quiet"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and "epochs" in err[0] and "Overflow" not in err[0]


def test_rmse_refuses_nan_instead_of_answering_nan():
    with pytest.raises(InputError, match="NaN"):
        rmse(np.array([1.0, np.nan]), np.ones(2))


def test_a_corrupt_mat_file_names_the_file(tmp_path):
    for name, data in (("empty.mat", b"\x00" * 10), ("text.mat", b"MATLAB 5.0 MAT-file but no body")):
        p = tmp_path / name
        p.write_bytes(data)
        with pytest.raises(InputFileError) as e:
            load_monti(p)
        assert str(p) in str(e.value)
