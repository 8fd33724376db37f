"""The command-line contract, and a tiny train -> sample -> eval round trip."""

import json

import pytest

from iclr24.lace.cli import main
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_contract
from iclr24.paperkit.runner.testing_workflow import run_interrupted


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
    ck = str(tmp_path / "m" / "model")
    prov = json.loads((tmp_path / "m" / "model" / "provenance.json").read_text())
    assert prov["command"].startswith("lace train --steps 2 --layouts 16") and prov["steps"] == 2
    assert prov["seed"] == 0 and prov["cpu_seconds"] > 0 and not (tmp_path / "m" / "model.pt").exists()
    out = str(tmp_path / "s")
    sample = ["sample", "--checkpoint", ck, "--task", "c2sp"]
    assert main([*sample, "--categories", "title,text", "--n", "2", "--out", out, "--quiet"]) == 0
    assert (tmp_path / "s" / "samples.png").stat().st_size > 0
    assert main([*sample, "--categories", "title,chart", "--out", out + "2"]) == 2
    assert "unknown category" in capsys.readouterr().err


def test_an_older_model_pt_still_samples_and_evaluates(tmp_path):
    from iclr24.lace import load_checkpoint
    from iclr24.lace import save_checkpoint

    assert (
        main(
            ["train", "--steps", "1", "--layouts", "8", "--dim", "8", "--out", str(tmp_path / "m"), "--quiet"]
        )
        == 0
    )
    model, cfg = load_checkpoint(tmp_path / "m" / "model")
    save_checkpoint(model, cfg, tmp_path / "old.pt")
    for ck, name in ((tmp_path / "old.pt", "old"), (tmp_path / "m" / "model", "new")):
        args = [
            "sample",
            "--checkpoint",
            str(ck),
            "--n",
            "2",
            "--out",
            str(tmp_path / f"s-{name}"),
            "--quiet",
        ]
        assert main(args) == 0
    a, b = ((tmp_path / f"s-{n}" / "samples.json").read_text() for n in ("old", "new"))
    assert a == b


def test_train_log_dir_and_resume(tmp_path):
    """--log-dir writes one JSONL row per step; a run interrupted at step 5 and continued with --resume writes the
    weights an uninterrupted run writes."""
    from iclr24.paperkit.tracking import read_jsonl

    base = ["train", "--steps", "8", "--layouts", "16", "--dim", "8", "--checkpoint-every", "3", "--quiet"]
    assert main([*base, "--out", str(tmp_path / "a"), "--log-dir", str(tmp_path / "logs")]) == 0
    rows = read_jsonl(tmp_path / "logs" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [*range(8), -1] and {"loss", "diff", "rec", "constraint"} <= set(
        rows[0]
    )
    assert run_interrupted(main, [*base, "--out", str(tmp_path / "b")], at_step=5) == 130
    assert not (tmp_path / "b" / "model").exists()
    assert main([*base, "--out", str(tmp_path / "b"), "--resume", "--log-dir", str(tmp_path / "logs-b")]) == 0
    assert [r["step"] for r in read_jsonl(tmp_path / "logs-b" / "metrics.jsonl")] == [3, 4, 5, 6, 7, -1]
    wa, wb = ((tmp_path / n / "model" / "model.safetensors").read_bytes() for n in "ab")
    assert wa == wb
    ha, hb = (json.loads((tmp_path / n / "history.json").read_text()) for n in "ab")
    assert ha == hb


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
    args = ["sample", "--checkpoint", str(tmp_path / "m" / "model"), "--task", "c2sp"]
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
    ck = str(tmp_path / "m" / "model")
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


def test_train_flags_reach_the_model_config(tmp_path, capsys):
    """The sizes and the official-variant switches of `lace train` land in the saved config; a --dim that --heads
    does not divide is a one-line error (exit 2)."""
    from iclr24.lace import load_checkpoint

    argv = [
        "train",
        "--steps",
        "2",
        "--layouts",
        "8",
        "--dim",
        "12",
        "--heads",
        "3",
        "--layers",
        "1",
        "--ff",
        "20",
    ]
    argv += [
        "--batch-size",
        "4",
        "--lr",
        "1e-3",
        "--align-padding-partners",
        "--official-completion",
        "--quiet",
    ]
    assert main([*argv, "--out", str(tmp_path / "m")]) == 0
    _, cfg = load_checkpoint(tmp_path / "m" / "model")
    assert (cfg.dim, cfg.heads, cfg.layers, cfg.ff, cfg.batch_size, cfg.lr) == (12, 3, 1, 20, 4, 1e-3)
    assert cfg.align_padding_partners and not cfg.complete_keep_first and cfg.rec_loss == "unclamped"
    prov = json.loads((tmp_path / "m" / "model" / "provenance.json").read_text())
    assert set(prov["losses"]) == {"0", "1"}
    capsys.readouterr()
    assert (
        main(
            ["train", "--steps", "1", "--dim", "10", "--heads", "3", "--out", str(tmp_path / "b"), "--quiet"]
        )
        == 2
    )
    assert "divisible" in capsys.readouterr().err


def test_cli_defaults_are_the_configs():
    from iclr24.lace.cli import app
    from iclr24.lace.model import LaceConfig

    # the network size, batch and steps are train's own CPU sizes (its recorded training commands rely on them)
    sizes = ("dim", "heads", "layers", "ff", "batch_size", "steps")
    check_app_defaults(app, {"train": LaceConfig}, skip=sizes)
