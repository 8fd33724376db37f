"""Bad input at the Python API: loaders raise InputFileError naming the file (never torch's raw UnpicklingError,
RuntimeError or EOFError, never its weights_only=False advice); metrics refuse empty masks, non-boolean masks and
NaN boxes instead of answering."""

import pickle

import pytest
import torch

from iclr24.lace import alignment_score
from iclr24.lace import load_any_checkpoint
from iclr24.lace import load_checkpoint
from iclr24.lace import overlap_score
from iclr24.lace.data import synthetic_aligned_layouts
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


class _Evil:
    def __reduce__(self):
        return (print, ("ran",))


def _files(tmp_path):
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    truncated = tmp_path / "truncated.pt"
    torch.save({"config": {}, "state_dict": {"w": torch.zeros(64)}}, truncated)
    truncated.write_bytes(truncated.read_bytes()[:100])
    pickled = tmp_path / "pickled.pt"
    torch.save({"config": {}, "state_dict": {}, "x": _Evil()}, pickled)
    raw = tmp_path / "raw.pt"
    raw.write_bytes(pickle.dumps({"a": 1}))
    return {
        "0-byte": empty,
        "truncated": truncated,
        "pickled": pickled,
        "raw pickle": raw,
        "folder": tmp_path,
    }


@pytest.mark.parametrize("kind", ["0-byte", "truncated", "pickled", "raw pickle", "folder"])
def test_load_checkpoint_refuses_bad_files_in_one_safe_line(tmp_path, kind):
    path = _files(tmp_path)[kind]
    for load in (load_checkpoint, load_any_checkpoint):
        with pytest.raises(InputFileError) as e:
            load(path)
        assert str(path) in str(e.value)
        msg = str(e.value).replace(str(path), "P")
        assert "weights_only" not in msg and "trust" not in msg and "\n" not in msg


def test_load_checkpoint_of_a_foreign_config_is_an_input_file_error(tmp_path):
    p = tmp_path / "other.pt"
    torch.save({"config": {"no_such_field": 1}, "state_dict": {}}, p)
    with pytest.raises(InputFileError, match="config"):
        load_checkpoint(p)


def test_alignment_score_refuses_an_empty_or_float_mask():
    b, _, m = synthetic_aligned_layouts(2, seed=0)
    with pytest.raises(InputError, match="no real element"):
        alignment_score(b, torch.zeros_like(m))
    with pytest.raises(InputError, match="booleans"):
        alignment_score(b, torch.full(m.shape, 0.5))
    assert torch.equal(alignment_score(b, m.float()), alignment_score(b, m))  # a 0/1 mask is the same mask


def test_overlap_score_refuses_nan_boxes_and_an_empty_mask():
    b, _, m = synthetic_aligned_layouts(2, seed=0)
    bad = b.clone()
    bad[m] = float("nan")
    with pytest.raises(InputError, match="NaN"):
        overlap_score(bad, m)
    with pytest.raises(InputError, match="no real element"):
        overlap_score(b, torch.zeros_like(m))
    assert torch.isfinite(overlap_score(b, m)).all()
