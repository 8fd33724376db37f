"""The CLI contract, the claims pipeline in smoke mode, the bench in smoke mode, and the README quickstart."""

import json
from pathlib import Path

import numpy as np
import pytest

from iclr24.fif.bench import run_benchmarks
from iclr24.fif.cli import main
from iclr24.fif.reproduce import PAPER
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(
        PAPER, tmp_path, min_claims=2
    )  # the quick rows: the S-curve's fair baseline and strawman
    names = {Path(a).name for a in cs.to_dict()["artifacts"]}
    assert {"samples_s_curve.png", "manifold_s_curve.png"} <= names
    assert [c.kind for c in cs.claims] == ["headline", "check"]


def test_train_sample_nll_end_to_end(tmp_path, capsys):
    out = tmp_path / "run"
    rng = np.random.default_rng(0)
    t = rng.standard_normal(300)
    np.save(tmp_path / "circle.npy", np.stack([np.cos(t), np.sin(t), 0.1 * t], 1))
    args = ["train", "--data", str(tmp_path / "circle.npy"), "--latent-dim", "1", "--steps", "4"]
    assert (
        main([*args, "--batch-size", "16", "--width", "8", "--n-blocks", "1", "--out", str(out), "--quiet"])
        == 0
    )
    assert (out / "model.pt").is_file() and (out / "samples.png").is_file()
    assert (
        main(["sample", "--checkpoint", str(out / "model.pt"), "--n", "5", "--out", str(tmp_path / "s")]) == 0
    )
    assert np.load(tmp_path / "s" / "samples.npy").shape == (5, 3)
    nll_args = ["nll", "--checkpoint", str(out / "model.pt"), "--data", str(tmp_path / "circle.npy")]
    assert main([*nll_args, "--out", str(tmp_path / "n")]) == 0
    assert np.isfinite(json.loads((tmp_path / "n" / "nll.json").read_text())["mean_nll"])
    capsys.readouterr()
    # user errors: one line, exit 2
    assert main(["sample", "--checkpoint", str(tmp_path / "missing.pt"), "--out", str(tmp_path / "x")]) == 2
    assert main(["train", "--data", "nosuchset", "--out", str(tmp_path / "y")]) == 2
    assert main(["train", "--data", "scurve", "--latent-dim", "3", "--out", str(tmp_path / "w")]) == 2
    assert main(["train", "--data", "sine", "--latent-dim", "2", "--out", str(tmp_path / "z")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 4 and "checkpoint not found" in err[0] and "D=3" in err[2] and "latent-dim" in err[3]


def test_bench_smoke():
    rep = run_benchmarks("smoke")
    assert len(rep.results) == 3
    assert all(r.speedup is not None and r.speedup > 0 for r in rep.results)


@pytest.mark.slow  # trains the quickstart model for 300 steps
def test_readme_quickstart(tmp_path):
    res = run_readme_blocks(
        README,
        cwd=tmp_path,
        values={
            0: {"samples": "list(samples.shape)", "nll": "list(nll.shape)"},
            # train -> save_pretrained -> from_pretrained -> evaluate
            1: {"files": "sorted(p.name for p in __import__('pathlib').Path('runs/fif-model').iterdir())"},
        },
    )
    assert res["samples"] == [1000, 2]
    assert res["nll"] == [500]
    assert res["files"] == ["config.json", "model.safetensors", "provenance.json"]
    assert res["__stdout__"].strip().splitlines()[-1] == "True"


def test_train_on_an_image_folder(tmp_path, capsys):
    """`fif train --data FOLDER` trains the conv pair on the images; sizes that the conv pair cannot take are a
    one-line error naming --image-size."""
    from PIL import Image

    rng = np.random.default_rng(0)
    (tmp_path / "imgs").mkdir()
    for i in range(6):
        Image.fromarray(rng.integers(0, 256, (10, 10), dtype=np.uint8), mode="L").save(
            tmp_path / "imgs" / f"{i}.png"
        )
    base = ["train", "--data", str(tmp_path / "imgs"), "--steps", "2", "--batch-size", "4", "--width", "16"]
    capsys.readouterr()
    assert main([*base, "--out", str(tmp_path / "bad"), "--quiet"]) == 2
    assert "--image-size" in capsys.readouterr().err
    out = tmp_path / "run"
    assert main([*base, "--image-size", "8", "--latent-dim", "4", "--out", str(out), "--quiet"]) == 0
    meta = json.loads((out / "meta.json").read_text())
    assert meta["image_shape"] == [3, 8, 8] and meta["kind"] == "image_folder"
    assert (out / "samples.png").is_file()
    nll = [
        "nll",
        "--checkpoint",
        str(out / "model.pt"),
        "--data",
        str(tmp_path / "imgs"),
        "--out",
        str(tmp_path / "n"),
    ]
    assert main(nll) == 0
    assert np.isfinite(json.loads((tmp_path / "n" / "nll.json").read_text())["mean_nll"])


def _run(tmp_path, name, data, *extra):
    args = ["train", "--data", str(data), "--steps", "3", "--batch-size", "16", "--width", "8"]
    return main([*args, "--n-blocks", "1", "--out", str(tmp_path / name), "--quiet", *extra])


def test_resume_of_another_dataset_writes_nothing(tmp_path, capsys):
    """`fif train --data swiss_roll --resume --out runs/sine` is refused before anything in the run is touched."""
    assert _run(tmp_path, "sine", "sine", "--n", "200") == 0
    run = tmp_path / "sine"
    before = {str(f.relative_to(run)): f.read_bytes() for f in run.rglob("*") if f.is_file()}  # OUT/model too
    capsys.readouterr()
    assert _run(tmp_path, "sine", "swiss_roll", "--n", "200", "--resume") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data='sine'" in err and "nothing was written" in err
    assert _run(tmp_path, "sine", "sine", "--n", "200", "--resume", "--steps", "5") == 2
    assert "--steps 3" in capsys.readouterr().err
    assert {str(f.relative_to(run)): f.read_bytes() for f in run.rglob("*") if f.is_file()} == before
    sample = ["sample", "--checkpoint", str(run / "model.pt"), "--n", "7", "--out", str(tmp_path / "s")]
    assert main(sample) == 0  # the run still works
    assert (tmp_path / "s" / "samples.png").is_file()  # `fif sample --help` promises the plot
    assert _run(tmp_path, "sine", "sine", "--n", "200", "--resume") == 0  # the same run resumes


def test_the_checkpoint_carries_its_meta(tmp_path):
    """A run whose meta.json is lost or stale still loads: model.pt holds the meta it was trained with."""
    assert _run(tmp_path, "r", "sine", "--n", "200") == 0
    (tmp_path / "r" / "meta.json").write_text('{"data": "swiss_roll"}')
    assert (
        main(["sample", "--checkpoint", str(tmp_path / "r" / "model.pt"), "--out", str(tmp_path / "s")]) == 0
    )


def test_bad_data_files_are_one_line_errors(tmp_path, capsys):
    np.save(tmp_path / "ones.npy", np.ones((50, 3)))
    np.savez(tmp_path / "two.npz", x=np.random.default_rng(0).standard_normal((50, 3)), y=np.zeros(50))
    capsys.readouterr()
    assert _run(tmp_path, "a", tmp_path / "ones.npy") == 2
    assert "every column is constant" in capsys.readouterr().err
    assert _run(tmp_path, "b", tmp_path / "two.npz") == 2
    err = capsys.readouterr().err
    assert "2 arrays (x, y)" in err and "--npz-key" in err
    assert not (tmp_path / "a").exists() or not any((tmp_path / "a").iterdir())
    assert _run(tmp_path, "c", tmp_path / "two.npz", "--npz-key", "x", "--latent-dim", "1") == 0
    assert json.loads((tmp_path / "c" / "meta.json").read_text())["npz_key"] == "x"
    nll = ["nll", "--checkpoint", str(tmp_path / "c" / "model.pt"), "--data", str(tmp_path / "two.npz")]
    assert main([*nll, "--npz-key", "x", "--out", str(tmp_path / "n")]) == 0
    capsys.readouterr()
    assert main([*nll, "--out", str(tmp_path / "n2")]) == 2
    assert "--npz-key" in capsys.readouterr().err
    # one constant column of several: centred, not scaled, and said so
    x = np.random.default_rng(1).standard_normal((60, 3))
    x[:, 1] = 4.0
    np.save(tmp_path / "flat.npy", x)
    assert _run(tmp_path, "d", tmp_path / "flat.npy", "--latent-dim", "1") == 0
    assert "constant column" in capsys.readouterr().err
    assert json.loads((tmp_path / "d" / "meta.json").read_text())["std"][1] == 1.0


def test_a_crafted_checkpoint_is_a_clear_cli_error(tmp_path, capsys):
    import torch

    class Crafted:
        def __reduce__(self):
            return (print, ("crafted code ran",))

    (tmp_path / "r").mkdir()
    torch.save({"format": "iclr24-fif/1", "meta": Crafted()}, tmp_path / "r" / "model.pt")
    capsys.readouterr()
    assert (
        main(["sample", "--checkpoint", str(tmp_path / "r" / "model.pt"), "--out", str(tmp_path / "s")]) == 2
    )
    out = capsys.readouterr()
    assert "not a file this package wrote" in out.err and "weights_only" not in out.err
    assert "crafted code ran" not in out.out + out.err


def test_cli_defaults_are_the_configs():
    from iclr24.fif.cli import app
    from iclr24.fif.model import FIFModel
    from iclr24.fif.train import TrainConfig

    # --n-blocks/--width: one width for the conv or the MLP pair, the CLI's small toy networks
    check_app_defaults(app, {"train": (TrainConfig, FIFModel)}, skip=("n_blocks", "width"))
