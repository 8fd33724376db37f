"""Bad input at the boundaries: each gives a clear error (CLI: one line, exit 2); loops show progress bars."""

import json

import numpy as np
import pytest
import torch
from PIL import Image

import iclr24.paperkit
from iclr24.lpn import MLPLPN
from iclr24.lpn import load_image
from iclr24.lpn import load_model
from iclr24.lpn import pnp as pnp_module
from iclr24.lpn import pnp_admm
from iclr24.lpn import pnp_pgd
from iclr24.lpn import psnr
from iclr24.lpn.cli import main
from iclr24.lpn.prior import evaluate_prior
from iclr24.lpn.train import save_checkpoint


@pytest.fixture
def run_dir(tmp_path):
    torch.manual_seed(0)
    m = MLPLPN(in_dim=64, hidden=8, layers=2, beta=10.0, alpha=0.01)
    save_checkpoint(tmp_path / "run" / "checkpoint.pt", m, None, 0)
    return tmp_path / "run"


def _png(path, size=8):
    Image.fromarray((np.random.default_rng(0).random((size, size)) * 255).astype(np.uint8)).save(path)
    return path


def _one_line_error(capsys, *needles):
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    for n in needles:
        assert n in err, err
    return err


def test_truncated_png_is_a_clear_error(tmp_path, run_dir, capsys):
    good = _png(tmp_path / "good.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(good[: len(good) // 2])
    with pytest.raises(ValueError, match="truncated or not a valid image"):
        load_image(tmp_path / "cut.png")
    (tmp_path / "junk.png").write_bytes(b"not a png at all")
    with pytest.raises(ValueError, match="cannot decode"):
        load_image(tmp_path / "junk.png")
    args = ["denoise", "--checkpoint", str(run_dir), "--input", str(tmp_path / "cut.png")]
    assert main([*args, "--output", str(tmp_path / "o.png")]) == 2
    _one_line_error(capsys, "cut.png", "truncated")
    assert not (tmp_path / "o.png").exists()


def test_corrupt_or_edited_model_config_is_refused(run_dir, tmp_path, capsys):
    side = run_dir / "model_config.json"
    good = json.loads(side.read_text())
    assert load_model(run_dir).config() == good
    side.write_text('{"arch": "mlp", "in_dim": 6')  # cut short
    with pytest.raises(ValueError, match="not valid JSON"):
        load_model(run_dir)
    _png(tmp_path / "a.png")
    args = ["denoise", "--checkpoint", str(run_dir), "--input", str(tmp_path / "a.png")]
    assert main([*args, "--output", str(tmp_path / "o.png")]) == 2
    _one_line_error(capsys, "model_config.json", "not valid JSON")
    side.write_text(json.dumps({**good, "hidden": 16}))  # valid JSON that contradicts the weights
    with pytest.raises(ValueError, match="disagrees .* hidden"):
        load_model(run_dir)
    side.write_text("[1, 2]")
    with pytest.raises(ValueError, match="not a model config"):
        load_model(run_dir)
    side.unlink()  # the checkpoint's own config is enough
    assert load_model(run_dir).config() == good


def test_nan_array_says_nan(tmp_path):
    a = np.full((8, 8), 0.5, np.float32)
    a[2, 3] = np.nan
    np.save(tmp_path / "nan.npy", a)
    with pytest.raises(ValueError, match="1 NaN and 0 inf") as e:
        load_image(tmp_path / "nan.npy")
    assert "range" not in str(e.value)
    np.save(tmp_path / "big.npy", np.full((8, 8), 2.0, np.float32))
    with pytest.raises(ValueError, match=r"in \[0, 1\], got range \[2, 2\]"):
        load_image(tmp_path / "big.npy")


def test_psnr_shape_mismatch_is_a_value_error():
    x = torch.rand(4, 64)
    with pytest.raises(ValueError, match=r"shape \(4, 64\) but ref has shape \(4, 32\)"):
        psnr(x, x[:, :32])
    with pytest.raises(ValueError, match="must match"):
        psnr(x, x[:1])  # no silent broadcasting
    with pytest.raises(ValueError, match="batched"):
        psnr(x[0], x[0])
    assert psnr(x, x.clone()).shape == (4,)


def test_pnp_and_prior_loops_show_progress(monkeypatch):
    seen = []
    real = iclr24.paperkit.progress

    def fake(iterable=None, *, total=None, desc=None, disable=None, **kw):
        seen.append((desc, disable))
        return real(iterable, total=total, desc=desc, disable=True, **kw)

    monkeypatch.setattr(pnp_module, "progress", fake)
    y = torch.rand(2, 4)
    pnp_pgd(y, lambda v: v, lambda v: v, lambda v: 0.5 * v, num_iter=3, show_progress=True)
    pnp_admm(y, lambda v: v, lambda v: v, lambda v: 0.5 * v, num_iter=2, show_progress=True)
    pnp_pgd(y, lambda v: v, lambda v: v, lambda v: 0.5 * v, num_iter=3)
    assert seen == [("PnP-PGD", None), ("PnP-ADMM", None), ("PnP-PGD", True)]
    seen.clear()
    monkeypatch.setattr(iclr24.paperkit, "progress", fake)
    monkeypatch.setattr(pnp_module, "progress", real)
    torch.manual_seed(0)
    m = MLPLPN(in_dim=4, hidden=8, layers=2, beta=10.0, alpha=0.1).double()
    evaluate_prior(m, torch.rand(2, 4, dtype=torch.float64), show_progress=True)
    assert seen and seen[0][0].startswith("invert f (CG") and seen[0][1] is None


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_psnr_and_ssim_refuse_non_finite_input_instead_of_answering_nan(bad):
    from iclr24.lpn import ssim
    from iclr24.paperkit.errors import InputError

    x = torch.rand(2, 1, 8, 8)
    y = x.clone()
    y[0, 0, 3, 3] = bad
    for metric in (psnr, ssim):
        with pytest.raises(InputError, match="NaN or inf"):
            metric(y, x)
        with pytest.raises(InputError, match="NaN or inf"):
            metric(x, y)
    assert torch.isfinite(psnr(x * 0.9, x)).all()


def test_non_finite_loss_error_is_an_input_error_and_still_a_runtime_error():
    from iclr24.lpn import NonFiniteLossError
    from iclr24.paperkit.errors import InputError

    assert issubclass(NonFiniteLossError, InputError) and issubclass(NonFiniteLossError, RuntimeError)
