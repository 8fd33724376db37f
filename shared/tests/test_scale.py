import json

import pytest

from iclr24.paperkit.scale import PaperScale
from iclr24.paperkit.scale import count_flops
from iclr24.paperkit.scale import endless
from iclr24.paperkit.scale import measure_paper_scale
from iclr24.paperkit.scale import paper_scale_markdown
from iclr24.paperkit.scale import tie


def _linear_step(batch=4, d_in=8, d_out=3):
    import torch

    layer = torch.nn.Linear(d_in, d_out, bias=False)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x = torch.randn(batch, d_in)

    def step():
        opt.zero_grad()
        layer(x).square().sum().backward()
        opt.step()

    return step


def test_flops_of_a_linear_step_are_forward_plus_backward_matmuls():
    # forward 2*B*in*out; backward: the weight gradient only (x needs no grad): 2*B*in*out
    assert count_flops(_linear_step()) == 2 * (2 * 4 * 8 * 3)


def test_measure_extrapolates_hours_and_h200_time():
    spec = PaperScale(
        config="Linear 8->3", step=_linear_step(), micro_batch=4, accumulation=5, paper_steps=1000
    )
    row = measure_paper_scale(spec, steps=2, utilisation=0.5)
    assert row["flops_per_paper_step"] == 5 * 384  # 384 per micro-step, as above
    assert row["seconds_per_paper_step"] == pytest.approx(5 * row["seconds_per_micro_step"])
    assert row["hours_here"] == pytest.approx(row["seconds_per_paper_step"] * 1000 / 3600)
    assert row["hours_h200"] == pytest.approx(5 * 384 * 1000 / (790e12 * 0.5) / 3600)
    assert row["peak_rss_bytes"] > 0 and row["cuda_peak_bytes"] is None
    md = paper_scale_markdown([{**row, "package": "demo"}])
    assert "| demo | Linear 8->3 | 4 x 5 |" in md and "50% of bf16 peak" in md
    json.dumps(row, allow_nan=False)
    with pytest.raises(ValueError, match="positive int"):
        PaperScale(config="c", step=lambda: None, micro_batch=0, accumulation=1, paper_steps=1)


MODULE = """
from iclr24.paperkit import Paper, PaperScale


def _scale(device):
    import torch

    w = torch.randn(16, 16, requires_grad=True)
    x = torch.randn(2, 16)

    def step():
        (x @ w).sum().backward()

    return PaperScale(config="tiny", step=step, micro_batch=2, accumulation=3, paper_steps=10)


SCALED = Paper(name="fake-scaled", title="t", summary="s", run=lambda cfg: [], paper_scale=_scale)
PLAIN = Paper(name="fake-plain", title="t", summary="s", run=lambda cfg: [])
"""


@pytest.mark.slow  # two fresh worker processes
def test_iclr24_bench_paper_scale_prints_a_row_per_package(tmp_path, paper_site, monkeypatch, capsys):
    from iclr24.paperkit.runner.umbrella import main

    root = paper_site("iclr24_scale_papers", MODULE, {"fake-scaled": "SCALED", "fake-plain": "PLAIN"})
    monkeypatch.syspath_prepend(str(root))
    out = tmp_path / "ps"
    assert main(["bench", "--paper-scale", "fake-scaled", "fake-plain", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "| fake-scaled | tiny | 2 x 3 |" in text and "No PAPER_SCALE configuration yet: fake-plain" in text
    doc = json.loads((out / "paper_scale.json").read_text())
    row = doc["rows"][0]
    assert row["flops_per_paper_step"] == 3 * 2 * (2 * 2 * 16 * 16) and row["threads"] == 1
    with pytest.raises(SystemExit) as e:  # --paper-scale is required: a usage error, exit 2
        main(["bench", "fake-scaled", "--out", str(out)])
    assert e.value.code == 2


def test_package_bench_paper_scale_writes_one_row(tmp_path, capsys):
    """`<name> bench --paper-scale` runs the paper's own configuration (not the benchmarks) and writes one row;
    a paper without one, a mode flag, or --device on a CPU-only bench are one-line usage errors."""
    from iclr24.paperkit import Paper
    from iclr24.paperkit import PaperScale
    from iclr24.paperkit.bench import BenchReport
    from iclr24.paperkit.cli import App

    calls = []

    def scale(device):
        calls.append(device)
        return PaperScale(
            config="tiny",
            step=lambda: None,
            micro_batch=2,
            accumulation=3,
            paper_steps=10,
            flops_per_micro_step=5.0,
            notes=["stand-in data"],
        )

    def bench(mode):
        calls.append(mode)
        return BenchReport(results=[])

    def make(paper_scale):
        app = App("demo", "d")
        paper = Paper(name="demo", title="t", summary="s", run=lambda cfg: [], paper_scale=paper_scale)
        app.add_reproduce(lambda: paper, device=False)
        app.add_bench(bench)
        return app

    out = tmp_path / "ps"
    assert make(scale)(["bench", "--paper-scale", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert calls == ["cpu"] and "| demo | tiny | 2 x 3 |" in text and "- stand-in data" in text
    row = json.loads((out / "paper_scale.json").read_text())["rows"][0]
    assert row["flops_per_paper_step"] == 15.0 and row["paper_steps"] == 10
    assert make(None)(["bench", "--paper-scale", "--out", str(tmp_path / "a")]) == 2
    assert "no PAPER_SCALE configuration" in capsys.readouterr().err and not (tmp_path / "a").exists()
    assert make(scale)(["bench", "--paper-scale", "--full", "--out", str(tmp_path / "b")]) == 2
    assert make(scale)(["bench", "--device", "mps", "--out", str(tmp_path / "c")]) == 2
    assert calls == ["cpu"]


def test_count_flops_counts_grad_of_a_potential_inside_a_module():
    """A model whose forward is the gradient of a potential (torch.autograd.grad with create_graph inside the
    module: LPN, FIF) is counted, and a plain model's count equals FlopCounterMode's."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    class GradOfPotential(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(8, 8)

        def forward(self, x):
            x = x.requires_grad_(True)
            psi = self.lin(x).pow(2).sum()
            return torch.autograd.grad(psi, x, create_graph=True)[0]

    m, x = GradOfPotential(), torch.randn(4, 8)
    n = count_flops(lambda: m(x).sum().backward())
    assert n is not None and n >= 3 * (2 * 4 * 8 * 8)  # forward, the inner grad, and the outer backward
    lin, y = torch.nn.Linear(8, 3), torch.randn(5, 8)
    with FlopCounterMode(display=False) as fc:
        lin(y).sum().backward()
    assert count_flops(lambda: lin(y).sum().backward()) == fc.get_total_flops()


def test_endless_runs_epoch_after_epoch():
    it = endless([1, 2, 3])
    assert [next(it) for _ in range(7)] == [1, 2, 3, 1, 2, 3, 1]


def test_tie_keeps_the_folder_as_long_as_the_step():
    import gc
    import tempfile
    from pathlib import Path

    tmp = tempfile.TemporaryDirectory(prefix="scale-test-")
    folder = Path(tmp.name)
    (folder / "data.txt").write_text("x")

    def step() -> float:
        return float(len((folder / "data.txt").read_text()))

    assert tie(step, tmp) is step and step.tmp is tmp
    del tmp
    gc.collect()
    assert step() == 1.0  # the caller's reference is gone, the step's keeps the folder
    del step
    gc.collect()
    assert not folder.exists()  # removed with the step
