import pickle
from collections import OrderedDict

import numpy as np
import pytest
import torch

from iclr24.drum_rules import DRUM
from iclr24.drum_rules.checkpoint import load_checkpoint
from iclr24.drum_rules.checkpoint import load_model
from iclr24.drum_rules.checkpoint import load_official_checkpoint
from iclr24.drum_rules.checkpoint import official_key_map
from iclr24.drum_rules.checkpoint import save_checkpoint
from iclr24.drum_rules.cli import main


class _Payload:
    """Unpickling this (with a plain unpickler) would create ``marker``: builtins.open(marker, "w")."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.mark.filterwarnings("ignore:Detected pickle protocol")
@pytest.mark.parametrize("container", ["zip", "legacy"])
def test_malicious_pickle_is_refused_without_running(tmp_path, container, capsys):
    marker = tmp_path / "pwned"
    bad = tmp_path / "model.pt"
    obj = {"state_dict": {}, "meta": _Payload(marker)}
    if container == "zip":
        torch.save(obj, bad)  # torch's zip container: what `drum-rules eval --model` would be handed
    else:
        bad.write_bytes(pickle.dumps(obj))
    assert not marker.exists()
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_checkpoint(bad)
    with pytest.raises(ValueError, match="not a readable checkpoint"):
        load_official_checkpoint(bad)
    assert not marker.exists(), "the payload ran while loading"
    assert main(["eval", "--model", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "not a readable checkpoint" in err[0]
    assert not marker.exists()
    # the file really is malicious: a plain unpickler runs the payload (this is what weights_only prevents)
    if container == "legacy":
        pickle.loads(bad.read_bytes())
        assert marker.exists()


def _tiny_model():
    m = DRUM(2, rank=2, steps=2, embed_dim=4, hidden_dim=3, seed=0)
    m.head_relations = [0, 1]
    return m


def test_garbage_and_truncated_files_give_one_line(tmp_path, capsys):
    good = save_checkpoint(tmp_path / "good.pt", _tiny_model(), 0.25, "family:3")
    m, beta, spec = load_checkpoint(good)
    assert beta == 0.25 and spec == "family:3" and m.head_relations == [0, 1]
    garbage = tmp_path / "garbage.pt"
    garbage.write_bytes(np.random.default_rng(0).bytes(2000))
    cut = tmp_path / "truncated.pt"
    cut.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    empty = tmp_path / "empty.pt"
    empty.write_bytes(b"")
    for f in (garbage, cut, empty):
        with pytest.raises(ValueError, match="not a readable checkpoint") as e:
            load_checkpoint(f)
        assert "\n" not in str(e.value) and str(f) in str(e.value)
        assert main(["eval", "--model", str(f), "--quiet"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and "Traceback" not in err[0]
    torch.save({"weights": torch.zeros(2)}, tmp_path / "other.pt")
    with pytest.raises(ValueError, match="not a drum-rules checkpoint"):
        load_checkpoint(tmp_path / "other.pt")
    with pytest.raises(ValueError, match="is a folder"):
        load_checkpoint(tmp_path)


def _official_state_dict(m: DRUM) -> OrderedDict:
    """Our parameters under FaithfulRE's ``Learner`` names (query_embeddings, lstm_list.<j>, linear)."""
    out = OrderedDict()
    for k, v in m.state_dict().items():
        if k.startswith("fixed_"):
            continue
        k = k.replace("query_embedding.", "query_embeddings.").replace("lstms.", "lstm_list.")
        out[k] = v.clone()
    return out


def test_official_checkpoint_layout_loads(tmp_path):
    src = _tiny_model()
    sd = _official_state_dict(src)
    assert "query_embeddings.weight" in sd and "lstm_list.1.weight_hh_l0_reverse" in sd
    path = tmp_path / "family-drum-r2s3.pt"
    torch.save(sd, path)  # the official files are bare state_dicts written by torch.save
    m = load_official_checkpoint(path, steps=2, aggregation="mm")
    assert (m.n_relations, m.rank, m.steps, m.aggregation) == (2, 2, 2, "mm")
    q = torch.arange(4)
    assert torch.allclose(m.attention(q), src.attention(q))
    with pytest.raises(ValueError, match="official FaithfulRE state_dict: use load_official_checkpoint"):
        load_checkpoint(path)
    ours = save_checkpoint(tmp_path / "ours.pt", src, 0.1, "family:3")
    with pytest.raises(ValueError, match="not an official one"):
        load_official_checkpoint(ours)
    with pytest.raises(ValueError, match="unexpected parameter 'predictor.w'"):
        official_key_map({**sd, "predictor.w": torch.zeros(1)})
    bad = OrderedDict(sd)
    bad["linear.weight"] = torch.zeros(4, 6)  # 4 operators: not 2|R|+1
    torch.save(bad, tmp_path / "bad.pt")
    with pytest.raises(ValueError, match="inconsistent official checkpoint shapes"):
        load_official_checkpoint(tmp_path / "bad.pt")


@pytest.mark.filterwarnings("ignore::iclr24.drum_rules.train.DegenerateBetaWarning")
def test_cli_converts_an_official_checkpoint(tmp_path, capsys):
    src = DRUM(12, rank=2, steps=2, embed_dim=4, hidden_dim=3, seed=1)  # the family KG's 12 relations
    path = tmp_path / "family-drum-r2s3.pt"
    torch.save(_official_state_dict(src), path)
    out = tmp_path / "conv"
    assert main(["convert", str(path), "family:3", "--out", str(out), "--quiet"]) == 0
    assert "beta =" in capsys.readouterr().out
    m, beta, spec = load_model(out / "model")
    assert spec == "family:3" and beta >= 0 and np.allclose(m.attention_for(3), src.attention_for(3))
    assert main(["eval", "--model", str(out / "model"), "--quiet"]) == 0
    assert '"auc_pr"' in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["convert", str(path), "family:3", "--steps", "0", "--out", str(out)])
    assert e.value.code == 2
    assert main(["convert", str(tmp_path / "nope.pt"), "family:3", "--out", str(out), "--quiet"]) == 2
