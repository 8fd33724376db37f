"""The command-line contract, and a tiny train -> sample -> eval round trip."""

import json

import pytest

from iclr24.lace.cli import main
from iclr24.paperkit.testing import check_cli_contract


def test_cli_contract(tmp_path):
    check_cli_contract(main, tmp_path)


def test_train_then_sample(tmp_path, capsys):
    assert (
        main(
            [
                "train",
                "--steps",
                "2",
                "--layouts",
                "16",
                "--dim",
                "8",
                "--out",
                str(tmp_path / "m"),
                "--quiet",
            ]
        )
        == 0
    )
    ck = str(tmp_path / "m" / "model.pt")
    out = str(tmp_path / "s")
    assert (
        main(
            [
                "sample",
                "--checkpoint",
                ck,
                "--task",
                "c2sp",
                "--categories",
                "title,text",
                "--n",
                "2",
                "--out",
                out,
                "--quiet",
            ]
        )
        == 0
    )
    assert (tmp_path / "s" / "samples.png").stat().st_size > 0
    assert (
        main(
            [
                "sample",
                "--checkpoint",
                ck,
                "--task",
                "c2sp",
                "--categories",
                "title,chart",
                "--out",
                out + "2",
            ]
        )
        == 2
    )
    assert "unknown category" in capsys.readouterr().err


def test_bench_smoke(tmp_path):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    rep = json.loads((tmp_path / "bench.json").read_text())
    assert len(rep["results"]) == 3 and all(r["median_s"] > 0 for r in rep["results"])


def test_sample_beautify_says_what_it_dropped(tmp_path, capsys, monkeypatch):
    """beautify drops elements thinner than 0.01 (as the official post_process): `lace sample` says how many and
    which layouts are left empty, and samples.json still lists the dropped ones, flagged."""
    import sys

    import torch

    assert (
        main(
            ["train", "--steps", "1", "--layouts", "8", "--dim", "8", "--out", str(tmp_path / "m"), "--quiet"]
        )
        == 0
    )
    bmod = sys.modules["iclr24.lace.beautify"]

    def drop_all_but_first_of_layout0(bbox, mask, **kw):  # stands in for a beautify that drops thin boxes
        keep = torch.zeros_like(mask)
        keep[0, 0] = True
        return bbox, mask & keep

    monkeypatch.setattr(bmod, "beautify", drop_all_but_first_of_layout0)
    args = ["sample", "--checkpoint", str(tmp_path / "m" / "model.pt"), "--task", "c2sp"]
    args += ["--categories", "title,text,figure", "--n", "6", "--beautify", "--out", str(tmp_path / "s")]
    capsys.readouterr()
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "beautify dropped 17 of 18 elements" in err and "5 of 6 layouts empty" in err
    rows = json.loads((tmp_path / "s" / "samples.json").read_text())
    assert [len(r) for r in rows] == [3] * 6
    assert sum(not e.get("dropped_by_beautify", False) for r in rows for e in r) == 1
    monkeypatch.setattr(bmod, "beautify", lambda bbox, mask, **kw: (bbox, mask))
    assert main(args[:-1] + [str(tmp_path / "s2")]) == 0
    assert "dropped" not in capsys.readouterr().err


def test_eval_metric_variants(tmp_path, capsys):
    assert (
        main(
            ["train", "--steps", "1", "--layouts", "8", "--dim", "8", "--out", str(tmp_path / "m"), "--quiet"]
        )
        == 0
    )
    ck = str(tmp_path / "m" / "model.pt")
    res = {}
    for v in ("official", "package"):
        ev = ["eval", "--checkpoint", ck, "--layouts", "6", "--steps", "2", "--metrics", v]
        assert main([*ev, "--out", str(tmp_path / v), "--quiet"]) == 0
        rec = json.loads((tmp_path / v / "metrics.json").read_text())
        assert rec["metric_variant"] == v
        res[v] = rec["tasks"]
        assert set(res[v]) == {"uncond", "c", "cwh", "complete", "refine"}
        assert all("empty_layouts" in r for r in res[v].values())
    # the same samples (same seed), scored two ways: FD and MaxIoU agree, alignment need not
    assert res["official"]["c"]["fd"] == res["package"]["c"]["fd"]
    assert res["official"]["c"]["max_iou"] == res["package"]["c"]["max_iou"]
    with pytest.raises(SystemExit) as e:
        main(["eval", "--checkpoint", ck, "--metrics", "paper", "--out", str(tmp_path / "x")])
    assert e.value.code == 2 and "invalid choice" in capsys.readouterr().err
    assert not (tmp_path / "x").exists()
