"""The claim checks run end to end in smoke mode (pipeline only, seconds)."""

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
