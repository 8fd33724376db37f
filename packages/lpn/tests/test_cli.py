import numpy as np
import pytest

from iclr24.lpn.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_out_at_a_file_refused
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_modes_device_and_out_only_where_they_mean_something():
    check_usage_errors(
        main,
        ["denoise", "--smoke"],
        ["prior", "--out", "x"],
        ["solve", "--device", "cpu"],
        ["reproduce", "--device", "cpu"],
    )


def test_train_out_at_a_file_is_refused(tmp_path):
    check_out_at_a_file_refused(main, ["train", "--smoke"], tmp_path)


def test_help_exits_zero():
    check_help_lists(main, ("reproduce", "train", "denoise", "prior", "solve", "bench"))


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_train_denoise_prior_solve_end_to_end(tmp_path, capsys, train_argv):
    run = tmp_path / "run"
    assert main(train_argv(run)) == 0
    assert (run / "checkpoint.pt").is_file() and (run / "model_config.json").is_file()
    # resuming a finished run does nothing more
    assert main(train_argv(run)) == 0
    assert "steps 6->6" in capsys.readouterr().out
    from iclr24.lpn import digits_split

    _, te = digits_split()
    np.save(tmp_path / "digit.npy", te[0].reshape(8, 8).numpy())
    on_digit = ["--checkpoint", str(run), "--input", str(tmp_path / "digit.npy")]
    assert main(["denoise", *on_digit, "--output", str(tmp_path / "den.png"), "--add-noise", "0.1"]) == 0
    assert (tmp_path / "den.png").is_file()
    assert main(["prior", *on_digit]) == 0
    assert "R=" in capsys.readouterr().out
    inpaint = ["--output", str(tmp_path / "rec.npy"), "--operator", "inpaint", "--iters", "5"]
    assert main(["solve", *on_digit, *inpaint]) == 0
    rec = np.load(tmp_path / "rec.npy")
    assert rec.shape == (8, 8) and np.isfinite(rec).all()
    blur = [
        "--output",
        str(tmp_path / "rec2.png"),
        "--operator",
        "blur",
        "--solver",
        "admm",
        "--iters",
        "3",
    ]
    assert main(["solve", *on_digit, *blur]) == 0


def test_user_errors_exit_2_with_one_line(tmp_path, capsys, train_argv):
    run = tmp_path / "run"
    main(train_argv(run, hidden=8, steps=2, pretrain_steps=1, batch_size=4))
    capsys.readouterr()
    np.save(tmp_path / "big.npy", np.zeros((10, 10), np.float32))
    assert (
        main(
            [
                "denoise",
                "--checkpoint",
                str(run),
                "--input",
                str(tmp_path / "big.npy"),
                "--output",
                str(tmp_path / "o.png"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "64 values" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert (
        main(
            [
                "denoise",
                "--checkpoint",
                str(tmp_path / "none"),
                "--input",
                str(tmp_path / "big.npy"),
                "--output",
                str(tmp_path / "o.png"),
            ]
        )
        == 2
    )
    np.save(tmp_path / "range.npy", np.full((8, 8), 3.0, np.float32))
    assert main(["prior", "--checkpoint", str(run), "--input", str(tmp_path / "range.npy")]) == 2
    assert "[0, 1]" in capsys.readouterr().err
    assert main(["train", "--arch", "conv28", "--data", "digits", "--out", str(tmp_path / "x")]) == 2


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "speedup" in out and "invert (cvx_cg)" in out
    assert (tmp_path / "bench.json").is_file() and (tmp_path / "bench.md").is_file()


def test_train_conv28_on_real_mnist(tmp_path, capsys):
    assert main(["train", "--arch", "mlp", "--data", "mnist", "--out", str(tmp_path / "a"), "--quiet"]) == 2
    assert "--data mnist (28x28 images) needs --arch conv28" in capsys.readouterr().err
    from iclr24.paperkit.data.folder import is_present

    if not is_present("mnist"):
        pytest.skip("MNIST is not in the data folder (iclr24 data get mnist)")
    run = tmp_path / "mnist"
    argv = ["train", "--arch", "conv28", "--data", "mnist", "--hidden", "4", "--steps", "2", "--pretrain-steps",
            "1", "--batch-size", "4", "--out", str(run), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    assert (run / "checkpoint.pt").is_file() and '"conv28"' in (run / "model_config.json").read_text()


def test_train_the_conv_denoiser_baseline_as_a_model_folder(tmp_path, capsys):
    """`lpn train --arch conv-denoiser` trains the unconstrained baseline the MNIST claims compare against; it is a
    model folder like an LPN's, with the losses of every step up to 20 in its provenance."""
    import json

    from iclr24.lpn.experiments import ConvDenoiser

    out = tmp_path / "base"
    argv = ["train", "--arch", "conv-denoiser", "--data", "digits", "--loss", "l2", "--lr", "1e-3", "--steps", "3",
            "--batch-size", "8", "--hidden", "4", "--out", str(out), "--quiet"]  # fmt: skip
    assert main(argv) == 0
    model = ConvDenoiser.from_pretrained(out / "model")
    assert model.pretrained_config() == {"in_channels": 1, "hidden": 4, "depth": 5, "beta": 10.0}
    prov = json.loads((out / "model" / "provenance.json").read_text())
    assert list(prov["losses"]) == ["1", "2", "3"] and prov["command"].startswith(
        "lpn train --arch conv-denoiser"
    )
    assert prov["train_config"]["checkpoint_dir"] is None  # the --out of the command; no machine path twice
    assert main([*argv[:-3], "--alpha", "0.1", "--out", str(tmp_path / "b2"), "--quiet"]) == 2
    assert "--alpha does not apply to --arch conv-denoiser" in capsys.readouterr().err


def test_cli_defaults_are_the_configs():
    from iclr24.lpn.cli import app
    from iclr24.lpn.pnp import inpainting_operator
    from iclr24.lpn.pnp import pnp_admm
    from iclr24.lpn.pnp import pnp_pgd
    from iclr24.lpn.prior import evaluate_prior
    from iclr24.lpn.train import TrainConfig

    # --iters: PGD's num_iter, the default --solver's
    check_app_defaults(app, {"train": TrainConfig, "prior": evaluate_prior,
                             "solve": (pnp_pgd, pnp_admm, inpainting_operator)}, dests={"iters": "num_iter"})  # fmt: skip
