"""The claim checks run end to end in smoke mode (pipeline only, seconds)."""

import dataclasses

from iclr24.paperkit.testing import check_paper_smoke
from iclr24.sfda2.reproduce import PAPER


def test_smoke_records(tmp_path):
    cs = check_paper_smoke(PAPER, tmp_path)
    names = [c.claim for c in cs.claims]
    assert any("AaD" in n for n in names) and any("NaN" in n for n in names)
    assert (tmp_path / "adaptation_digits.png").is_file()


def test_study_does_not_depend_on_global_rng_state():
    import dataclasses

    import torch

    from iclr24.sfda2.reproduce import SMOKE, _digits_target, measure

    c = dataclasses.replace(SMOKE, methods=("aad",))
    a = measure(c, _digits_target, show=False)
    torch.rand(1000)  # consume the global generator: a seeded study must not notice
    b = measure(c, _digits_target, show=False)
    assert a["source-only"] == b["source-only"] and a["aad"] == b["aad"]


def test_full_adds_mnist_with_calibration_seeds_disjoint_from_evaluated():
    from iclr24.sfda2.reproduce import CALIBRATION_SEEDS, FULL, QUICK, SMOKE

    assert QUICK.mnist is None and SMOKE.mnist is None
    assert FULL.mnist is not None and {"aad", "sfda2"} <= set(FULL.mnist.methods)
    for c in (QUICK, FULL, FULL.mnist):
        assert not set(c.seeds) & set(CALIBRATION_SEEDS)
    # quick is a smaller config of the same study: same adaptation settings apart from its length
    assert (
        dataclasses.replace(QUICK.adapt, max_epoch=FULL.adapt.max_epoch, interval=FULL.adapt.interval)
        == FULL.adapt
    )


def _tiny_mnist(folder):
    import gzip
    import pickle

    import numpy as np

    from iclr24.paperkit.datadir import data_path

    rng = np.random.default_rng(0)
    split = lambda n: (rng.random((n, 784), dtype=np.float32), (np.arange(n) % 10).astype(np.int64))  # noqa: E731
    target = data_path("mnist", folder)
    target.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(target, "wb") as fh:
        pickle.dump((split(100), split(20), split(20)), fh)


def test_mnist_study_runs_through_the_claims_or_is_skipped(tmp_path, monkeypatch):
    from iclr24.paperkit import RunConfig
    from iclr24.sfda2 import reproduce

    monkeypatch.setattr(
        reproduce,
        "SMOKE",
        dataclasses.replace(reproduce.SMOKE, mnist=dataclasses.replace(reproduce.SMOKE, mnist_n_source=50)),
    )
    _tiny_mnist(tmp_path / "data")
    cs = reproduce.run(
        RunConfig(mode="smoke", out=tmp_path / "a", data_dir=tmp_path / "data", progress=False)
    )
    mnist = [c for c in cs.claims if c.claim.startswith("MNIST -> digits")]
    assert len(mnist) == 3 and all(c.verdict == "smoke" for c in mnist)
    assert (tmp_path / "a" / "adaptation_mnist.png").is_file()
    cs = reproduce.run(
        RunConfig(mode="smoke", out=tmp_path / "b", data_dir=tmp_path / "none", progress=False)
    )
    skipped = [c for c in cs.claims if c.claim.startswith("MNIST -> digits")]
    assert [c.verdict for c in skipped] == ["skipped"] and "iclr24 data get mnist" in skipped[0].message
