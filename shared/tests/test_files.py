"""load_npz / load_image: a truncated, empty or foreign file is one clear error; save_figure is atomic."""

import numpy as np
import pytest

from iclr24.paperkit import save_figure
from iclr24.paperkit.data.readers import load_image
from iclr24.paperkit.data.readers import load_npz


def test_load_npz_roundtrip_and_keys(tmp_path):
    p = tmp_path / "a.npz"
    np.savez(p, x=np.arange(3), y=np.ones((2, 2)))
    d = load_npz(p, keys=("x",))
    assert d["x"].tolist() == [0, 1, 2] and d["y"].shape == (2, 2)
    with pytest.raises(ValueError, match=r"lacks the array\(s\) \['z'\]"):
        load_npz(p, keys=("z",))


@pytest.mark.parametrize(
    "content,msg",
    [
        (b"", "is empty"),
        (b"a,b\n1,2\n", "another format"),
        (None, "damaged|truncated"),  # truncated real archive
    ],
)
def test_load_npz_bad_files(tmp_path, content, msg):
    p = tmp_path / "bad.npz"
    if content is None:
        np.savez(p, x=np.arange(10000))
        p.write_bytes(p.read_bytes()[:-200])
    else:
        p.write_bytes(content)
    with pytest.raises(ValueError, match=msg) as e:
        load_npz(p)
    assert "allow_pickle" not in str(e.value)


def test_load_npz_object_arrays_are_refused_without_pickle_hint(tmp_path):
    p = tmp_path / "obj.npz"
    np.savez(p, x=np.array([{"a": 1}], dtype=object))
    with pytest.raises(ValueError, match="Python objects") as e:
        load_npz(p)
    assert "allow_pickle" not in str(e.value)


def test_load_npz_missing_and_folder(tmp_path):
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_npz(tmp_path / "nope.npz")
    with pytest.raises(IsADirectoryError):
        load_npz(tmp_path)


def test_load_image(tmp_path):
    from PIL import Image

    p = tmp_path / "a.png"
    Image.fromarray(np.full((4, 5, 3), 255, np.uint8)).save(p)
    img = load_image(p)
    assert img.shape == (4, 5, 3) and img.dtype == np.float32 and img.max() == 1.0
    assert load_image(p, mode="L").shape == (4, 5)
    bad = tmp_path / "t.png"
    bad.write_bytes(p.read_bytes()[:30])
    with pytest.raises(ValueError, match="damaged|not an image"):
        load_image(bad)
    txt = tmp_path / "x.png"
    txt.write_text("hello")
    with pytest.raises(ValueError, match="not an image"):
        load_image(txt)
    with pytest.raises(ValueError, match="mode"):
        load_image(p, mode="CMYK")


def test_save_figure_leaves_no_partial_file(tmp_path):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig = plt.figure()

    class Boom:
        def savefig(self, *a, **k):
            raise RuntimeError("render failed")

    with pytest.raises(RuntimeError):
        save_figure(Boom(), tmp_path / "x.png")
    assert list(tmp_path.iterdir()) == []
    assert save_figure(fig, tmp_path / "y.svg").read_text().lstrip().startswith("<?xml")
