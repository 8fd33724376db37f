"""Property test of the public API (``iclr24.fastervit.__all__``): seeded wrong shapes, dtypes, NaN/inf, empty
inputs, bad sizes and wrong file kinds either work or raise InputError; nothing else escapes."""

import torch

import iclr24.fastervit as fv
from iclr24.paperkit.runner.testing import Prober
from iclr24.paperkit.runner.testing import probe_arrays
from iclr24.paperkit.runner.testing import probe_files
from iclr24.paperkit.runner.testing import probe_floats
from iclr24.paperkit.runner.testing import probe_sizes

TINY = {"dim": 16, "in_dim": 8, "depths": [1, 1, 1, 1], "window_size": [7, 7, 2, 1]}


def test_public_api_refuses_bad_input(tmp_path):
    torch.manual_seed(0)
    p = Prober()
    # the pure tensor functions
    p.sweep(fv.window_partition, 0, probe_arrays((1, 4, 4, 4), torch=True), 2)
    p.sweep(fv.window_partition, 1, probe_sizes(), torch.zeros(1, 4, 4, 4))
    p.sweep(fv.window_reverse, 0, probe_arrays((4, 4, 4), torch=True), 2, 4, 4, 1)
    p.sweep(fv.window_reverse, 1, probe_sizes(), torch.zeros(4, 4, 4), 4, 4, 1)
    for f in (fv.ct_dewindow, fv.ct_window):
        p.sweep(f, 0, probe_arrays((1, 8, 4), torch=True), (2, 1), 2)
        p.sweep(f, 2, probe_sizes(), torch.zeros(1, 8, 4), (2, 1))
    for i in range(3):
        p.sweep(fv.carrier_token_geometry, i, probe_sizes(), *[14, 7, 2][:i], *[14, 7, 2][i + 1 :])
    p.sweep(fv.log_spaced_relative_coords, 0, [(lbl, (v, v)) for lbl, v in probe_sizes()], (7, 7))
    p.sweep(fv.relative_position_index, 0, [(lbl, (v, 3)) for lbl, v in probe_sizes()])
    # the building blocks: bad constructor sizes and rates, then wrong inputs to a good block
    p.sweep(fv.WindowAttention, "dim", probe_sizes(), num_heads=2, resolution=2, seq_length=4)
    p.sweep(fv.WindowAttention, "attn_drop", probe_floats(), dim=8, num_heads=2, resolution=2, seq_length=4)
    p.sweep(fv.HAT, "dim", probe_sizes(), num_heads=2, window_size=2)
    p.sweep(fv.HAT, "window_size", probe_sizes(), dim=8, num_heads=2)
    p.sweep(fv.HAT, "drop_path", probe_floats(), dim=8, num_heads=2, window_size=2)
    p.sweep(fv.RelativePositionBias, 0, probe_sizes(), 2, 4)
    p.sweep(fv.TokenPositionEmbedding, 0, probe_sizes(), 2)
    p.sweep(fv.TokenInitializer, 1, probe_sizes(), 8, 7, 2)
    p.sweep(fv.ConvBlock, 0, probe_sizes())
    p.sweep(fv.Downsample, 0, probe_sizes())
    p.sweep(fv.PatchEmbed, "dim", probe_sizes())
    p.sweep(fv.FasterViTLayer, "depth", probe_sizes(), dim=8, input_resolution=4, num_heads=2, window_size=2)
    p.sweep(fv.FasterViT, "dim", probe_sizes(), **{k: v for k, v in TINY.items() if k != "dim"})
    attn = fv.WindowAttention(8, num_heads=2, resolution=2, seq_length=4)
    hat = fv.HAT(8, num_heads=2, window_size=2)
    layer = fv.FasterViTLayer(
        dim=8, depth=1, input_resolution=4, num_heads=2, window_size=2, downsample=False
    )
    with torch.no_grad():
        p.sweep(attn, 0, probe_arrays((2, 4, 8), torch=True))
        p.sweep(hat, 0, probe_arrays((2, 4, 8), torch=True))
        p.sweep(fv.TokenInitializer(8, 4, 2, ct_size=1), 0, probe_arrays((1, 8, 4, 4), torch=True))
        for block in (fv.ConvBlock(8).eval(), fv.Downsample(8), layer):
            p.sweep(block, 0, probe_arrays((1, 8, 4, 4), torch=True))
        p.sweep(fv.PatchEmbed(3, 4, 8).eval(), 0, probe_arrays((1, 3, 8, 8), torch=True))
        model = fv.create_model("faster_vit_0_224", num_classes=3, **TINY).eval()
        p.sweep(model, 0, probe_arrays((1, 3, 32, 32), torch=True))
    # the registry and the checkpoint readers
    p(fv.list_variants)
    p.sweep(fv.create_model, 0, [("unknown", "faster_vit_99"), ("empty", ""), ("int", 3)])
    p.sweep(fv.create_model, "num_classes", probe_sizes(huge=False), "faster_vit_0_224", **TINY)
    p.sweep(fv.create_model, "checkpoint_path", probe_files(tmp_path, ".pth"), "faster_vit_0_224", **TINY)
    for suffix in (".pth", ".pth.tar"):
        p.sweep(fv.read_state_dict, 0, probe_files(tmp_path, suffix))
        p.sweep(fv.load_checkpoint, 1, probe_files(tmp_path, suffix), model)
    # the model folder and your own data (train's data / val_data, evaluate's loader)
    p.sweep(fv.FasterViT.from_pretrained, 0, probe_files(tmp_path, ""))
    p.sweep(fv.read_state_dict, 0, probe_files(tmp_path, ".safetensors"))
    from iclr24.fastervit.train import TrainConfig
    from iclr24.fastervit.train import evaluate
    from iclr24.fastervit.train import train

    cfg = TrainConfig(epochs=1, img_size=32, model_kwargs=TINY, max_steps_per_epoch=1)
    p.sweep(
        train,
        1,
        [*probe_arrays((4, 3, 32, 32), torch=True), *probe_files(tmp_path, "")],
        cfg,
        show_progress=False,
    )
    p.sweep(evaluate, 1, probe_arrays((4, 3, 32, 32), torch=True), model)
    p.check()
    p.assert_covers(fv)
