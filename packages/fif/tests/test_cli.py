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
    res = run_readme_blocks(
        README, cwd=tmp_path, values={0: {"samples": "list(samples.shape)", "nll": "list(nll.shape)"}}
    )
    assert res["samples"] == [1000, 2]
    assert res["nll"] == [500]


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
    """--quick is a smaller config of the full experiment (one of its datasets, its arms and loss weights) at about
    a minute of CPU: at most 1000 training steps per arm in all (datasets x seeds x steps), no exact-ML arm. It gates
    only FIF vs the plain AE; full gates all."""
    from iclr24.fif.reproduce import FULL, GATES, QUICK

    assert set(QUICK.datasets) <= set(FULL.datasets) and QUICK.n_blocks == FULL.n_blocks
    assert (QUICK.beta, QUICK.noise, QUICK.widths, QUICK.lr) == (FULL.beta, FULL.noise, FULL.widths, FULL.lr)
    assert QUICK.seeds >= 2 and QUICK.n_eval <= QUICK.n_test
    assert len(QUICK.datasets) * QUICK.seeds * QUICK.steps <= 1000
    assert not QUICK.mnist and not QUICK.ablation_steps
    assert QUICK.gated == ("vs_ae",) and set(FULL.gated) == set(GATES)
    assert FULL.exact_seeds is None and FULL.seeds >= 3 and FULL.mnist and FULL.ablation_steps > 0
    assert QUICK.exact_seeds == 0 and QUICK.exact_margin == FULL.exact_margin == 0.01


def test_readme_states_the_quick_config():
    """The README's quick paragraph gives the config the code runs (datasets, seeds, steps, batch, samples)."""
    from pathlib import Path

    from iclr24.fif.reproduce import QUICK

    text = " ".join((Path(__file__).parents[1] / "README.md").read_text().split())
    para = text[text.index("`fif reproduce --quick` (also") :][:700]
    assert QUICK.datasets == ("s_curve",) and "S-curve only" in para
    assert "seeds 0 and 1" in para and QUICK.seeds == 2
    assert f"{QUICK.steps} steps of batch {QUICK.batch_size}" in para
    assert f"{QUICK.n_eval} samples per metric" in para and "no exact-ML arm" in para


def test_quick_without_the_exact_arm_records_that_claim_as_not_run(tmp_path):
    """exact_seeds=0 (quick): no exact-ML training, its claim is a skipped row that says so, the plots have no
    exact panel, and the other claims are unchanged."""
    from dataclasses import replace

    from iclr24.fif.reproduce import SMOKE, _dataset_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = RunConfig(mode="quick", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    _dataset_claims(cs, replace(SMOKE, exact_seeds=0, gated=("vs_ae",)), "s_curve", [0, 1], cfg)
    assert len(cs.claims) == 4 and cs.claims[0].status in ("holds", "fails")
    exact = cs.claims[2]
    assert exact.status == "skipped" and "exact-ML arm is not trained" in exact.message
    assert exact.ours is None and exact.baseline is None
    det = cs.claims[0].details
    assert det["exact_ml_seeds"] == [] and det["per_seed"]["exact"] == {}
    assert (tmp_path / "samples_s_curve.png").is_file()


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
    """--quick decides FIF vs the plain AE only; AE+Gauss, exact ML and latent W1 are recorded with their numbers as
    not gated. The exact arm runs on the first seed only there."""
    from dataclasses import replace

    from iclr24.fif.reproduce import SMOKE, _dataset_claims
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = RunConfig(mode="quick", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    c = replace(SMOKE, exact_seeds=1, gated=("vs_ae",))
    _dataset_claims(cs, c, "s_curve", [0, 1], cfg)
    assert [cl.status for cl in cs.claims][1:] == ["skipped"] * 3 and cs.claims[0].status in (
        "holds",
        "fails",
    )
    gauss, exact, w1 = cs.claims[1:]
    assert "not gated in --quick" in gauss.message and gauss.ours is not None and gauss.baseline is not None
    assert len(gauss.details["per_seed"]["ours"]) == 2 and len(exact.details["per_seed"]["ours"]) == 1
    det = cs.claims[0].details
    assert det["exact_ml_seeds"] == [0] and len(det["per_seed"]["exact"]["mmd"]) == 1
    assert w1.ours is not None
    cs_full = ClaimSet("fif", cfg)
    _dataset_claims(cs_full, SMOKE, "s_curve", [0, 1], cfg)
    assert [cl.status for cl in cs_full.claims].count("skipped") == 0 and len(cs_full.claims) == 4
    assert cs_full.claims[1].to_dict()["paired"]["n"] == 2


def _stub_arms(metrics_by_seed):
    """A stand-in for train_arms: per-seed metrics fixed by the test, no training."""

    def fake(cfg, dataset, seed, device="cpu", show=False, exact=True):
        return {"metrics": metrics_by_seed(seed, exact), "seconds": {"FIF": 1.0, "AE": 1.0, "exact": 1.0}}

    return fake


def _metrics(fif, ae, gauss, exact, w1=0.05):
    row = lambda mmd, w=w1: {  # noqa: E731
        "mmd": mmd,
        "sliced_w1": mmd,
        "noisy_reconstruction": 0.01,
        "reconstruction": 0.01,
        "z_w1": w,
        "exact_nll": 1.0,
    }
    out = {"FIF": row(fif), "AE": row(ae, 1.0), "AE+Gauss": row(gauss, 1.0)}
    if exact is not None:
        out["exact"] = row(exact)
    return out


@pytest.mark.parametrize(
    "case, verdicts",
    [
        ("fif_good", ["holds", "holds", "holds", "holds"]),
        ("fif_bad", ["fails", "fails", "fails", "fails"]),
    ],
)
def test_every_fif_rule_can_fail(tmp_path, monkeypatch, case, verdicts):
    """With stubbed measurements, each gated rule (vs AE, vs AE+Gauss, vs exact ML, latent W1) decides both ways:
    FIF's MMD^2 worse than AE+Gauss on every seed and worse than exact ML by more than the margin fails them."""
    import iclr24.fif.reproduce as rep
    from iclr24.paperkit import ClaimSet, RunConfig

    def by_seed(seed, exact):
        j = 0.001 * seed
        if case == "fif_good":
            return _metrics(0.01 + j, 0.5, 0.05 + j, 0.012 + j if exact else None)
        return _metrics(0.30 + j, 0.4, 0.05 + 2 * j, 0.05 + j if exact else None, w1=0.3)

    monkeypatch.setattr(rep, "train_arms", _stub_arms(by_seed))
    monkeypatch.setattr(rep, "_plot_dataset", lambda *a, **k: ("a.png", "b.png"))
    cfg = RunConfig(mode="full", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    rep._dataset_claims(cs, rep.FULL, "sine", [0, 1, 2], cfg)
    assert [c.status for c in cs.claims] == verdicts


def test_a_paired_rule_with_spread_seeds_is_inconclusive(tmp_path, monkeypatch):
    import iclr24.fif.reproduce as rep
    from iclr24.paperkit import ClaimSet, RunConfig

    gauss = {0: 0.02, 1: 0.20, 2: 0.06}
    monkeypatch.setattr(rep, "train_arms", _stub_arms(lambda s, e: _metrics(0.08, 0.5, gauss[s], 0.08)))
    monkeypatch.setattr(rep, "_plot_dataset", lambda *a, **k: ("a.png", "b.png"))
    cfg = RunConfig(mode="full", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    rep._dataset_claims(cs, rep.FULL, "sine", [0, 1, 2], cfg)
    assert cs.claims[1].status == "inconclusive"


def test_the_ablation_records_both_objectives_over_training(tmp_path):
    from dataclasses import replace

    from iclr24.fif.reproduce import SMOKE, _ablation
    from iclr24.paperkit import ClaimSet, RunConfig

    cfg = RunConfig(mode="smoke", out=tmp_path, progress=False)
    cs = ClaimSet("fif", cfg)
    _ablation(cs, replace(SMOKE, ablation_steps=4, ablation_points=32), 0, cfg)
    stable, naive = cs.facts
    assert "stable" in stable.name and "naive" in naive.name and "not gated" in naive.name
    traj = naive.details["trajectory"]
    assert [t["step"] for t in traj] == [1, 2, 3, 4] and {"max_jacobian_norm", "max_curvature"} <= set(
        traj[0]
    )
    assert (tmp_path / "ablation_naive_vs_stable.png").is_file()


def _run(tmp_path, name, data, *extra):
    args = ["train", "--data", str(data), "--steps", "3", "--batch-size", "16", "--width", "8"]
    return main([*args, "--n-blocks", "1", "--out", str(tmp_path / name), "--quiet", *extra])


def test_resume_of_another_dataset_writes_nothing(tmp_path, capsys):
    """`fif train --data swiss_roll --resume --out runs/sine` is refused before anything in the run is touched."""
    assert _run(tmp_path, "sine", "sine", "--n", "200") == 0
    run = tmp_path / "sine"
    before = {f.name: f.read_bytes() for f in run.iterdir()}
    capsys.readouterr()
    assert _run(tmp_path, "sine", "swiss_roll", "--n", "200", "--resume") == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "data='sine'" in err and "nothing was written" in err
    assert _run(tmp_path, "sine", "sine", "--n", "200", "--resume", "--steps", "5") == 2
    assert "--steps 3" in capsys.readouterr().err
    assert {f.name: f.read_bytes() for f in run.iterdir()} == before
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
