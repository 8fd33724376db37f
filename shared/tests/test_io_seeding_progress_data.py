import json
import os
import random

import numpy as np
import pytest
import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import atomic_write_text
from iclr24.paperkit import deterministic
from iclr24.paperkit import ensure_out_dir
from iclr24.paperkit import progress
from iclr24.paperkit import seed_everything
from iclr24.paperkit import set_quiet
from iclr24.paperkit.data.samples import digits_tensors
from iclr24.paperkit.data.samples import sample_image
from iclr24.paperkit.data.samples import train_test_split_tensors


def test_atomic_writes_leave_no_temp_files(tmp_path):
    p = atomic_write_text(tmp_path / "sub" / "a.txt", "hello")
    assert p.read_text() == "hello"
    atomic_write_json(tmp_path / "b.json", {"x": [1, 2]})
    assert json.loads((tmp_path / "b.json").read_text()) == {"x": [1, 2]}
    atomic_torch_save({"w": torch.ones(2)}, tmp_path / "c.pt")
    assert torch.equal(torch.load(tmp_path / "c.pt")["w"], torch.ones(2))
    assert sorted(os.listdir(tmp_path)) == ["b.json", "c.pt", "sub"]


def test_failed_json_write_keeps_old_file(tmp_path):
    p = atomic_write_json(tmp_path / "r.json", {"ok": 1})
    with pytest.raises(ValueError):
        atomic_write_json(p, {"bad": float("nan")})
    assert json.loads(p.read_text()) == {"ok": 1}
    assert os.listdir(tmp_path) == ["r.json"]


def test_write_onto_folder_and_out_is_file(tmp_path):
    with pytest.raises(IsADirectoryError):
        atomic_write_text(tmp_path, "x")
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        ensure_out_dir(f)
    assert ensure_out_dir(tmp_path / "new" / "dir").is_dir()


def test_seed_everything_reproduces_all_generators():
    def draw():
        return random.random(), np.random.rand(), torch.rand(1).item()

    seed_everything(7)
    a = draw()
    seed_everything(7)
    assert draw() == a
    seed_everything(8)
    assert draw() != a
    for bad in (-1, 2**32, 1.5, "3", True):
        with pytest.raises(ValueError):
            seed_everything(bad)


def test_deterministic_switch_restores():
    before = torch.are_deterministic_algorithms_enabled()
    with deterministic(True):
        assert torch.are_deterministic_algorithms_enabled()
    assert torch.are_deterministic_algorithms_enabled() == before


def test_pinned_threads_restores_torch_blas_and_env():
    import os

    from threadpoolctl import threadpool_info

    from iclr24.paperkit import pinned_threads

    before = torch.get_num_threads()
    env_before = os.environ.get("OMP_NUM_THREADS")
    with pinned_threads(1):
        assert torch.get_num_threads() == 1
        assert os.environ["OMP_NUM_THREADS"] == "1"
        assert all(p["num_threads"] == 1 for p in threadpool_info())
    assert torch.get_num_threads() == before
    assert os.environ.get("OMP_NUM_THREADS") == env_before
    for bad in (0, -1, 1.5, True, "2"):
        with pytest.raises(ValueError, match="positive int"):
            with pinned_threads(bad):
                pass
    assert torch.get_num_threads() == before


def test_progress_quiet_and_non_tty():
    set_quiet(True)
    try:
        assert progress(range(3)).disable
    finally:
        set_quiet(False)
    assert progress(range(3), disable=False).disable is False
    assert list(progress(range(3))) == [0, 1, 2]  # under pytest stderr is not a tty: disabled, still iterates


def test_digits_tensors_and_split():
    x, y = digits_tensors()
    assert x.shape == (1797, 1, 8, 8) and y.shape == (1797,)
    assert 0.0 <= x.min() and x.max() <= 1.0 and set(y.tolist()) == set(range(10))
    xf, _ = digits_tensors(flatten=True)
    assert xf.shape == (1797, 64)
    xtr, ytr, xte, yte = train_test_split_tensors(xf, y, 0.25, seed=0)
    assert len(xtr) + len(xte) == 1797 and abs(len(xte) - 450) <= 1
    xtr2, *_ = train_test_split_tensors(xf, y, 0.25, seed=0)
    assert torch.equal(xtr, xtr2)
    with pytest.raises(ValueError):
        train_test_split_tensors(xf, y[:5])


def test_sample_image():
    img = sample_image("camera", size=32)
    assert img.shape == (32, 32) and img.dtype == np.float32 and 0 <= img.min() and img.max() <= 1
    rgb = sample_image("astronaut", size=(16, 24))
    assert rgb.shape == (16, 24, 3)
    assert sample_image("astronaut", size=16, gray=True).shape == (16, 16)
    with pytest.raises(ValueError, match="unknown sample image"):
        sample_image("lena")


def test_quiet_also_silences_hugging_face_bars(monkeypatch):
    import subprocess
    import sys

    before = (  # quiet first, the libraries imported later
        "from iclr24.paperkit.progress import set_quiet; set_quiet(True)\n"
        "import transformers.utils.logging as t, huggingface_hub.utils as h\n"
        "assert not t.is_progress_bar_enabled() and h.are_progress_bars_disabled()\n"
    )
    after = (  # the libraries loaded first
        "import transformers.utils.logging as t, huggingface_hub.utils as h\n"
        "from iclr24.paperkit.progress import set_quiet; set_quiet(True)\n"
        "assert not t.is_progress_bar_enabled() and h.are_progress_bars_disabled()\n"
        "set_quiet(False); assert t.is_progress_bar_enabled() and not h.are_progress_bars_disabled()\n"
    )
    env = {k: v for k, v in __import__("os").environ.items() if k != "HF_HUB_DISABLE_PROGRESS_BARS"}
    for code in (before, after):
        p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
        assert p.returncode == 0, p.stderr[-1500:]
