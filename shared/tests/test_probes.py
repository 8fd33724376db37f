"""The seeded probes of paperkit.runner.testing, the unsafe-advice stripping and the safe torch load."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from iclr24.paperkit.checkpoint import load_checkpoint
from iclr24.paperkit.checkpoint import safe_torch_load
from iclr24.paperkit.data.readers import load_image
from iclr24.paperkit.data.readers import load_npz
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import strip_unsafe_advice
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_inputs
from iclr24.paperkit.runner.testing import probe_sizes


def test_probes_are_seeded_and_cover_the_kinds(tmp_path):
    a = probe_arrays((3, 2), seed=1)
    b = probe_arrays((3, 2), seed=1)
    assert [k for k, _ in a] == [k for k, _ in b]
    assert all(np.array_equal(x, y, equal_nan=True) for (_, x), (_, y) in zip(a, b, strict=True))
    labels = {k for k, _ in probe_inputs((3, 2), folder=tmp_path, suffix=".pt")}
    for want in ("array:nan", "array:inf", "array:empty", "array:int64", "size:past-int64", "float:nan"):
        assert want in labels
    for want in ("file:missing", "file:folder", "file:0-byte", "file:text", "file:random-bytes"):
        assert want in labels
    files = dict(probe_files(tmp_path, ".npz"))
    assert not files["file:missing"].exists() and files["file:folder"].is_dir()
    assert files["file:0-byte"].stat().st_size == 0 and files["file:text"].suffix == ".npz"
    assert all(torch.is_tensor(x) for _, x in probe_arrays((2,), torch=True))
    assert any(math.isnan(v) for _, v in probe_floats()) and any(v == 10**20 for _, v in probe_sizes())


def test_prober_flags_what_escapes_and_nan_answers():
    def careful(x):
        x = np.asarray(x, dtype=float)
        if x.size == 0 or not np.isfinite(x).all():
            raise InputError(f"x must be non-empty and finite, got {x.shape}")
        return float(x.mean())

    def careless(x):
        return float(np.asarray(x)[0].mean())

    p = Prober()
    p.sweep(careful, 0, probe_arrays((4,)))
    p.check()
    assert p.refused > 0
    q = Prober()
    q.sweep(careless, 0, probe_arrays((4,)))
    with pytest.raises(AssertionError, match="IndexError escaped|returned nan"):
        q.check()
    r = Prober()
    r(lambda: float("nan"))
    with pytest.raises(AssertionError, match="returned nan"):
        r.check()


def test_prober_sweeps_loaders_and_loop_options(tmp_path):
    """sweep_loaders: each loader on each wrong file of each suffix; sweep_loop_options: the four options of a
    training loop, each with its wrong values, the valid call's arguments kept."""
    seen = []

    def careful_load(path):
        seen.append(("load", str(path)))
        raise InputFileError(f"{path}: not a file this package wrote", path)

    p = Prober()
    p.sweep_loaders([careful_load, careful_load], tmp_path, (".pt", ".npz"))
    p.check()
    assert len(seen) == 2 * len(probe_files(tmp_path, ".pt")) + 2 * len(probe_files(tmp_path, ".npz"))
    assert any(s.endswith(".npz") for _, s in seen) and any(s.endswith(".pt") for _, s in seen)

    def fit(data, steps, *, log_dir=None, callbacks=None, checkpoint=None, checkpoint_every=1, resume=False):
        seen.append((data, steps, log_dir, callbacks, checkpoint, checkpoint_every, resume))
        raise InputError("a wrong option")

    seen.clear()
    q = Prober()
    q.sweep_loop_options(fit, tmp_path, "data", steps=1)
    q.check()
    assert {s[:2] for s in seen} == {("data", 1)} and q.refused == len(seen)
    assert [s[3] for s in seen if s[3] is not None] == [[3], 2.5]  # the wrong callbacks
    assert all(s[6] for s in seen if s[4] is not None)  # a wrong checkpoint is probed with resume=True
    sizes = probe_sizes()  # checkpoint_every is swept last, with every wrong size
    assert [repr(s[5]) for s in seen[-len(sizes) :]] == [repr(v) for _, v in sizes]


def test_prober_stops_a_hung_call_and_checks_coverage():
    import time

    p = Prober(time_limit=0.2)
    p(time.sleep, 5)
    with pytest.raises(AssertionError, match="still running"):
        p.check()

    class Mod:
        __name__ = "mod"
        __all__ = ["f", "g", "K"]

        @staticmethod
        def f():
            return 1

        @staticmethod
        def g():
            return 2

        K = 3

    q = Prober()
    q(Mod.f)
    with pytest.raises(AssertionError, match="never probed: g"):
        q.assert_covers(Mod)
    q.assert_covers(Mod, skip={"g": "tested elsewhere"})


TORCH_ADVICE = (
    "Weights only load failed. This file can still be loaded, to do so you have two options, \x1b[1mdo those steps "
    "only if you trust the source of the checkpoint\x1b[0m. \n\t(1) Re-running `torch.load` with `weights_only` set "
    "to `False` will likely succeed, but it can result in arbitrary code execution.\n\tWeightsUnpickler error: "
    "Unsupported global: GLOBAL argparse.Namespace was not an allowed global by default. Please use "
    "`torch.serialization.add_safe_globals([argparse.Namespace])` to allowlist this global if you trust this class."
)


def test_strip_unsafe_advice():
    text = strip_unsafe_advice(TORCH_ADVICE)
    assert "weights_only" not in text and "False" not in text and "\x1b" not in text
    assert "argparse.Namespace" in text and "\n" not in text


@pytest.mark.parametrize(
    "kind", ["file:0-byte", "file:text", "file:random-bytes", "file:folder", "file:missing"]
)
def test_safe_loads_refuse_wrong_files_in_one_clean_line(tmp_path, kind):
    path = dict(probe_files(tmp_path, ".pt"))[kind]
    for load in (
        lambda: safe_torch_load(path),
        lambda: load_checkpoint(path, format="iclr24.x/1"),
        lambda: load_npz(path),
        lambda: load_image(path),
    ):
        with pytest.raises(InputFileError) as e:
            load()
        msg = str(e.value)
        assert str(path) in msg and "weights_only" not in msg and "\n" not in msg
        assert isinstance(e.value, FileNotFoundError) and isinstance(e.value, ValueError)
    if kind == "file:folder":
        with pytest.raises(InputFolderError):
            safe_torch_load(path)


class Args:  # a plain class no package allow-lists (fastervit allow-lists argparse.Namespace process-wide)
    def __init__(self, lr):
        self.lr = lr


def test_safe_torch_load_names_the_refused_object(tmp_path):
    p = tmp_path / "args.pt"
    torch.save({"args": Args(lr=1)}, p)
    for load in (lambda: safe_torch_load(p), lambda: load_checkpoint(p, format="iclr24.x/1")):
        with pytest.raises(InputFileError, match="Python objects") as e:
            load()
        assert "weights_only" not in str(e.value) and "trust" not in str(e.value)
    assert safe_torch_load(p, safe_globals=[Args])["args"].lr == 1


_IN_SYNC = """
import json, sys
from iclr24.paperkit.distributed import cleanup_distributed, init_distributed

info = init_distributed()
params = [1.0, 2.0] if info.rank == 0 or "apart" not in sys.argv[1] else [1.0, 2.5]
json.dump({"world": info.world_size, "params": params}, open(f"{sys.argv[1]}/r{info.rank}.json", "w"))
cleanup_distributed()
"""


@pytest.mark.slow  # two processes under torchrun (gloo), twice
def test_check_ranks_in_sync(tmp_path):
    from iclr24.paperkit.runner.testing import check_ranks_in_sync

    (tmp_path / "same").mkdir()
    r0, r1 = check_ranks_in_sync(_IN_SYNC, tmp_path / "same", nproc=2, timeout=300)
    assert r0["params"] == r1["params"] == [1.0, 2.0]
    (tmp_path / "apart").mkdir()
    with pytest.raises(AssertionError, match="rank 1 left rank 0"):
        check_ranks_in_sync(_IN_SYNC, tmp_path / "apart", nproc=2, timeout=300)
