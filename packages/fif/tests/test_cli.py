"""The CLI contract, the claims pipeline in smoke mode, the bench in smoke mode, and the README quickstart."""

import json
from pathlib import Path

import numpy as np
import pytest

from iclr24.fif.bench import run_benchmarks
from iclr24.fif.cli import main
from iclr24.fif.reproduce import PAPER
from iclr24.paperkit.testing import check_cli_contract, check_paper_smoke, run_readme_blocks

README = Path(__file__).parents[1] / "README.md"


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path, min_claims=5)
    names = {Path(a).name for a in cs.to_dict()["artifacts"]}
    assert {"samples_sine.png", "manifold_s_curve.png"} <= names


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
    ns = run_readme_blocks(README, cwd=tmp_path, blocks=[0])
    assert ns["samples"].shape == (1000, 2)
    assert ns["nll"].shape == (500,)


def test_full_mode_mnist_claim_runs_on_a_tiny_stand_in(tmp_path, monkeypatch):
    """The --full MNIST path end to end on random 'digits' (the real file comes from `iclr24 data get mnist`)."""
    import iclr24.paperkit.datasets.mnist as mnist_mod
    from iclr24.fif.reproduce import SMOKE, _mnist_claim
    from iclr24.paperkit import ClaimSet, RunConfig

    rng = np.random.default_rng(0)

    def fake(data_dir=None):
        x = rng.random((300, 784), dtype=np.float32)
        return {s: (x, np.zeros(300, dtype=np.int64)) for s in ("train", "val", "test")}

    monkeypatch.setattr(mnist_mod, "load_mnist", fake)
    cfg = RunConfig(mode="smoke", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    _mnist_claim(cs, SMOKE.__class__(**{**vars(SMOKE), "mnist_steps": 2, "mnist_latent": 4}), cfg)
    (c,) = cs.claims
    assert c.status == "smoke", c.message
    assert (tmp_path / "mnist_samples.png").is_file()


def test_quick_config_is_a_smaller_run_of_the_full_experiment():
    """--quick keeps the full run's datasets, arms, loss weights and gates, at a budget of about a minute idle:
    at most 2000 training steps per arm in all (datasets x seeds x steps) and at least 2 seeds (the exact-ML rule
    needs a seed SD)."""
    from iclr24.fif.reproduce import FULL, QUICK

    assert QUICK.datasets == FULL.datasets and QUICK.n_blocks == FULL.n_blocks
    assert (QUICK.beta, QUICK.noise, QUICK.batch_size) == (FULL.beta, FULL.noise, FULL.batch_size)
    assert QUICK.seeds >= 2 and QUICK.n_eval <= QUICK.n_test
    assert len(QUICK.datasets) * QUICK.seeds * QUICK.steps <= 2000
    assert not QUICK.mnist
    assert not QUICK.full_only_gates and FULL.full_only_gates and FULL.exact_seeds is None
    assert QUICK.exact_seeds == 1 and FULL.mnist


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


def test_quick_gates_leave_the_full_only_claims_out_but_record_their_numbers(tmp_path):
    """--quick records latent W1 and AE+Gauss without gating them; the exact arm runs on the first seed only."""
    from dataclasses import replace

    from iclr24.fif.reproduce import SMOKE, _dataset_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = RunConfig(mode="smoke", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    c = replace(SMOKE, exact_seeds=1, full_only_gates=False)
    _dataset_claims(cs, c, "s_curve", [0, 1], cfg)
    names = [cl.claim for cl in cs.claims]
    assert len(names) == 2 and not any("W1" in n or "AE+Gauss" in n or "Gaussian latent" in n for n in names)
    det = cs.claims[0].details
    assert det["exact_ml_seeds"] == [0] and len(det["per_seed"]["exact"]["mmd"]) == 1
    assert len(det["latent_w1"]["FIF"]) == 2 and len(det["ae_gauss_mmd"]) == 2
    cs_full = ClaimSet("fif", cfg)
    _dataset_claims(cs_full, SMOKE, "s_curve", [0, 1], cfg)
    assert len(cs_full.claims) == 4
