"""The command-line contract, and a tiny train -> sample -> eval round trip."""

import json

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
        main(["sample", "--checkpoint", ck, "--task", "c2sp", "--categories", "title,chart", "--out", out])
        == 2
    )
    assert "unknown category" in capsys.readouterr().err


def test_bench_smoke(tmp_path):
    assert main(["bench", "--smoke", "--out", str(tmp_path), "--quiet"]) == 0
    rep = json.loads((tmp_path / "bench.json").read_text())
    assert len(rep["results"]) == 3 and all(r["median_s"] > 0 for r in rep["results"])
