"""Files written through paperkit's atomic writers follow the umask (not mkstemp's 0600), like a plain open()."""

import os
import stat
import sys

import pytest

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import atomic_write_json
from iclr24.paperkit import atomic_write_text
from iclr24.paperkit.io import _current_umask

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX permission bits")


@pytest.fixture
def umask():
    old = os.umask(0o022)
    yield lambda m: os.umask(m)
    os.umask(old)


def _mode(p):
    return stat.S_IMODE(os.stat(p).st_mode)


@pytest.mark.parametrize("mask", [0o022, 0o002, 0o077, 0o027])
def test_new_files_get_0666_minus_umask(tmp_path, umask, mask):
    umask(mask)
    assert _current_umask() == mask
    expected = 0o666 & ~mask
    assert _mode(atomic_write_text(tmp_path / "a.md", "x")) == expected
    assert _mode(atomic_write_json(tmp_path / "b.json", {"a": 1})) == expected
    pytest.importorskip("torch")
    import torch

    assert _mode(atomic_torch_save({"w": torch.ones(1)}, tmp_path / "m.pt")) == expected


def test_a_plain_open_gives_the_same_mode(tmp_path, umask):
    umask(0o022)
    with open(tmp_path / "plain", "w") as f:
        f.write("x")
    assert _mode(atomic_write_text(tmp_path / "atomic", "x")) == _mode(tmp_path / "plain") == 0o644


def test_overwriting_keeps_the_existing_files_mode(tmp_path, umask):
    umask(0o022)
    p = atomic_write_text(tmp_path / "r.json", "1")
    os.chmod(p, 0o640)
    atomic_write_text(p, "2")
    assert p.read_text() == "2" and _mode(p) == 0o640


def test_saved_figures_follow_the_umask(tmp_path, umask):
    pytest.importorskip("matplotlib")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from iclr24.paperkit import save_figure

    umask(0o002)
    fig, ax = plt.subplots()
    ax.plot([0, 1])
    assert _mode(save_figure(fig, tmp_path / "f.png")) == 0o664
