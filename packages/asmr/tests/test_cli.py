import json

import numpy as np
import pytest

from iclr24.asmr import load_image
from iclr24.asmr import save_signal
from iclr24.asmr.cli import main
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_usage_errors


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_help_exits_zero():
    check_help_lists(main, ("fit", "render", "macs", "reproduce", "bench"))


def test_bad_argument_exits_2():
    check_usage_errors(main, ["reproduce", "--seed", "-1"])


def test_flags_only_where_they_mean_something(tmp_path):
    # bench has --device for --paper-scale only: the benchmarks run on the CPU (a usage error, no --out left)
    assert main(["bench", "--smoke", "--device", "mps", "--out", str(tmp_path / "b")]) == 2
    assert not (tmp_path / "b").exists()
    check_usage_errors(
        main,
        ["fit", "x.png", "--smoke"],
        ["fit", "x.png", "--out", "somewhere"],
        ["render", "m.pt", "o.png", "--quick"],
        ["macs", "--bases", "2,2", "--device", "cpu"],
        ["render", "m.pt", "o.png", "--seed", "1"],
    )


def test_bench_smoke(tmp_path, capsys):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    assert "speedup" in capsys.readouterr().out
    rec = json.loads((tmp_path / "bench.json").read_text())
    assert rec["mode"] == "smoke" and rec["results"] and (tmp_path / "bench.md").is_file()


def test_macs_command(capsys):
    assert main(["macs", "--bases", "4,4,4,8;4,4,4,8", "--hidden", "256", "--mlp-layers", "7", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["asmr_macs_per_point"] == 1353.75 and rec["mlp_macs_per_point"] == 329_985
    assert main(["macs", "--size", "512x768", "--levels", "4", "--dim-out", "3", "--json"]) == 0
    rec = json.loads(capsys.readouterr().out)
    assert rec["bases"] == [[4, 4, 4, 8], [4, 4, 6, 8]] and abs(rec["asmr_macs_per_point"] - 1846.18) < 0.01


def test_fit_then_render_end_to_end(tmp_path, capsys):
    rng = np.random.default_rng(0)
    save_signal(rng.random((8, 12, 3)), tmp_path / "in.png", "image")
    ckpt = tmp_path / "model.pt"
    rc = main(
        [
            "fit",
            str(tmp_path / "in.png"),
            "--bases",
            "2,2,2;2,2,3",
            "--hidden",
            "8",
            "--steps",
            "5",
            "--checkpoint",
            str(ckpt),
            "--quiet",
        ]
    )
    assert rc == 0 and ckpt.is_file()
    assert "PSNR" in capsys.readouterr().out
    assert main(["render", str(ckpt), str(tmp_path / "out.png")]) == 0
    assert load_image(tmp_path / "out.png").shape == (8, 12)
    # audio through the same API, bases suggested from the length
    t = np.linspace(0, 1, 60)
    save_signal(np.sin(20 * t)[:, None] * 0.5, tmp_path / "a.wav", "audio", 8000)
    assert (
        main(
            [
                "fit",
                str(tmp_path / "a.wav"),
                "--levels",
                "3",
                "--hidden",
                "8",
                "--steps",
                "3",
                "--checkpoint",
                str(tmp_path / "a.pt"),
                "--quiet",
            ]
        )
        == 0
    )
    assert main(["render", str(tmp_path / "a.pt"), str(tmp_path / "a_out.wav")]) == 0
    assert (tmp_path / "a_out.wav").is_file()


def test_user_errors_exit_2(tmp_path, capsys):
    save_signal(np.zeros((8, 12, 1)), tmp_path / "in.png", "image")
    assert (
        main(
            [
                "fit",
                str(tmp_path / "in.png"),
                "--bases",
                "2,2,2;2,2,2",
                "--steps",
                "1",
                "--checkpoint",
                str(tmp_path / "m.pt"),
            ]
        )
        == 2
    )
    err = capsys.readouterr().err
    assert "axis 1: the bases [2, 2, 2] multiply to 8" in err and "Traceback" not in err
    assert main(["fit", str(tmp_path / "nope.png"), "--checkpoint", str(tmp_path / "m.pt")]) == 2
    assert main(["render", str(tmp_path / "nope.pt"), str(tmp_path / "o.png")]) == 2
    assert main(["macs"]) == 2


def test_readme_quickstart_runs(tmp_path):
    from pathlib import Path

    from iclr24.paperkit.runner.testing import readme_blocks
    from iclr24.paperkit.runner.testing import run_readme_blocks

    readme = Path(__file__).parents[1] / "README.md"
    assert "steps=600, lr=1e-3" in readme_blocks(readme)[0]  # the previous quick budget and the swept lr
    res = run_readme_blocks(
        readme,
        cwd=tmp_path,
        replace={"steps=600": "steps=3"},  # the quickstart alone in a fresh interpreter, 3 steps
        values={0: {"y": "list(y.shape)", "diff": "abs(float(y[5 * 128 + 7, 0] - y_ref[0, 0]))"},
                1: {"same": "bool(torch.equal(back.render(), y))"}},
    )  # fmt: skip
    assert res["y"] == [128 * 128, 1] and res["diff"] < 1e-4
    assert res["same"] and (tmp_path / "cameraman-asmr" / "config.json").is_file()


def test_video_npy_fit_and_render(tmp_path, capsys):
    vid = np.random.default_rng(1).random((4, 8, 8, 3)).astype(np.float32)
    np.save(tmp_path / "clip.npy", vid)
    assert (
        main(
            [
                "fit",
                str(tmp_path / "clip.npy"),
                "--bases",
                "2,2;2,4;4,2",
                "--hidden",
                "8",
                "--steps",
                "3",
                "--checkpoint",
                str(tmp_path / "v.pt"),
                "--quiet",
            ]
        )
        == 0
    )
    assert "video (4, 8, 8)x3" in capsys.readouterr().out
    assert main(["render", str(tmp_path / "v.pt"), str(tmp_path / "v.png")]) == 2  # a video renders to .npy
    assert main(["render", str(tmp_path / "v.pt"), str(tmp_path / "v_out.npy")]) == 0
    assert np.load(tmp_path / "v_out.npy").shape == (4, 8, 8, 3)


def _one_error_line(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "Traceback" not in err[0], err
    return err[0]


def test_bad_input_files_are_one_line_exit_2(tmp_path, capsys):
    ckpt = tmp_path / "m.pt"
    np.save(tmp_path / "big.npy", np.linspace(0, 300, 64).reshape(8, 8))
    assert main(["fit", str(tmp_path / "big.npy"), "--steps", "1", "--checkpoint", str(ckpt)]) == 2
    assert "values in [0, 1]" in _one_error_line(capsys) and not ckpt.exists()
    save_signal(np.random.default_rng(0).random((16, 16, 3)), tmp_path / "ok.png", "image")
    data = (tmp_path / "ok.png").read_bytes()
    (tmp_path / "cut.png").write_bytes(data[: len(data) // 2])
    assert main(["fit", str(tmp_path / "cut.png"), "--steps", "1", "--checkpoint", str(ckpt)]) == 2
    assert "cut.png: cannot read the image" in _one_error_line(capsys) and not ckpt.exists()
    (tmp_path / "dir.pt").mkdir()
    assert (
        main(["fit", str(tmp_path / "ok.png"), "--steps", "1", "--checkpoint", str(tmp_path / "dir.pt")]) == 2
    )
    assert "is a folder" in _one_error_line(capsys)
    with pytest.raises(SystemExit) as e:  # an out-of-range hyper-parameter, refused by the parser
        main(["fit", str(tmp_path / "ok.png"), "--steps", "0"])
    assert e.value.code == 2 and "positive integer" in _one_error_line(capsys)
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    assert main(["render", str(tmp_path / "junk.pt"), str(tmp_path / "o.png")]) == 2
    assert "not a checkpoint" in _one_error_line(capsys)


def test_fit_with_the_grid_sampler(tmp_path, capsys):
    save_signal(np.random.default_rng(1).random((32, 32, 3)), tmp_path / "in.png", "image")
    base = ["fit", str(tmp_path / "in.png"), "--levels", "3", "--hidden", "8", "--quiet"]
    ckpt = ["--checkpoint", str(tmp_path / "m.pt")]
    # 32^2 / 256 = 4 batches per epoch (16x16 cells, one point per cell): 8 steps = two epochs
    assert main([*base, "--batch-size", "256", "--sampler", "grid", "--steps", "8", *ckpt]) == 0
    assert (tmp_path / "m.pt").is_file()
    capsys.readouterr()
    assert main([*base, "--batch-size", "256", "--sampler", "grid", "--steps", "6", *ckpt]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "whole number of epochs" in err[0]
    assert main([*base, "--sampler", "grid", "--steps", "4", *ckpt]) == 2
    assert "needs a batch_size" in capsys.readouterr().err


def test_cli_defaults_are_the_configs():
    from iclr24.asmr.cli import app
    from iclr24.asmr.macs import asmr_macs_per_point
    from iclr24.asmr.model import ASMR
    from iclr24.asmr.train import fit
    from iclr24.paperkit.runner.testing import check_app_defaults

    # fit --checkpoint: the model folder to write (fit's checkpoint= is its training-state file, None: none)
    check_app_defaults(app, {"fit": (ASMR, fit), "macs": (ASMR, asmr_macs_per_point)}, skip=("checkpoint",))
