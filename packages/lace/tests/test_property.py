"""Property test of the public API (``iclr24.lace.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty masks,
bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.lace as lace
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

SKIP = {"layout_grid": "a plotting helper over layouts this package made (tested in test_render)"}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    b, lab, m = lace.synthetic_aligned_layouts(3, seed=0, max_elements=10)
    bad_boxes = probe_arrays(tuple(b.shape), torch=True)
    bad_masks = [*probe_arrays(tuple(m.shape), torch=True, dtype="bool"), ("all-False", torch.zeros_like(m))]
    bad_masks.append(("float 0.5", torch.full(m.shape, 0.5)))
    for f in (
        lace.alignment_score,
        lace.overlap_score,
        lace.alignment_loss,
        lace.overlap_loss,
        lace.pairwise_iou,
    ):
        p.sweep(f, 0, bad_boxes, m)
        p.sweep(f, 1, bad_masks, b)
    p.sweep(lace.global_alignment_loss, 1, bad_boxes, b, m)
    p.sweep(lace.alignment_loss, "scale", probe_floats(), b, m)
    p.sweep(lace.beautify, "iterations", probe_sizes(), b, m)
    p.sweep(lace.beautify, 0, bad_boxes, m, iterations=2)
    p.sweep(lace.beautify, "lr", probe_floats(), b, m, iterations=2)
    # layouts as (bbox, labels, mask) triples, every part wrong in turn
    gen = (b, lab, m)
    bad_layouts = [(f"bbox {k}", (x, lab, m)) for k, x in bad_boxes]
    bad_layouts += [
        (f"labels {k}", (b, x, m)) for k, x in probe_arrays(tuple(lab.shape), torch=True, dtype="int64")
    ]
    bad_layouts += [(f"mask {k}", (b, lab, x)) for k, x in bad_masks]
    bad_layouts += [("labels out of range", (b, lab + 99, m)), ("a pair", (b, lab))]
    p.sweep(lace.max_iou, 0, bad_layouts, gen)
    p.sweep(lace.feature_fd, 0, bad_layouts, gen, 4)
    p.sweep(lace.layout_metrics, 0, bad_layouts, gen, 4, "c")
    p.sweep(lace.layout_metrics, 2, probe_sizes(), gen, gen, "c")
    p.sweep(lace.layout_metrics, 3, [("unknown task", "nope"), ("int", 3)], gen, gen, 4)
    p.sweep(lace.encode_layout, 0, bad_boxes, lab, m, 4, 10)
    p.sweep(lace.encode_layout, 3, probe_sizes(), b, lab, m, 10)
    p.sweep(lace.finalize, 0, probe_arrays((3, 10, 8), torch=True), 4)
    p.sweep(lace.labels_from_names, 0, [("unknown", [["title", "nope"]]), ("empty", []), ("int", 3)])
    # schedules and configs
    p.sweep(lace.cosine_betas, 0, probe_sizes())
    p.sweep(lace.cosine_betas, "s", probe_floats())
    p.sweep(lace.ddim_timesteps, 0, probe_sizes())
    p.sweep(lace.constraint_weight, 0, [*probe_floats(), *probe_arrays((4,), torch=True)])
    p.sweep(lace.synthetic_aligned_layouts, 0, probe_sizes())
    p.sweep(lace.synthetic_aligned_layouts, "max_elements", probe_sizes(), 2)
    for field in ("max_elements", "dim", "heads", "steps", "batch_size", "num_timesteps", "ddim_steps"):
        p.sweep(lace.LaceConfig, field, probe_sizes())
    for field in ("lr", "align_weight", "complete_keep", "ema", "grad_clip"):
        p.sweep(lace.LaceConfig, field, probe_floats())
    p.sweep(lace.LaceConfig, "categories", [("empty", ()), ("str", "title"), ("dupes", ("a", "a"))])
    p.sweep(lace.real_config, 0, [("unknown", "nope"), ("int", 3)])
    cfg = lace.LaceConfig(
        max_elements=10, dim=16, heads=2, layers=1, ff=16, num_timesteps=20, ddim_steps=2, steps=1
    )
    p.sweep(lace.make_model, 0, [("not a config", {"dim": 16}), ("None", None)])
    model = lace.make_model(cfg)
    tokens = lace.encode_layout(b, lab, m, 4, 10)
    p.sweep(lace.train, 1, probe_arrays(tuple(tokens.shape), torch=True), cfg, steps=1)
    p.sweep(lace.train, "steps", probe_sizes(), cfg, tokens)
    p.sweep(lace.training_loss, 1, probe_arrays(tuple(tokens.shape), torch=True), model, cfg=cfg)
    p.sweep(lace.generate, "n", probe_sizes(), model, cfg, steps=2)
    p.sweep(lace.generate, "steps", probe_sizes(), model, cfg, n=2)
    p.sweep(lace.generate, "task", [("unknown", "nope"), ("int", 3)], model, cfg, n=2, steps=2)
    p.sweep(lace.generate, "layouts", bad_layouts, model, cfg, task="c", steps=2)
    p.sweep(lace.save_checkpoint, 2, [("folder", tmp_path)], model, cfg)
    # the FID network
    p.sweep(lace.FIDNetV3, 0, probe_sizes())
    net = lace.FIDNetV3(num_label=4, d_model=16, nhead=2, num_layers=1, max_bbox=10).eval()
    p.sweep(lace.fid_features, 1, bad_boxes, net, lab, m)
    p.sweep(lace.fid_features, "batch_size", probe_sizes(), net, b, lab, m)
    p.sweep(lace.layout_fid, 1, bad_layouts, net, gen)
    # every loader on every wrong file kind
    loaders = (
        lace.load_checkpoint,
        lace.load_any_checkpoint,
        lace.load_official_checkpoint,
        lace.load_fidnet,
        lace.load_official_layouts,
    )
    p.sweep_loaders(loaders, tmp_path, (".pt", ".pth.tar"))
    # the model folder and your own data
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    from iclr24.lace.model import LayoutDenoiser

    p.sweep(LayoutDenoiser.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(lace.LayoutDenoiser, "dim", [("not divisible", 7)], 9, 6, heads=2)
    p.sweep(
        model.save_pretrained, 0, [("a file", probe_files(tmp_path, ".x")[3][1]), ("busy folder", tmp_path)]
    )
    loaders = [
        (k, TensorDataset(v)) for k, v in probe_arrays(tuple(tokens.shape), torch=True) if v.ndim and len(v)
    ]
    loaders += [("two fields", TensorDataset(b, lab)), ("float labels", DataLoader(TensorDataset(b, lab.float(), m))),
                ("four fields", TensorDataset(b, lab, m, m)), ("strings", [("a", "b")])]  # fmt: skip
    p.sweep(lace.train, 1, loaders, cfg, steps=1)
    p.sweep_loop_options(lace.train, tmp_path, cfg, tokens, steps=1)
    p.check()
    p.assert_covers(lace, skip=SKIP)
