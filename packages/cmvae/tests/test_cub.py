"""The CUB image-caption loader on a tiny folder written in CUB-200-2011's layout with Reed et al.'s captions."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

from iclr24.cmvae import load_cub_captions

CLASSES = ["001.Black_footed_Albatross", "002.Laysan_Albatross", "003.Sooty_Albatross"]


def write_cub(root, n_per_class=3, colour_of=(255, 0, 0)):
    ids, lab, split, box = [], [], [], []
    k = 0
    for c, folder in enumerate(CLASSES, 1):
        (root / "images" / folder).mkdir(parents=True)
        (root / "text" / folder).mkdir(parents=True)
        for j in range(n_per_class):
            k += 1
            name = f"{folder}/{folder[4:]}_{j:04d}_{k}.jpg"
            img = np.zeros((40, 60, 3), np.uint8)
            img[5:35, 15:45] = (40 * c, 255 - 40 * c, 100)  # the "bird"; its box (below) crops inside it
            Image.fromarray(img).save(root / "images" / name, quality=95)
            words = ["red", "wings", "small", "beak"][c % 4]
            lines = [
                f"This bird has {words}, and a long tail; {k}x{i}." for i in range(10)
            ]  # "{k}x{i}": once
            (root / "text" / name.replace(".jpg", ".txt")).write_text("\n".join(lines) + "\n")
            ids.append(f"{k} {name}")
            lab.append(f"{k} {c}")
            split.append(f"{k} {int(j < n_per_class - 1)}")
            box.append(f"{k} 24.0 14.0 12.0 12.0")  # centre (30, 20): crop 1.5 x 12 = 18 px
    for fname, rows in (
        ("images.txt", ids),
        ("image_class_labels.txt", lab),
        ("train_test_split.txt", split),
        ("bounding_boxes.txt", box),
    ):
        (root / fname).write_text("\n".join(rows) + "\n")
    return root


def test_loader_reads_the_layout(tmp_path):
    root = write_cub(tmp_path / "CUB")
    cub = load_cub_captions(root, classes=[CLASSES[0], 3], side=8, max_words=12)
    assert cub.classes == [CLASSES[0], CLASSES[2]]
    assert cub.train_images.shape == (4, 3 * 8 * 8) and cub.test_images.shape == (2, 3 * 8 * 8)
    assert cub.train_tokens.shape == (4, 10, 12)
    np.testing.assert_array_equal(cub.train_labels, [0, 0, 1, 1])
    np.testing.assert_array_equal(cub.test_labels, [0, 1])
    assert 0.0 <= cub.train_images.min() and cub.train_images.max() <= 1.0
    # the crop keeps the bird only: class 1's uniform green 215/255 (JPEG noise aside)
    g = cub.train_images[0].reshape(3, 8, 8)[1]
    assert abs(float(g.mean()) - 215 / 255) < 0.05
    # lower-cased words; seen >= 3 times in train -> known, the one-off "1x0" -> <unk>; then padding (id 0)
    assert cub.decode(cub.train_tokens[0, 0]) == "this bird has wings and a long tail <unk>"
    assert cub.vocab[:2] == ["<pad>", "<unk>"] and "1x0" not in cub.vocab
    assert (cub.train_tokens[0, 0, 9:] == 0).all() and (cub.train_tokens[0, 0, :9] > 0).all()


def test_as_multimodal_gives_two_aligned_modalities(tmp_path):
    cub = load_cub_captions(write_cub(tmp_path / "CUB"), side=8, max_words=12)
    mm = cub.as_multimodal(caption=2)
    assert mm.n_modalities == 2 and mm.channels == 3
    v = len(cub.vocab)
    assert mm.input_dims == [3 * 64, 12 * v]
    onehot = mm.train[1].reshape(len(mm.train_labels), 12, v)
    np.testing.assert_array_equal(onehot.argmax(-1), cub.train_tokens[:, 2])
    np.testing.assert_array_equal(onehot.sum(-1), 1.0)
    with pytest.raises(ValueError, match="caption must be"):
        cub.as_multimodal(caption=10)


def test_missing_and_broken_files_name_what_is_wrong(tmp_path):
    with pytest.raises(FileNotFoundError, match="CUB folder not found"):
        load_cub_captions(tmp_path / "nowhere")
    root = write_cub(tmp_path / "CUB")
    with pytest.raises(ValueError, match="not in"):
        load_cub_captions(root, classes=["999.Dodo", 1])
    with pytest.raises(ValueError, match="at least two distinct classes"):
        load_cub_captions(root, classes=[1, 1])
    with pytest.raises(ValueError, match="side must be"):
        load_cub_captions(root, side=0)
    cap = next((root / "text").rglob("*.txt"))
    cap.write_text("only one caption\n")
    with pytest.raises(ValueError, match="1 non-empty captions, need 10"):
        load_cub_captions(root)
    cap.unlink()
    with pytest.raises(FileNotFoundError, match="caption file missing"):
        load_cub_captions(root)
    (root / "train_test_split.txt").unlink()
    with pytest.raises(FileNotFoundError, match="train_test_split.txt is missing"):
        load_cub_captions(root)


def test_a_corrupt_image_is_one_clear_error(tmp_path):
    root = write_cub(tmp_path / "CUB")
    next((root / "images").rglob("*.jpg")).write_bytes(b"not a jpeg")
    with pytest.raises(ValueError, match="not a readable image"):
        load_cub_captions(root)
