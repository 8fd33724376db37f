import numpy as np
import pytest

from iclr24.rdmc import get_target
from iclr24.rdmc import load_gaussian_mixture
from iclr24.rdmc import rdmc_sample
from iclr24.rdmc import ula
from iclr24.rdmc.cli import main


@pytest.mark.parametrize(
    "kw", [{"m": 0}, {"n_chains": 0, "estimator": "ula"}, {"inner_steps": 0}, {"m": 2.5}]
)
def test_rdmc_sample_rejects_empty_inner_loops(gmm, kw):
    with pytest.raises(ValueError, match="must be an int >= 1"):
        rdmc_sample(gmm, 5, K=2, **kw)


def test_rdmc_sample_rejects_unknown_schedule_and_grid(gmm):
    with pytest.raises(ValueError, match="schedule must be one of"):
        rdmc_sample(gmm, 5, K=2, schedule="linear")
    with pytest.raises(ValueError, match="grid must be one of"):
        rdmc_sample(gmm, 5, K=2, grid="cosine")


def test_ula_with_zero_steps_is_an_error(gmm):
    with pytest.raises(ValueError, match="steps must be an int >= 1"):
        ula(gmm, 5, steps=0)


def _truncated(tmp_path):
    good = tmp_path / "mix.npz"
    np.savez(good, means=np.zeros((2, 2)), covs=np.ones(2), weights=np.array([0.5, 0.5]))
    bad = tmp_path / "cut.npz"
    bad.write_bytes(good.read_bytes()[:100])
    return bad


def test_truncated_mixture_file_is_a_clear_error(tmp_path):
    bad = _truncated(tmp_path)
    for load in (load_gaussian_mixture, get_target):
        with pytest.raises(ValueError, match="not a readable .npz|damaged"):
            load(bad)
    foreign = tmp_path / "other.npz"
    np.savez(foreign, mu=np.zeros(2))
    with pytest.raises(ValueError, match="lacks the array"):
        load_gaussian_mixture(foreign)


def test_cli_truncated_target_is_one_line_exit_2(tmp_path, capsys):
    bad = _truncated(tmp_path)
    rc = main(["sample", "--target", str(bad), "--n", "5", "--out", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert rc == 2 and len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (tmp_path / "o" / "samples.npz").exists()


def test_huge_counts_and_horizons_are_refused_up_front(gmm):
    from iclr24.paperkit.errors import InputError
    from iclr24.rdmc import reverse_time_grid
    from iclr24.rdmc import stream_seed
    from iclr24.rdmc import ula

    with pytest.raises(InputError, match="steps"):
        ula(gmm, 4, 10**20)
    with pytest.raises(InputError, match="T"):
        reverse_time_grid(1e300, 10)
    with pytest.raises(InputError, match="method"):
        stream_seed(0, "rdmc")


def test_mode_tv_refuses_nan_weights(gmm):
    import torch

    from iclr24.paperkit.errors import InputError
    from iclr24.rdmc import mode_tv

    w = gmm.weights.clone()
    w[0] = float("nan")
    with pytest.raises(InputError, match="finite"):
        mode_tv(torch.randn(8, 2, dtype=torch.float64), gmm.means, w)
