"""Official formats read from a user path: PubLayNet / Rico preprocessed splits, LACE checkpoints, FIDNetV3.

The tiny files are written here in the official formats. ``write_processed_split`` pickles the same object graph
as PyTorch Geometric 2.x does for the official ``torch.save(self.collate(data_list))``: a
``torch_geometric.data.data.Data`` whose ``__dict__`` holds the feature/graph-store attribute classes and a
``GlobalStorage`` (``_mapping`` with the collated ``x``, ``y``, ``attr``; ``_parent`` the Data itself, as
``BaseStorage.__getstate__`` writes it), plus the ``slices`` dict. Stand-in modules of those names are put into
``sys.modules`` only while pickling, so torch_geometric is not needed.
"""

from __future__ import annotations

import json
import math
import types

import numpy as np
import pytest
import torch

from iclr24.lace import encode_layout
from iclr24.lace.cli import main
from iclr24.lace.fid import FIDNetV3
from iclr24.lace.fid import fid_features
from iclr24.lace.fid import layout_fid
from iclr24.lace.fid import load_fidnet
from iclr24.lace.official import load_official_checkpoint
from iclr24.lace.official import map_official_state_dict
from iclr24.lace.paper_scale import stand_in_modules
from iclr24.lace.real_data import CATEGORIES
from iclr24.lace.real_data import load_official_layouts
from iclr24.lace.real_data import real_config


def _fake_pyg():
    mods = {n: types.ModuleType(n) for n in ("torch_geometric", "torch_geometric.data")}
    data_mod = types.ModuleType("torch_geometric.data.data")
    storage_mod = types.ModuleType("torch_geometric.data.storage")

    class GlobalStorage:
        def __getstate__(self):
            return dict(self.__dict__)

    class DataTensorAttr:
        pass

    class DataEdgeAttr:
        pass

    class Data:
        pass

    class LaterPygClass:  # stands for a class another PyG version puts into Data.__dict__
        pass

    for cls, mod in (
        (GlobalStorage, storage_mod),
        (DataTensorAttr, data_mod),
        (DataEdgeAttr, data_mod),
        (Data, data_mod),
        (LaterPygClass, data_mod),
    ):
        cls.__module__ = mod.__name__
        cls.__qualname__ = cls.__name__
        setattr(mod, cls.__name__, cls)
    mods[data_mod.__name__] = data_mod
    mods[storage_mod.__name__] = storage_mod
    return mods, Data, GlobalStorage, DataTensorAttr, DataEdgeAttr, LaterPygClass


def write_processed_split(
    path, layouts: list[tuple[list[list[float]], list[int]]], later_pyg: bool = False
) -> None:
    """``layouts``: [(boxes [[xc, yc, w, h], ...], labels [...]), ...] -> an official ``<split>.pt``.
    ``later_pyg``: one more torch_geometric class in ``Data.__dict__``, as another PyG version might write."""
    mods, Data, GlobalStorage, TensorAttr, EdgeAttr, Later = _fake_pyg()
    with stand_in_modules(mods):
        x = torch.tensor([b for boxes, _ in layouts for b in boxes], dtype=torch.float)
        y = torch.tensor([c for _, labels in layouts for c in labels], dtype=torch.long)
        counts = torch.tensor([len(lab) for _, lab in layouts])
        off = torch.cat([torch.zeros(1, dtype=torch.long), counts.cumsum(0)])
        n = len(layouts)
        attr = {
            "name": [f"{k}.json" for k in range(n)],
            "width": torch.full((n,), 1440.0),
            "height": torch.full((n,), 2560.0),
            "filtered": torch.zeros(n, dtype=torch.bool),
            "has_canvas_element": torch.zeros(n, dtype=torch.bool),
            "NoiseAdded": torch.zeros(n, dtype=torch.bool),
        }
        data = Data()
        store = GlobalStorage()
        store.__dict__.update(_mapping={"x": x, "y": y, "attr": attr}, _parent=data)
        data.__dict__.update(_tensor_attr_cls=TensorAttr, _edge_attr_cls=EdgeAttr, _store=store)
        if later_pyg:
            data.__dict__["_later"] = Later()
        slices = {"x": off, "y": off.clone(), "attr": {k: torch.arange(n + 1) for k in attr}}
        torch.save((data, slices), path)


def official_backbone_state_dict(
    seq_dim: int, d: int, layers: int, ff: int, steps: int = 1000, seed: int = 0
):
    """A random state dict with the official ``util/backbone.py`` ``TransformerEncoder`` key names and shapes."""
    g = torch.Generator().manual_seed(seed)

    def r(*shape):
        return 0.2 * torch.randn(*shape, generator=g)

    sd = {"layer_in.weight": r(d, seq_dim), "layer_in.bias": r(d)}
    for i in range(layers):
        p = f"layers.{i}."
        sd.update(
            {
                p + "self_attn.in_proj_weight": r(3 * d, d),
                p + "self_attn.in_proj_bias": r(3 * d),
                p + "self_attn.out_proj.weight": r(d, d),
                p + "self_attn.out_proj.bias": r(d),
                p + "linear1.weight": r(ff, d),
                p + "linear1.bias": r(ff),
                p + "linear2.weight": r(d, ff),
                p + "linear2.bias": r(d),
                p + "norm1.emb.weight": r(steps, d),
                p + "norm1.linear.weight": r(2 * d, d),
                p + "norm1.linear.bias": r(2 * d),
                p + "norm2.weight": 1 + r(d),
                p + "norm2.bias": r(d),
            }
        )
    sd.update({"layer_out.weight": r(seq_dim, d), "layer_out.bias": r(seq_dim)})
    return sd


# ---------------------------------------------------------------- PubLayNet / Rico preprocessed splits

_LAYOUTS = [
    ([[0.5, 0.1, 0.8, 0.05], [0.3, 0.5, 0.35, 0.4], [0.7, 0.5, 0.35, 0.4]], [1, 0, 4]),
    ([[0.5, 0.5, 0.9, 0.9]], [3]),
    ([[0.25, 0.2, 0.4, 0.1], [0.25, 0.6, 0.4, 0.5]], [2, 0]),
]


def test_real_layouts_round_trip(tmp_path):
    root = tmp_path / "datasets"
    (root / "publaynet-max25" / "processed").mkdir(parents=True)
    write_processed_split(root / "publaynet-max25" / "processed" / "test.pt", _LAYOUTS)
    bbox, labels, mask = load_official_layouts(root, "publaynet", "test")
    assert bbox.shape == (3, 25, 4) and labels.shape == mask.shape == (3, 25)
    assert mask.sum(1).tolist() == [3, 1, 2]
    for k, (boxes, labs) in enumerate(_LAYOUTS):
        n = len(labs)
        assert torch.allclose(bbox[k, :n], torch.tensor(boxes))
        assert labels[k, :n].tolist() == labs
        assert not mask[k, n:].any() and (bbox[k, n:] == 0).all()
    assert [CATEGORIES["publaynet"][i] for i in labels[0, :3]] == ["title", "text", "figure"]
    # the file itself, the processed folder and a limit
    b2, _, m2 = load_official_layouts(
        root / "publaynet-max25" / "processed" / "test.pt", "publaynet", limit=2
    )
    assert b2.shape == (2, 25, 4) and m2.sum().item() == 4
    cfg = real_config("publaynet", dim=16, heads=2, layers=1, ff=32)
    tok = encode_layout(bbox, labels, mask, cfg.num_classes, cfg.max_elements)
    assert tok.shape == (3, 25, 10) and cfg.max_elements == 25 and cfg.overlap_weight == 1.0
    rico = real_config("rico")
    assert rico.num_classes == 25 and rico.seq_dim == 30 and rico.overlap_weight == 0.0
    assert real_config("rico13").num_classes == 13
    # a file of another PyG version naming one more torch_geometric class reads the same
    f = tmp_path / "later.pt"
    write_processed_split(f, _LAYOUTS, later_pyg=True)
    assert torch.equal(load_official_layouts(f, "publaynet")[0], bbox)


def test_real_layouts_bad_input(tmp_path):
    with pytest.raises(FileNotFoundError, match=r"publaynet-max25/processed/val.pt.*puar-playground/LACE"):
        load_official_layouts(tmp_path, "publaynet", "val")
    with pytest.raises(ValueError, match="unknown dataset"):
        load_official_layouts(tmp_path, "magazine")
    # labels beyond the dataset's categories: a Rico file read as PubLayNet
    f = tmp_path / "rico.pt"
    write_processed_split(f, [([[0.5, 0.5, 0.2, 0.2]], [17])])
    with pytest.raises(ValueError, match="5 publaynet categories"):
        load_official_layouts(f, "publaynet")
    assert load_official_layouts(f, "rico")[1][0, 0] == 17
    # more than 25 elements
    f = tmp_path / "long.pt"
    write_processed_split(f, [([[0.5, 0.5, 0.01, 0.01]] * 26, [0] * 26)])
    with pytest.raises(ValueError, match="26 elements, more than max_elements=25"):
        load_official_layouts(f, "publaynet")
    # boxes outside [0, 1]
    f = tmp_path / "out.pt"
    write_processed_split(f, [([[1.5, 0.5, 0.2, 0.2]], [0])])
    with pytest.raises(ValueError, match=r"in \[0, 1\]"):
        load_official_layouts(f, "publaynet")
    # another layout (a plain state dict) and a corrupt file
    f = tmp_path / "sd.pt"
    torch.save({"w": torch.zeros(2)}, f)
    with pytest.raises(ValueError, match="not an official preprocessed publaynet split"):
        load_official_layouts(f, "publaynet")
    f.write_bytes(b"not a torch file")
    with pytest.raises(ValueError, match="not an official preprocessed"):
        load_official_layouts(f, "publaynet")


def test_real_layouts_never_run_pickled_code(tmp_path):
    f = tmp_path / "evil.pt"
    torch.save((_Evil(tmp_path / "pwned"), {"x": torch.tensor([0, 1])}), f)
    with pytest.raises(ValueError, match="refused"):
        load_official_layouts(f, "publaynet")
    assert not (tmp_path / "pwned").exists()


class _Evil:
    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        import os

        return (os.system, (f"touch {self.path}",))


# ---------------------------------------------------------------- official LACE checkpoints


def _official_positions(d):
    """The official TransformerEncoder's pos_embed: SinusoidalPosEmb(num_steps=25, d) of positions 0..24."""
    pos = torch.arange(25, dtype=torch.float32) / 25 * 4000  # x / num_steps * rescale_steps
    half = d // 2
    freq = torch.exp(torch.arange(half) * -(math.log(10000) / (half - 1)))
    return torch.cat([(pos[:, None] * freq).sin(), (pos[:, None] * freq).cos()], dim=-1)


def _official_reference(sd, x, t, heads):
    """The official util/backbone.py TransformerEncoder forward, written from its code with the official keys."""
    F = torch.nn.functional
    d = sd["layer_in.weight"].shape[0]
    layers = 1 + max(int(k.split(".")[1]) for k in sd if k.startswith("layers."))
    h = F.softplus(F.linear(x, sd["layer_in.weight"], sd["layer_in.bias"])) + _official_positions(d)
    for i in range(layers):
        p = f"layers.{i}."
        emb = F.linear(
            F.silu(sd[p + "norm1.emb.weight"][t]), sd[p + "norm1.linear.weight"], sd[p + "norm1.linear.bias"]
        )
        scale, shift = emb.unsqueeze(1).chunk(2, dim=2)
        h = F.layer_norm(h, (d,)) * (1 + scale) + shift
        mha = torch.nn.MultiheadAttention(d, heads, batch_first=True)
        mha.load_state_dict(
            {k[len(p + "self_attn.") :]: v for k, v in sd.items() if k.startswith(p + "self_attn.")}
        )
        h = h + mha(h, h, h, need_weights=False)[0]
        z = F.layer_norm(h, (d,), sd[p + "norm2.weight"], sd[p + "norm2.bias"])
        h = h + F.linear(
            F.relu(F.linear(z, sd[p + "linear1.weight"], sd[p + "linear1.bias"])),
            sd[p + "linear2.weight"],
            sd[p + "linear2.bias"],
        )
        if i < layers - 1:
            h = F.softplus(h)
    return F.linear(h, sd["layer_out.weight"], sd["layer_out.bias"])


def test_official_checkpoint_maps_every_key_and_matches_the_official_forward(tmp_path):
    sd = official_backbone_state_dict(seq_dim=10, d=16, layers=2, ff=24, steps=1000)
    f = tmp_path / "publaynet_best.pt"
    torch.save({f"module.{k}": v for k, v in sd.items()}, f)  # as saved from nn.DataParallel
    model, cfg = load_official_checkpoint(f, CATEGORIES["publaynet"], heads=4)
    assert (cfg.dim, cfg.layers, cfg.ff, cfg.heads, cfg.max_elements, cfg.num_classes) == (
        16,
        2,
        24,
        4,
        25,
        5,
    )
    mapped = map_official_state_dict(sd, model)
    assert len(mapped) == len(sd) == len(model.state_dict())
    for k, v in model.state_dict().items():
        assert torch.equal(v, mapped[k])
    g = torch.Generator().manual_seed(1)
    x, t = torch.randn(3, 25, 10, generator=g), torch.tensor([0, 500, 999])
    with torch.no_grad():
        # the package's position table is computed in float64, the official one in float32 (differences
        # up to ~3e-4 in the sines of arguments up to 3840), hence 1e-3 rather than float32 round-off
        assert torch.allclose(model(x, t), _official_reference(sd, x, t, heads=4), atol=1e-3)
    # the position table (not in the state dict) is the official one
    assert torch.allclose(model.pos, _official_positions(16), atol=1e-3)
    # categories inferred from the width; a bare state dict or {"state_dict": ...}
    torch.save({"state_dict": sd}, f)
    assert load_official_checkpoint(f, heads=4)[1].categories == CATEGORIES["publaynet"]


def test_official_checkpoint_bad_input(tmp_path):
    f = tmp_path / "rico25_best.pt"
    torch.save(official_backbone_state_dict(seq_dim=30, d=8, layers=1, ff=8, steps=1000), f)
    with pytest.raises(ValueError, match="checkpoint for 25 categories .* expected 5"):
        load_official_checkpoint(f, CATEGORIES["publaynet"], heads=2)
    assert load_official_checkpoint(f, heads=2)[1].num_classes == 25
    sd = official_backbone_state_dict(seq_dim=10, d=8, layers=1, ff=8)
    sd["layers.0.extra.weight"] = torch.zeros(1)
    torch.save(sd, f)
    with pytest.raises(ValueError, match=r"unused keys \['layers.0.extra.weight'\]"):
        load_official_checkpoint(f, heads=2)
    sd = official_backbone_state_dict(seq_dim=10, d=8, layers=1, ff=8)
    sd["layers.0.linear2.weight"] = torch.zeros(8, 9)
    torch.save(sd, f)
    with pytest.raises(ValueError, match="linear2.weight' has shape"):
        load_official_checkpoint(f, heads=2)
    sd = official_backbone_state_dict(seq_dim=10, d=8, layers=1, ff=8)
    del sd["layers.0.norm2.bias"]
    torch.save(sd, f)
    with pytest.raises(ValueError, match=r"missing \['blocks.0.ln.bias'\]"):
        load_official_checkpoint(f, heads=2)
    torch.save({"config": {}, "state_dict": {"inp.weight": torch.zeros(2)}}, f)
    with pytest.raises(ValueError, match="not an official LACE state dict"):
        load_official_checkpoint(f)
    with pytest.raises(FileNotFoundError, match="puar-playground/LACE"):
        load_official_checkpoint(tmp_path / "missing.pt")


# ---------------------------------------------------------------- FIDNetV3


def _fidnet_file(tmp_path, num_label=5, d=16, layers=2, max_bbox=25):
    torch.manual_seed(0)
    net = FIDNetV3(num_label, d_model=d, nhead=4, num_layers=layers, max_bbox=max_bbox)
    opt = torch.optim.Adam(net.parameters())
    f = tmp_path / "FIDNetV3" / "publaynet-max25" / "model_best.pth.tar"
    f.parent.mkdir(parents=True, exist_ok=True)
    # what the official train_fid_model.py saves
    torch.save(
        {"epoch": 3, "state_dict": net.state_dict(), "best_loss": 0.5, "optimizer": opt.state_dict()}, f
    )
    return f


def test_fidnet_keys_are_the_official_ones():
    keys = set(FIDNetV3(5, d_model=8, nhead=2, num_layers=1).state_dict())
    for k in (
        "emb_label.weight",
        "fc_bbox.weight",
        "enc_fc_in.weight",
        "enc_transformer.token",
        "enc_transformer.token_mask",
        "enc_transformer.core.layers.0.self_attn.in_proj_weight",
        "enc_transformer.core.layers.0.linear1.weight",
        "enc_transformer.core.layers.0.norm2.bias",
        "fc_out_disc.weight",
        "pos_token",
        "dec_fc_in.weight",
        "dec_transformer.layers.0.linear2.bias",
        "fc_out_cls.weight",
        "fc_out_bbox.bias",
    ):
        assert k in keys


def test_fid_with_a_fidnet_checkpoint(tmp_path):
    f = _fidnet_file(tmp_path)
    net = load_fidnet(tmp_path / "FIDNetV3", num_label=5, dataset="publaynet")
    assert net.max_bbox == 25 and not net.training
    g = torch.Generator().manual_seed(0)
    n = 64
    mask = torch.arange(25)[None] < torch.randint(2, 8, (n, 1), generator=g)
    bbox = 0.2 + 0.6 * torch.rand(n, 25, 4, generator=g)
    bbox[..., 2:] *= 0.3
    labels = torch.randint(0, 5, (n, 25), generator=g)
    real = (bbox, labels, mask)
    feats = fid_features(net, *real)
    assert feats.shape == (n, 16) and np.isfinite(feats).all()
    # no position embedding: element order does not matter; padding is ignored
    perm = torch.randperm(7, generator=g)
    b2, l2, m2 = bbox.clone(), labels.clone(), mask.clone()
    b2[:, :7], l2[:, :7], m2[:, :7] = bbox[:, perm], labels[:, perm], mask[:, perm]
    assert np.allclose(fid_features(net, b2, l2, m2), feats, atol=1e-5)
    b3 = bbox.clone()
    b3[~mask] = 0.123
    assert np.allclose(fid_features(net, b3, labels, mask), feats, atol=1e-5)
    assert layout_fid(net, real, real) < 1e-6
    shifted = [layout_fid(net, (bbox + s, labels, mask), real) for s in (0.05, 0.15, 0.3)]
    assert 0 < shifted[0] < shifted[1] < shifted[2]
    assert load_fidnet(f).num_label == 5


def test_fidnet_bad_input(tmp_path):
    f = _fidnet_file(tmp_path, num_label=25)
    with pytest.raises(ValueError, match="FIDNetV3 for 25 categories, the layouts have 5"):
        load_fidnet(f, num_label=5)
    with pytest.raises(FileNotFoundError, match="fid.tar.gz"):
        load_fidnet(tmp_path / "nothing.pth.tar")
    with pytest.raises(FileNotFoundError, match="model_best.pth.tar"):
        load_fidnet(tmp_path)
    bad = tmp_path / "bad.pth.tar"
    torch.save({"state_dict": {"w": torch.zeros(1)}}, bad)
    with pytest.raises(ValueError, match="not a FIDNetV3 checkpoint"):
        load_fidnet(bad)
    net = load_fidnet(f)
    with pytest.raises(ValueError, match=r"labels must be in 0..24"):
        fid_features(net, torch.rand(2, 3, 4), torch.full((2, 3), 30), torch.ones(2, 3, dtype=torch.bool))


# ---------------------------------------------------------------- CLI on real layouts


def _dataset(tmp_path, name="publaynet", n=6):
    g = torch.Generator().manual_seed(3)
    layouts = []
    for _ in range(n):
        k = int(torch.randint(1, 5, (1,), generator=g))
        xc, yc = 0.3 + 0.4 * torch.rand(k, generator=g), 0.2 + 0.6 * torch.rand(k, generator=g)
        boxes = [[float(a), float(b), 0.2, 0.1] for a, b in zip(xc, yc, strict=True)]
        layouts.append((boxes, torch.randint(0, 5, (k,), generator=g).tolist()))
    folder = tmp_path / "datasets" / f"{name}-max25" / "processed"
    folder.mkdir(parents=True)
    for split in ("train", "test"):
        write_processed_split(folder / f"{split}.pt", layouts)
    return tmp_path / "datasets"


def test_cli_train_and_eval_on_real_layouts_with_fid(tmp_path, capsys):
    data = str(_dataset(tmp_path))
    fidnet = _fidnet_file(tmp_path, d=8, layers=1)
    m = tmp_path / "m"
    args = ["train", "--data", "publaynet", data, "--steps", "2", "--dim", "8", "--out", str(m), "--quiet"]
    assert main(args) == 0
    ev = ["eval", "--data", "publaynet", data, "--fidnet", str(fidnet), "--steps", "2", "--quiet"]
    assert main([*ev, "--checkpoint", str(m / "model"), "--out", str(tmp_path / "e")]) == 0
    rec = json.loads((tmp_path / "e" / "metrics.json").read_text())
    assert rec["metric_variant"] == "official"  # the default: the official evaluation's scoring
    res = rec["tasks"]
    assert set(res) == {"uncond", "c", "cwh", "complete", "refine"}
    assert all(np.isfinite(r["fid"]) and r["fid"] >= 0 for r in res.values())
    # an official checkpoint straight from its file (4 heads of width 16 here; 16 in the official models)
    off = tmp_path / "publaynet_best.pt"
    torch.save(official_backbone_state_dict(seq_dim=10, d=16, layers=1, ff=16), off)
    out = tmp_path / "e2"
    assert main([*ev, "--checkpoint", str(off), "--heads", "4", "--layouts", "3", "--out", str(out)]) == 0
    assert json.loads((out / "metrics.json").read_text())["tasks"]["c"]["fid"] >= 0
    assert (
        main(
            [
                "sample",
                "--checkpoint",
                str(off),
                "--heads",
                "4",
                "--task",
                "c2sp",
                "--categories",
                "title,text",
                "--n",
                "2",
                "--out",
                str(tmp_path / "s"),
                "--quiet",
            ]
        )
        == 0
    )
    capsys.readouterr()


def test_cli_real_layouts_bad_input(tmp_path, capsys):
    data = _dataset(tmp_path)
    m = tmp_path / "m"
    base = ["--steps", "1", "--dim", "8", "--quiet"]
    assert main(["train", "--data", "publaynet", str(tmp_path / "nowhere"), *base, "--out", str(m)]) == 2
    assert "no dataset folder or file" in capsys.readouterr().err
    assert main(["train", "--data", "rico", str(data), *base, "--out", str(m)]) == 2
    err = capsys.readouterr().err
    assert "rico25-max25/processed/train.pt" in err and len(err.strip().splitlines()) == 1
    assert main(["train", "--data", "magazine", str(data), *base, "--out", str(m)]) == 2
    assert "unknown dataset" in capsys.readouterr().err
    assert main(["train", "--data", "publaynet", str(data), *base, "--out", str(m)]) == 0
    ck = str(m / "model")
    # the synthetic test set has other categories than a PubLayNet model
    assert main(["eval", "--checkpoint", ck, "--steps", "1", "--out", str(tmp_path / "e")]) == 2
    assert "was trained on categories" in capsys.readouterr().err
    rico = _dataset(tmp_path / "r", "rico25")
    assert main(["eval", "--checkpoint", ck, "--data", "rico", str(rico), "--out", str(tmp_path / "e")]) == 2
    assert "expected" in capsys.readouterr().err
    fid25 = _fidnet_file(tmp_path / "f", num_label=25, d=8, layers=1)
    ev = [
        "eval",
        "--checkpoint",
        ck,
        "--data",
        "publaynet",
        str(data),
        "--steps",
        "1",
        "--out",
        str(tmp_path / "e"),
    ]
    assert main([*ev, "--fidnet", str(fid25)]) == 2
    assert "FIDNetV3 for 25 categories" in capsys.readouterr().err
    assert not (tmp_path / "e" / "metrics.json").exists()
