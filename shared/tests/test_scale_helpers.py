"""The paper-scale building blocks packages share: batch arithmetic, the streaming loader, the step builder."""

import pytest

from iclr24.paperkit import hardware
from iclr24.paperkit import scale
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.scale import accumulation_for
from iclr24.paperkit.scale import count_flops
from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import micro_batch_for
from iclr24.paperkit.scale import steps_per_epoch
from iclr24.paperkit.scale import stream
from iclr24.paperkit.scale import train_step


def test_hardware_constants_are_re_exported_by_scale():
    assert scale.H200_BF16_PEAK_FLOPS is hardware.H200_BF16_PEAK_FLOPS == 790e12
    assert scale.H200_UTILISATION is hardware.H200_UTILISATION == 0.35


def test_batch_arithmetic():
    assert micro_batch_for("cuda:0", cuda=128, cpu=4) == 128 and micro_batch_for("cpu", cuda=128, cpu=4) == 4
    assert micro_batch_for("cpu", cuda=128, cpu=4, override=2) == 2
    assert accumulation_for(4096, 4) == 1024
    with pytest.raises(InputError, match="micro_batch must divide the paper's batch 512, got 3"):
        accumulation_for(512, 3)
    with pytest.raises(InputError, match="physical_batch must divide the subset of 20, got 3"):
        accumulation_for(20, 3, name="physical_batch", of="the subset of {batch}")
    assert steps_per_epoch(1_281_167, 4096, drop_last=True) == 312
    assert steps_per_epoch(1_281_167, 512, drop_last=False) == 2503


def test_stream_runs_epoch_after_epoch_of_full_micro_batches():
    torch = pytest.importorskip("torch")
    ds = torch.utils.data.TensorDataset(torch.arange(10.0))
    batches = stream(ds, 4, "cpu", seed=0)
    seen = [next(batches)[0] for _ in range(5)]  # 2 full batches an epoch (the partial one dropped)
    assert all(b.shape == (4,) for b in seen)
    assert len(set(seen[0].tolist() + seen[1].tolist())) == 8
    again = stream(ds, 4, "cpu", seed=0)
    assert torch.equal(next(again)[0], seen[0])  # seeded


def test_train_step_runs_the_hooks_in_order_and_counts_forward_and_backward():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(8, 3, bias=False)
    opt = torch.optim.SGD(layer.parameters(), lr=0.1)
    x, y = torch.randn(4, 8), torch.randn(4, 3)
    calls = []

    def prepare(b):
        calls.append("prepare")
        return b

    step = train_step(
        iter([(x, y)] * 3),
        lambda xb, yb: (layer(xb) - yb).square().sum(),
        opt,
        "cpu",
        prepare=prepare,
        before=lambda: calls.append("before"),
        after=lambda: calls.append("after"),
        clip=(layer.parameters(), 1.0),
    )
    w0 = layer.weight.detach().clone()
    assert step() > 0 and not torch.equal(w0, layer.weight)
    assert calls == ["before", "prepare", "after"]
    assert count_flops(step) == 2 * (2 * 4 * 8 * 3)  # forward + the weight gradient (clipped again)
    one = train_step(iter([x]), lambda xb: layer(xb).sum(), opt, "cpu")  # a batch of one tensor
    assert isinstance(one(), float)


def test_train_step_accumulates_and_steps_after_the_last_micro_step():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(2, 1, bias=False)
    opt = torch.optim.SGD(layer.parameters(), lr=1.0)
    xs = [torch.tensor([[1.0, 0.0]]), torch.tensor([[0.0, 1.0]])]
    stepped = []
    batches = iter(
        [([x], torch.zeros(1)) for x in xs * 2]
    )  # a list of tensors and a label, moved as they are
    step = train_step(
        batches, lambda x, _y: layer(x[0]).sum(), opt, "cpu", accumulate=2, after=lambda: stepped.append(1)
    )
    w0 = layer.weight.detach().clone()
    assert step() == pytest.approx(float(layer(xs[0]).sum().detach()) / 2)
    assert torch.equal(layer.weight, w0) and not stepped  # no step after the first of two micro-steps
    step()
    assert torch.allclose(layer.weight, w0 - 0.5) and stepped == [1]  # the mean gradient of the two, one step


def test_fingerprint_is_the_row_less_timings():
    torch = pytest.importorskip("torch")
    layer = torch.nn.Linear(8, 3, bias=False)
    x = torch.randn(4, 8)
    step = train_step(
        iter([x] * 2), lambda xb: layer(xb).sum(), torch.optim.SGD(layer.parameters(), 0.1), "cpu"
    )
    spec = scale.PaperScale("Linear", step, 4, 2, 10, dataset="d", notes=["n"])
    assert fingerprint(spec) == {
        "config": "Linear",
        "micro_batch": 4,
        "accumulation": 2,
        "paper_steps": 10,
        "dataset": "d",
        "notes": ["n"],
        "flops_per_micro_step": 2 * 4 * 8 * 3 * 2,
    }
    assert "flops_per_micro_step" not in fingerprint(spec, flops=False)


def test_tie_runs_closing_before_removing_the_folder():
    import gc
    import tempfile
    from pathlib import Path

    from iclr24.paperkit.scale import tie

    tmp = tempfile.TemporaryDirectory(prefix="scale-test-")
    folder = Path(tmp.name)
    seen = []

    def step() -> None:
        return None

    tie(step, tmp, closing=lambda: seen.append(folder.exists()))
    del tmp, step
    gc.collect()
    assert seen == [True] and not folder.exists()  # closed while the folder was still there, then removed


def test_shuffled_draws_a_new_permutation_each_epoch_and_drops_the_partial_batch():
    torch = pytest.importorskip("torch")
    from iclr24.paperkit.scale import shuffled

    draws = shuffled(10, 4, torch.Generator().manual_seed(0))
    epoch1 = [next(draws) for _ in range(2)]  # 2 full micro-batches of 4 a 10-item epoch
    epoch2 = [next(draws) for _ in range(2)]
    assert all(b.shape == (4,) for b in epoch1 + epoch2)
    assert len(set(torch.cat(epoch1).tolist())) == 8 and len(set(torch.cat(epoch2).tolist())) == 8
    perm = torch.randperm(10, generator=torch.Generator().manual_seed(0))
    assert torch.equal(epoch1[0], perm[:4]) and torch.equal(epoch1[1], perm[4:8])  # the generator's order


def test_scale_run_sizes_the_batch_and_ties_its_folder_to_the_step():
    import gc

    from iclr24.paperkit.scale import ScaleRun

    cpu = ScaleRun("cpu", batch=512, cuda=128, cpu=4)
    gpu = ScaleRun("cuda:0", batch=512, cuda=128, cpu=4)
    assert (cpu.micro_batch, cpu.accumulation, cpu.cuda) == (4, 128, False)
    assert (gpu.micro_batch, gpu.accumulation, gpu.cuda) == (128, 4, True)
    assert (ScaleRun("cpu", batch=64).micro_batch, ScaleRun("cpu", batch=64, micro_batch=8).accumulation) == (
        64,
        8,
    )
    assert (
        ScaleRun("cpu", batch=10_677, cpu=256, partial=True).accumulation == 42
    )  # ceil: the last one partial
    with pytest.raises(InputError, match="views must divide the paper's 64 views, got 7"):
        ScaleRun("cpu", batch=64, micro_batch=7, name="views", of="the paper's {batch} views")

    none = ScaleRun("cpu", batch=2).paper_scale(lambda: None, config="c", paper_steps=3)
    assert not hasattr(none.step, "tmp") and (none.micro_batch, none.accumulation, none.paper_steps) == (
        2,
        1,
        3,
    )
    run = ScaleRun("cpu", batch=8, micro_batch=2)
    folder = run.folder
    assert folder.is_dir() and run.folder == folder  # made once, on first use
    (folder / "data.txt").write_text("stand-in")
    seen = []
    spec = run.paper_scale(
        lambda: None, closing=lambda: seen.append(1), config="c", paper_steps=5, notes=["n"]
    )
    assert (spec.micro_batch, spec.accumulation, spec.notes) == (2, 4, ["n"]) and spec.step.tmp is run._tmp
    del run, spec
    gc.collect()
    assert seen == [1] and not folder.exists()  # the folder goes with the step
