"""Real datasets: TPT selects its views once, class names for WordNet-ID folders (ImageNet-A/-R/ImageNet), the
official full-resolution views read lazily from a class folder, and the paper-scale configuration."""

import json
from pathlib import Path

import pytest
import torch
from PIL import Image

from iclr24.rlcf.cli import main
from iclr24.rlcf.data import DIGIT_NAMES as NAMES
from iclr24.rlcf.data import ImageFolderTTA
from iclr24.rlcf.data import imagenet_classes
from iclr24.rlcf.data import read_class_names
from iclr24.rlcf.data import resolve_class_names
from iclr24.rlcf.reward import CLIPReward
from iclr24.rlcf.tta import TTAConfig
from iclr24.rlcf.tta import TTARunner
from iclr24.rlcf.views import CLIP_MEAN
from iclr24.rlcf.views import CLIP_STD
from iclr24.rlcf.views import clip_views
from iclr24.rlcf.views import digit_views


# -- TPT: confident views selected once (azshue/TPT tpt_classification.py; RLCF TPT/tune_cls_tpt.py) -------------
@pytest.mark.parametrize("coupled", [False, True])
@pytest.mark.parametrize("method", ["tpt", "rlcf", "kd"])
def test_every_method_selects_its_confident_views_once(toy_pair, digits_kw, method, coupled):
    policy, reward_model = toy_pair
    cfg = TTAConfig(method=method, mode="image", steps=3, lr=1e-2, n_views=16, selection_p=0.25)
    runner = TTARunner(policy, CLIPReward(reward_model), NAMES, cfg, **digits_kw)
    runner._batch_coupled = coupled  # True: the official order, kept for encoders with BatchNorm
    seen = []
    hook = policy.visual.register_forward_hook(
        lambda m, inp, out: seen.append((inp[0].shape[0], torch.is_grad_enabled()))
    )
    import iclr24.rlcf.tta as tta

    picks = []
    real = tta.select_confident

    def spy(logits, p):
        idx = real(logits, p)
        picks.append(idx.clone())
        return idx

    tta.select_confident = spy
    try:
        g = torch.Generator().manual_seed(0)
        runner.adapt(digit_views(torch.rand(1, 8, 8, generator=g), 16, generator=g))
    finally:
        tta.select_confident = real
        hook.remove()
    graphs = [n for n, grad in seen if grad]
    assert len(picks) == 1 and picks[0].numel() == 4
    if coupled:  # step 1 forwards all 16 views with their graph and keeps 4; steps 2 and 3 the same 4 only
        assert graphs == [16, 4, 4]
    else:  # all 16 views once without a graph (selection, first prediction), then the same 4 views at each step
        assert graphs == [4, 4, 4] and seen[0] == (16, False)


# -- class names ------------------------------------------------------------------------------------------------
def test_shipped_class_lists_match_the_official_masks():
    wn, names = imagenet_classes("imagenet")
    assert len(wn) == len(names) == 1000 and wn == sorted(wn)
    assert (wn[0], names[0], names[6], names[999]) == ("n01440764", "tench", "stingray", "toilet paper")
    a_wn, a_names = imagenet_classes("imagenet-a")
    r_wn, r_names = imagenet_classes("imagenet-r")
    assert len(a_wn) == len(r_wn) == 200 and a_wn == sorted(a_wn) and r_wn == sorted(r_wn)
    pos = {w: i for i, w in enumerate(wn)}
    # official imagenet_a_mask starts 6, 11, 13, 15, 17, 22, 23, 27, 30, 37 (thousand_k_to_200)
    assert [pos[w] for w in a_wn[:10]] == [6, 11, 13, 15, 17, 22, 23, 27, 30, 37]
    # official imagenet_r_wnids include goldfish, great white shark, hammerhead, stingray, goldfinch
    assert [pos[w] for w in r_wn[:5]] == [1, 2, 4, 6, 8]
    assert a_names[0] == "stingray" and r_names[0] == "goldfish"
    with pytest.raises(ValueError, match="class set"):
        imagenet_classes("imagenet-b")


def _folder(root: Path, classes, n=1, size=(40, 30)):
    g = torch.Generator().manual_seed(0)
    for c in classes:
        (root / c).mkdir(parents=True)
        for j in range(n):
            arr = (torch.rand(size[1], size[0], 3, generator=g) * 255).to(torch.uint8).numpy()
            Image.fromarray(arr, mode="RGB").save(root / c / f"{j}.jpg")
    return root


def test_class_names_for_wordnet_id_folders(tmp_path):
    a_wn, a_names = imagenet_classes("imagenet-a")
    root = _folder(tmp_path / "ina", [a_wn[3], a_wn[0], a_wn[199]])
    ds = ImageFolderTTA(root, classes="imagenet-a", n_views=None)
    assert len(ds.classnames) == 200 and ds.classnames == a_names  # the official 200-way label space
    assert ds.labels.tolist() == [0, 3, 199]  # folders sorted, labels by WordNet ID
    img, y = ds[2]
    assert isinstance(img, Image.Image) and img.size == (40, 30) and y == 199
    with pytest.raises(ValueError, match="WordNet IDs .* --classes"):
        ImageFolderTTA(root)  # "a photo of a n01498041." is refused
    with pytest.raises(ValueError, match="not imagenet-r classes"):
        ImageFolderTTA(root, classes="imagenet-r")  # n01498041 (index 6) is in -A, not all of these are in -R
    with pytest.raises(ValueError, match="either"):
        resolve_class_names(["a"], class_names=["x"], classes="imagenet")


def test_class_name_files(tmp_path):
    folders = ["n01", "n02", "n03"]
    txt = tmp_path / "names.txt"
    txt.write_text("red panda\n\ntree frog\nsea lion\n")
    assert read_class_names(txt, folders) == ["red panda", "tree frog", "sea lion"]
    js = tmp_path / "names.json"
    js.write_text(json.dumps({"n03": "sea lion", "n01": "red panda", "n02": "tree frog", "extra": "x"}))
    assert resolve_class_names(folders, class_names=js)[0] == ["red panda", "tree frog", "sea lion"]
    txt.write_text("red panda\ntree frog\n")
    with pytest.raises(ValueError, match="2 names for 3 class folders"):
        read_class_names(txt, folders)
    js.write_text(json.dumps({"n01": "red panda"}))
    with pytest.raises(ValueError, match="no name for 2 of the 3"):
        read_class_names(js, folders)
    js.write_text("{not json")
    with pytest.raises(ValueError, match="not valid JSON"):
        read_class_names(js, folders)
    js.write_text(json.dumps(["a", "b", "c"]))
    with pytest.raises(ValueError, match="JSON object"):
        read_class_names(js, folders)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        read_class_names(tmp_path / "missing.txt", folders)
    # non-WordNet folders with a named set: one folder per class of the set, else a count error
    with pytest.raises(ValueError, match="200 classes but the data has 3"):
        resolve_class_names(["x", "y", "z"], classes="imagenet-r")


# -- official full-resolution views, read lazily ------------------------------------------------------------------
def test_views_are_official_crops_of_the_full_resolution_image():
    from torchvision.transforms import v2

    g = torch.Generator().manual_seed(3)
    arr = (torch.rand(3, 300, 500, generator=g) * 255).to(torch.uint8)
    pil = Image.fromarray(arr.permute(1, 2, 0).numpy(), mode="RGB")
    views = clip_views(pil, 4, resolution=64, normalize=False, generator=torch.Generator().manual_seed(0))
    to_t = v2.Compose([v2.PILToTensor(), v2.ToDtype(torch.float32, scale=True)])
    # view 0: Resize(64, bicubic) + CenterCrop(64) of the full image
    base = v2.Compose([v2.Resize(64, interpolation=v2.InterpolationMode.BICUBIC), v2.CenterCrop(64)])
    assert torch.allclose(views[0], to_t(base(pil)))
    # views 1..: RandomResizedCrop(64) of the FULL image, bilinear (torchvision's default, as the official code),
    # then a flip; the same torch seed reproduces them
    seed = int(torch.randint(2**31 - 1, (1,), generator=torch.Generator().manual_seed(0)))
    torch.manual_seed(seed)
    rrc = v2.Compose(
        [v2.RandomResizedCrop(64, interpolation=v2.InterpolationMode.BILINEAR), v2.RandomHorizontalFlip()]
    )
    expected = torch.stack([to_t(rrc(pil)) for _ in range(3)])
    assert torch.allclose(views[1:], expected)
    # the tensor path gives the same crops (up to the resampling of a float image)
    tv = clip_views(to_t(pil), 4, resolution=64, normalize=False, generator=torch.Generator().manual_seed(0))
    assert (tv - views).abs().mean() < 0.02


def test_image_folder_reads_lazily_with_seeded_views(tmp_path):
    root = _folder(tmp_path / "data", ["red_panda", "tree_frog"], n=2, size=(96, 64))
    ds = ImageFolderTTA(root, n_views=5, resolution=32, seed=7)
    assert ds.classnames == ["red panda", "tree frog"] and len(ds) == 4
    v, y = ds[3]
    assert v.shape == (5, 3, 32, 32) and y == 1
    mean = torch.tensor(CLIP_MEAN)[:, None, None]
    std = torch.tensor(CLIP_STD)[:, None, None]
    assert ((v * std + mean).amin() >= -1e-5) and ((v * std + mean).amax() <= 1 + 1e-5)
    assert torch.equal(ds[3][0], v)  # views depend on (seed, index) only, not on the order of reading
    assert not torch.equal(ImageFolderTTA(root, n_views=5, resolution=32, seed=8)[3][0], v)
    (root / "tree_frog" / "1.jpg").write_bytes(b"not a jpeg")  # listed, never read until asked for
    with pytest.raises(ValueError, match=r"cannot read image .*1\.jpg"):
        ds[3]
    assert ds[0][0].shape == (5, 3, 32, 32)
    (root / "empty").mkdir()
    with pytest.raises(ValueError, match="without images: empty"):
        ImageFolderTTA(root)
    with pytest.raises(FileNotFoundError):
        ImageFolderTTA(tmp_path / "nowhere")


TINY = {
    "embed_dim": 16,
    "vision_cfg": {"image_size": 16, "layers": 1, "width": 64, "patch_size": 8},
    "text_cfg": {"context_length": 20, "vocab_size": 49408, "width": 64, "heads": 1, "layers": 1},
}


def _tiny_arch(tmp_path, name):
    import open_clip

    cfg = tmp_path / f"{name}.json"
    cfg.write_text(json.dumps(TINY))
    open_clip.add_model_config(cfg)
    return cfg


def test_cli_class_names_on_a_wordnet_id_folder(tmp_path, capsys):
    import open_clip

    cfg = _tiny_arch(tmp_path, "rlcf-tiny-names")
    torch.manual_seed(0)
    torch.save(open_clip.create_model("rlcf-tiny-names").state_dict(), tmp_path / "m.pt")
    a_wn, a_names = imagenet_classes("imagenet-a")
    data = _folder(tmp_path / "ina", a_wn[:2], n=1, size=(50, 40))
    out = tmp_path / "out"
    common = ["adapt", "--policy", str(tmp_path / "m.pt"), "--arch", str(cfg), "--reward", str(tmp_path / "m.pt"),
              "--reward-arch", str(cfg), "--data", str(data), "--n-views", "4", "--selection-p", "0.25",
              "--steps", "1", "--sample-k", "2", "--quiet"]  # fmt: skip
    assert main([*common, "--classes", "imagenet-a", "--out", str(out)]) == 0
    res = json.loads((out / "results.json").read_text())
    assert res["classes"] == a_names and res["n"] == 2
    names = tmp_path / "names.txt"
    names.write_text("stingray\ngoldfinch\n")
    assert main([*common, "--class-names", str(names), "--out", str(tmp_path / "o2")]) == 0
    assert json.loads((tmp_path / "o2" / "results.json").read_text())["classes"] == ["stingray", "goldfinch"]
    capsys.readouterr()
    names.write_text("stingray\n")
    bad = [
        [*common, "--out", str(tmp_path / "b1")],  # WordNet-ID folders without names
        [*common, "--class-names", str(names), "--out", str(tmp_path / "b2")],  # 1 name, 2 folders
        [
            *common,
            "--classes",
            "imagenet-r",
            "--out",
            str(tmp_path / "b3"),
        ],  # n01498041 is no -R class? see below
        [*common, "--classes", "imagenet", "--class-names", str(names), "--out", str(tmp_path / "b4")],
    ]
    codes = [main(argv) for argv in bad]
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    r_wn, _ = imagenet_classes("imagenet-r")
    expected_r = 0 if set(a_wn[:2]) <= set(r_wn) else 2
    assert codes == [2, 2, expected_r, 2]
    assert "WordNet IDs" in err[0] and "1 names for 2 class folders" in err[1] and "not both" in err[-1]
    assert not any((tmp_path / b).exists() for b in ("b1", "b2", "b4"))


# -- paper scale --------------------------------------------------------------------------------------------------
def test_paper_scale_config_is_the_official_one():
    from iclr24.rlcf.reproduce import PAPER
    from iclr24.rlcf.reproduce import PAPER_SCALE

    c = PAPER_SCALE
    # TPT/scripts/rlcf-tune.sh: -a ViT-B/16, reward_arch=ViT-L/14, batch_size=64, selection_p=0.1, sample_k=3,
    # tta_steps=3, lr=1e-5, weight_decay=5e-4; tune_cls_rl.py tunes the image encoder; ImageNet-A: 7,500 images
    assert (c.policy_arch, c.reward_arch, c.resolution, c.n_views) == ("ViT-B-16", "ViT-L-14", 224, 64)
    assert (c.selection_p, c.sample_k, c.steps, c.lr, c.weight_decay, c.mode) == (
        0.1,
        3,
        3,
        1e-5,
        5e-4,
        "image",
    )
    assert c.paper_steps == 7500 and c.classes == "imagenet-a" and PAPER.paper_scale is not None


def test_paper_scale_runs_one_step_on_a_tiny_imagenet_a_folder(tmp_path):
    from iclr24.paperkit.scale import measure_paper_scale
    from iclr24.rlcf.paper_scale import paper_scale

    _tiny_arch(tmp_path, "rlcf-tiny-scale")
    spec = paper_scale("cpu", items=6, views=4, policy_arch="rlcf-tiny-scale", reward_arch="rlcf-tiny-scale")
    assert (spec.micro_batch, spec.accumulation, spec.paper_steps) == (4, 16, 7500)
    a_wn, a_names = imagenet_classes("imagenet-a")
    folders = sorted(p.name for p in spec.step.folder.iterdir())
    assert folders == a_wn[:6]  # ImageNet-A layout: WordNet-ID class folders of JPEGs
    jpgs = sorted(spec.step.folder.glob("*/*.jpg"))
    assert len(jpgs) == 6
    with Image.open(jpgs[0]) as im:
        assert im.format == "JPEG" and min(im.size) >= 256
    assert spec.step.dataset.classnames == a_names and spec.step.runner.cfg.method == "rlcf"
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert row["micro_batch"] == 4 and row["accumulation"] == 16 and row["paper_steps"] == 7500
    assert row["flops_per_paper_step"] > 0 and any("RANDOM weights" in n for n in row["notes"])
    with pytest.raises(ValueError, match="divide"):
        paper_scale("cpu", items=1, views=5)
