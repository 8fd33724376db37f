import math

import pytest
import torch

from iclr24.ncde_bounds.data import downsample
from iclr24.ncde_bounds.data import load_aeon
from iclr24.ncde_bounds.data import load_ts
from iclr24.ncde_bounds.model import NCDE

TS = """# a tiny file in the UEA format
@problemName Tiny
@timeStamps false
@missing true
@univariate false
@dimensions 2
@equalLength false
@classLabel true up down
@data
0.0,1.0,2.0,3.0:1.0,1.0,1.0,1.0:up
3.0,2.0,?,0.0:0.5,0.5,0.5,0.5:down
1.0,2.0,3.0:0.0,0.0,0.0:up
"""


def test_load_ts_reads_the_uea_format(tmp_path):
    p = tmp_path / "Tiny_TRAIN.ts"
    p.write_text(TS)
    d = load_ts(p)
    assert d.values.shape == (3, 4, 2) and d.class_names == ["up", "down"]
    assert d.labels.tolist() == [0, 1, 0] and d.lengths.tolist() == [4, 4, 3]
    assert math.isnan(float(d.values[1, 2, 0])) and math.isnan(float(d.values[2, 3, 0]))
    assert float(d.values[0, 3, 0]) == 3.0 and float(d.times[2, 2]) == 1.0
    # the loaded set goes straight into an NCDE (missing values via the mask, unequal lengths via lengths)
    out = NCDE(2, output_dim=2)(d.times, d.values, d.lengths, d.mask)
    assert out.shape == (3, 2) and torch.isfinite(out).all()


def test_downsample_keeps_the_ends():
    t = torch.linspace(0, 1, 11).expand(2, -1)
    from iclr24.ncde_bounds.data import TimeSeriesDataset

    d = TimeSeriesDataset(
        torch.arange(22.0).view(2, 11, 1), t.clone(), torch.tensor([11, 11]), torch.tensor([0, 1]), ["a", "b"]
    )
    c = downsample(d, 5)
    assert c.values[0, :, 0].tolist() == [0.0, 5.0, 10.0]
    r = downsample(d, 5, seed=0)
    assert r.values.shape == (2, 3, 1) and (r.times[:, 0] == 0).all() and (r.times[:, -1] == 1).all()
    with pytest.raises(ValueError, match="rate"):
        downsample(d, 0)


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("@problemName X\n@classLabel true a\n", "no @data"),
        ("@problemName X\n@classLabel true a\n@data\n", "empty"),
        ("@problemName X\n@classLabel true a\n@data\n1,2,x:a\n", "expected a number"),
        ("@problemName X\n@classLabel true a\n@data\n1,2:b\n", "not in the @classLabel"),
        ("@timeStamps true\n@data\n(0,1):a\n", "timeStamps"),
        ("hello\n", "header"),
        ("@classLabel true a\n@data\n1,2:a\n1,2:3,4:a\n", "channel counts"),
    ],
)
def test_corrupt_ts_files_are_refused(tmp_path, text, match):
    p = tmp_path / "bad.ts"
    p.write_text(text)
    with pytest.raises(ValueError, match=match):
        load_ts(p)


def test_missing_files_name_what_to_do(tmp_path):
    with pytest.raises(FileNotFoundError, match="timeseriesclassification.com"):
        load_ts(tmp_path / "nope.ts")
    with pytest.raises(ValueError, match="folder"):
        load_ts(tmp_path)
    with pytest.raises(FileNotFoundError, match="iclr24 data get basicmotions"):
        load_aeon("BasicMotions", data_dir=tmp_path)  # an empty data folder


def test_load_aeon_reads_the_data_folder(tmp_path):
    """The data-folder path, on .ts files written in the archive's layout (the real ones come from the aeon wheel)."""
    from iclr24.paperkit.data.folder import member_paths

    for split, n in (("TRAIN", 3), ("TEST", 2)):
        p = [m for m in member_paths("basicmotions", tmp_path) if m.name.endswith(f"_{split}.ts")][0]
        p.parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(f"1,2,{k}:0.5,0.25,{k}:{'walking' if k % 2 else 'running'}\n" for k in range(n))
        p.write_text(f"@problemName BasicMotions\n@classLabel true running walking\n@data\n{rows}")
    tr = load_aeon("BasicMotions", "train", data_dir=tmp_path)
    te = load_aeon("basicmotions", "test", data_dir=tmp_path)
    assert tr.values.shape == (3, 3, 2) and te.values.shape == (2, 3, 2)
    assert tr.class_names == ["running", "walking"] and tr.labels.tolist() == [0, 1, 0]


def test_real_data_claim_runs_on_the_data_folder(tmp_path):
    """The `--full` real-data block on a tiny set in the data folder's layout: a claim, its table and its plot."""
    from iclr24.ncde_bounds.reproduce import ReproConfig
    from iclr24.ncde_bounds.reproduce import claim_real
    from iclr24.ncde_bounds.train import TrainConfig
    from iclr24.paperkit import ClaimSet
    from iclr24.paperkit import RunConfig
    from iclr24.paperkit.data.folder import member_paths

    for split, n in (("TRAIN", 4), ("TEST", 4)):
        p = [m for m in member_paths("basicmotions", tmp_path) if m.name.endswith(f"_{split}.ts")][0]
        p.parent.mkdir(parents=True, exist_ok=True)
        rows = "".join(
            f"{','.join(str((k * j) % 5) for j in range(6))}:{','.join(str(j % 3) for j in range(6))}:"
            f"{'walking' if k % 2 else 'running'}\n"
            for k in range(n)
        )
        p.write_text(f"@problemName BasicMotions\n@classLabel true running walking\n@data\n{rows}")
    c = ReproConfig(
        real_dataset="BasicMotions",
        real_rates=(1, 2),
        real_train=TrainConfig(loss="cross_entropy", epochs=1, substeps=1, width=4, hidden=2),
    )

    class Bar:
        def update(self, n):
            pass

    from dataclasses import replace

    from iclr24.ncde_bounds.reproduce import ROWS

    out = tmp_path / "out"
    claims = ClaimSet("ncde-bounds", RunConfig(mode="full", out=out))
    spec = replace(ROWS["basicmotions"], calibration=None)
    claim_real(claims, spec, replace(c, real_figure_seeds=1), [0, 1, 2], Bar(), data_dir=tmp_path)
    (cl,) = claims.claims
    rows = cl.details["per_seed_and_rate"]
    # every rate on the first (figure) seed, then only the two the claim compares
    assert [(r["seed"], r["rate"]) for r in rows] == [(0, 1), (0, 2), (1, 1), (1, 2), (2, 1), (2, 2)]
    c2 = replace(c, real_rates=(1, 2, 3), real_figure_seeds=1)
    claims2 = ClaimSet("ncde-bounds", RunConfig(mode="full", out=out))
    claim_real(claims2, spec, c2, [0, 1], Bar(), data_dir=tmp_path)
    assert [(r["seed"], r["rate"]) for r in claims2.claims[0].details["per_seed_and_rate"]] == [
        (0, 1),
        (0, 2),
        (0, 3),
        (1, 1),
        (1, 3),
    ]
    # paired over the 3 seeds: ours = accuracy at rate 1, baseline = at rate 2, seed by seed
    assert cl.verdict in ("holds", "fails", "inconclusive") and "paired over 3 seeds" in cl.rule
    assert abs(cl.ours - sum(r["test_accuracy"] for r in rows if r["rate"] == 1) / 3) < 1e-12
    assert cl.kind == "supporting" and (out / "real_vs_rate.png").stat().st_size > 0
