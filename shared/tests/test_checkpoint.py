"""paperkit.load_checkpoint: a package's own checkpoint loads; anything else is one clear line, never torch's
message suggesting weights_only=False, and no pickled object ever runs."""

import os
import pickle

import pytest
import torch

from iclr24.paperkit import atomic_torch_save
from iclr24.paperkit import load_checkpoint

FMT = "iclr24.demo/1"
REQ = {"state": dict, "meta.arch": str, "meta.width": int}


def _good(tmp_path, **over):
    ck = {"format": FMT, "state": {"w": torch.ones(2)}, "meta": {"arch": "mlp", "width": 4}}
    ck.update(over)
    return atomic_torch_save(ck, tmp_path / "model.pt")


def _load(p, **kw):
    return load_checkpoint(p, format=FMT, required=kw.pop("required", REQ), what="demo checkpoint", **kw)


def _one_clear_line(err: pytest.ExceptionInfo, *must: str) -> str:
    msg = str(err.value)
    assert "\n" not in msg
    assert "weights_only" not in msg and "Weights only" not in msg
    for m in must:
        assert m in msg, msg
    return msg


def test_a_good_checkpoint_loads_with_its_tensors_on_cpu(tmp_path):
    ck = _load(_good(tmp_path))
    assert ck["meta"] == {"arch": "mlp", "width": 4}
    assert torch.equal(ck["state"]["w"], torch.ones(2)) and ck["state"]["w"].device.type == "cpu"
    # required as a plain list of (nested) keys
    assert _load(_good(tmp_path), required=["state", "meta.arch"])["format"] == FMT


def test_missing_file_and_folder_and_empty_file(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        _load(tmp_path / "nope.pt")
    _one_clear_line(e, "nope.pt", "does not exist")
    with pytest.raises(ValueError) as e:
        _load(tmp_path)
    _one_clear_line(e, "is a folder")
    (tmp_path / "empty.pt").write_bytes(b"")
    with pytest.raises(ValueError) as e:
        _load(tmp_path / "empty.pt")
    _one_clear_line(e, "empty.pt", "empty")


class _Evil:
    def __reduce__(self):
        return (os.system, ("touch PWNED",))


@pytest.mark.parametrize("writer", ["torch", "pickle"])
def test_a_crafted_pickle_never_runs_and_the_message_does_not_invite_weights_only_false(
    tmp_path, writer, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    p = tmp_path / "evil.pt"
    obj = {"format": FMT, "state": {"x": _Evil()}, "meta": {"arch": "mlp", "width": 4}}
    if writer == "torch":
        torch.save(obj, p)
    else:
        p.write_bytes(pickle.dumps(obj))
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "evil.pt", "not a file this package wrote", "demo checkpoint expected")
    assert not (tmp_path / "PWNED").exists()


@pytest.mark.parametrize("content", [b"hello world, not torch", b"PK\x03\x04 truncated zip"])
def test_foreign_or_damaged_bytes(tmp_path, content):
    p = tmp_path / "x.pt"
    p.write_bytes(content)
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "x.pt", "not a file this package wrote", "damaged, truncated or another format")


def test_a_truncated_checkpoint(tmp_path):
    p = _good(tmp_path)
    p.write_bytes(p.read_bytes()[: p.stat().st_size // 2])
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "damaged, truncated")


def test_not_a_dict(tmp_path):
    p = atomic_torch_save([torch.ones(1)], tmp_path / "list.pt")
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "holds a list, not a dict")


def test_format_tag_missing_or_other(tmp_path):
    p = atomic_torch_save({"state": {}, "meta": {"arch": "mlp", "width": 4}}, tmp_path / "untagged.pt")
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "no format tag", FMT)
    p2 = _good(tmp_path, format="iclr24.other/1")
    with pytest.raises(ValueError) as e:
        _load(p2)
    _one_clear_line(e, "'iclr24.other/1'", FMT)
    with pytest.raises(ValueError):  # legacy accepts untagged files only, never another tag
        _load(p2, legacy=True)


def test_legacy_accepts_an_untagged_file_with_every_required_key(tmp_path):
    p = atomic_torch_save({"state": {}, "meta": {"arch": "mlp", "width": 4}}, tmp_path / "old.pt")
    assert _load(p, legacy=True)["meta"]["arch"] == "mlp"
    q = atomic_torch_save({"state": {}, "meta": {}}, tmp_path / "oldbad.pt")
    with pytest.raises(ValueError) as e:
        _load(q, legacy=True)
    _one_clear_line(e, "no format tag")


def test_missing_nested_keys_are_named(tmp_path):
    p = _good(tmp_path, meta={"width": 4})
    with pytest.raises(ValueError) as e:
        _load(p)
    msg = _one_clear_line(e, "lacks meta.arch", "model.pt")
    assert "meta.width" not in msg
    p = _good(tmp_path, meta="not a dict")
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "lacks meta.arch, meta.width")


def test_wrong_types_are_named(tmp_path):
    p = _good(tmp_path, meta={"arch": 3, "width": 4})
    with pytest.raises(ValueError) as e:
        _load(p)
    _one_clear_line(e, "meta.arch of type int, expected str")
    p = _good(tmp_path, state=torch.ones(1))
    with pytest.raises(ValueError) as e:
        _load(p, required={"state": (dict, list)})
    _one_clear_line(e, "state of type Tensor, expected dict or list")


def test_format_argument_is_checked():
    with pytest.raises(TypeError):
        load_checkpoint("x.pt", format="", required=())
