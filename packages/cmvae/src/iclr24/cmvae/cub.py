"""CUB image-caption pairs from the user's copy of CUB-200-2011 + the Reed et al. captions (download them yourself).

The paper's real-image experiment (CUBICC) pairs CUB bird photographs with one of their ten captions and clusters
the pairs by species. This reads the standard layout every CUB code base uses::

    <root>/images.txt               "<id> <class folder>/<name>.jpg"
    <root>/image_class_labels.txt   "<id> <class 1..200>"
    <root>/train_test_split.txt     "<id> <1 = train | 0 = test>"
    <root>/bounding_boxes.txt       "<id> <x> <y> <w> <h>"   (optional: without it no crop)
    <root>/images/<class folder>/<name>.jpg
    <root>/text/<class folder>/<name>.txt   ten captions, one a line (Reed et al. 2016, ``text_c10``)

Images are cropped around the bird's bounding box (a square of 1.5x its longer side, as the text-to-image code
bases do), resized to ``side x side`` and flattened to RGB vectors in [0, 1]. Captions are lower-cased and split
into alphanumeric words; the vocabulary is built on the *train* captions only (words seen fewer than
``min_occurrences`` times become ``<unk>``, as MMVAE+'s CUB sentences with ``minOccur = 3``), and each caption is
cut or padded to ``max_words`` (MMVAE+'s ``maxSentLen = 32``). ``classes`` picks a subset of species, as CUBICC uses
a handful of them.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .data import MultimodalData

__all__ = ["CUBCaptions", "load_cub_captions", "PAD", "UNK"]

PAD, UNK = "<pad>", "<unk>"  # token ids 0 and 1
_WORD = re.compile(r"[a-z0-9]+")
_META = ("images.txt", "image_class_labels.txt", "train_test_split.txt")


@dataclass
class CUBCaptions:
    """CUB pairs: per split the images [N, 3*side*side] in [0, 1], token ids [N, captions, max_words] (0 = pad),
    labels [N] (0-based species index among the chosen classes), and the vocabulary (id -> word)."""

    train_images: np.ndarray
    train_tokens: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_tokens: np.ndarray
    test_labels: np.ndarray
    vocab: list[str]
    classes: list[str]
    side: int

    def decode(self, tokens: np.ndarray) -> str:
        """The words of one caption's token ids (padding dropped)."""
        return " ".join(self.vocab[int(t)] for t in np.asarray(tokens).ravel() if int(t) != 0)

    def as_multimodal(self, caption: int = 0) -> MultimodalData:
        """Two modalities for :class:`CMVAE`: the image and caption number ``caption`` as one-hot words, flattened
        to [N, max_words * vocabulary size] (padding is the all-zero row of word id 0's column)."""
        n_caps = self.train_tokens.shape[1]
        if isinstance(caption, bool) or not isinstance(caption, int) or not 0 <= caption < n_caps:
            raise InputError(f"caption must be an integer in [0, {n_caps}), got {caption!r}")
        v = len(self.vocab)

        def onehot(tok: np.ndarray) -> np.ndarray:
            return np.eye(v, dtype=np.float32)[tok[:, caption]].reshape(len(tok), -1)

        return MultimodalData(
            [self.train_images, onehot(self.train_tokens)],
            self.train_labels,
            [self.test_images, onehot(self.test_tokens)],
            self.test_labels,
            side=self.side,
            channels=3,
            name="cub_captions",
        )


def _table(path: Path, n_fields: int) -> dict[int, list[str]]:
    out: dict[int, list[str]] = {}
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        parts = line.split()
        if not parts:
            continue
        if len(parts) != n_fields or not parts[0].isdigit():
            raise InputError(f"{path}, line {i}: expected '<id>' and {n_fields - 1} field(s), got {line!r}")
        out[int(parts[0])] = parts[1:]
    if not out:
        raise InputError(f"{path} is empty")
    return out


def _words(caption: str) -> list[str]:
    return _WORD.findall(caption.lower().encode("ascii", "ignore").decode("ascii"))


def _image(path: Path, box: list[str] | None, side: int) -> np.ndarray:
    from PIL import Image
    from PIL import UnidentifiedImageError

    if not path.is_file():
        raise InputFileError(f"CUB image missing: {path}")
    try:
        with Image.open(path) as im:
            im = im.convert("RGB")
            if box is not None:
                x, y, w, h = (float(b) for b in box)
                r = 0.75 * max(w, h)
                cx, cy = x + w / 2, y + h / 2
                im = im.crop(
                    (
                        int(max(0, cx - r)),
                        int(max(0, cy - r)),
                        int(min(im.width, cx + r)),
                        int(min(im.height, cy + r)),
                    )
                )
            im = im.resize((side, side), Image.Resampling.BICUBIC)
            arr = np.asarray(im, dtype=np.float32) / 255.0
    except (UnidentifiedImageError, OSError, SyntaxError) as e:
        raise InputError(f"{path} is not a readable image: {e}") from None
    return arr.transpose(2, 0, 1).reshape(-1)


def load_cub_captions(
    root: str | os.PathLike,
    classes: list[str] | list[int] | None = None,
    side: int = 64,
    captions_per_image: int = 10,
    max_words: int = 32,
    min_occurrences: int = 3,
    max_per_split: int | None = None,
) -> CUBCaptions:
    """Read CUB-200-2011 + captions from ``root`` (layout in the module docstring). ``classes``: species folder
    names (``"001.Black_footed_Albatross"``) or 1-based class ids; ``None`` keeps all 200."""
    r = Path(root)
    if not r.is_dir():
        raise InputFileError(
            f"CUB folder not found: {r} (expected CUB_200_2011's images.txt, image_class_labels.txt, "
            "train_test_split.txt, images/ and the captions' text/ folder)"
        )
    for name in _META:
        if not (r / name).is_file():
            raise InputFileError(f"{r / name} is missing (CUB-200-2011 metadata; see load_cub_captions)")
    for name, v, lo in (
        ("side", side, 4),
        ("captions_per_image", captions_per_image, 1),
        ("max_words", max_words, 1),
        ("min_occurrences", min_occurrences, 1),
    ):
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise InputError(f"{name} must be an integer >= {lo}, got {v!r}")
    if max_per_split is not None and (not isinstance(max_per_split, int) or max_per_split < 1):
        raise InputError(f"max_per_split must be a positive integer or None, got {max_per_split!r}")

    images = _table(r / "images.txt", 2)
    labels = _table(r / "image_class_labels.txt", 2)
    split = _table(r / "train_test_split.txt", 2)
    boxes = _table(r / "bounding_boxes.txt", 5) if (r / "bounding_boxes.txt").is_file() else {}
    folder_of = {int(labels[i][0]): images[i][0].split("/")[0] for i in images if i in labels}
    if classes is None:
        wanted = sorted(folder_of)
    else:
        by_name = {f: c for c, f in folder_of.items()}
        wanted = []
        for c in classes:
            cid = c if isinstance(c, int) and not isinstance(c, bool) else by_name.get(str(c))
            if cid not in folder_of:
                raise InputError(
                    f"class {c!r} is not in {r / 'images.txt'} (known e.g. {sorted(by_name)[:3]})"
                )
            wanted.append(cid)
        if len(set(wanted)) < 2:
            raise InputError(f"need at least two distinct classes to cluster, got {classes!r}")
    index = {cid: k for k, cid in enumerate(wanted)}

    rows: dict[str, list[tuple[int, int]]] = {"train": [], "test": []}
    for i in sorted(images):
        if i not in labels or i not in split:
            raise InputError(f"image id {i} of images.txt has no class label or no train/test split entry")
        cid = int(labels[i][0])
        if cid in index:
            rows["train" if split[i][0] == "1" else "test"].append((i, index[cid]))
    for s in ("train", "test"):
        if not rows[s]:
            raise InputError(f"{r}: no {s} image of the chosen classes")
        if max_per_split is not None:
            rows[s] = rows[s][:max_per_split]

    caps: dict[str, list[list[list[str]]]] = {}
    for s, items in rows.items():
        caps[s] = []
        for i, _ in items:
            stem = images[i][0].rsplit(".", 1)[0]
            cp = r / "text" / f"{stem}.txt"
            if not cp.is_file():
                raise InputFileError(f"caption file missing: {cp} (Reed et al.'s CUB captions, text_c10)")
            lines = [
                w
                for w in (_words(t) for t in cp.read_text(encoding="utf-8", errors="replace").splitlines())
                if w
            ]
            if len(lines) < captions_per_image:
                raise InputError(f"{cp}: {len(lines)} non-empty captions, need {captions_per_image}")
            caps[s].append(lines[:captions_per_image])

    counts: dict[str, int] = {}
    for sent in (w for c in caps["train"] for w in c):
        for w in sent:
            counts[w] = counts.get(w, 0) + 1
    vocab = [PAD, UNK] + sorted(w for w, n in counts.items() if n >= min_occurrences)
    ids = {w: k for k, w in enumerate(vocab)}

    def tokens(s: str) -> np.ndarray:
        out = np.zeros((len(caps[s]), captions_per_image, max_words), np.int64)
        for a, per_image in enumerate(caps[s]):
            for b, sent in enumerate(per_image):
                t = [ids.get(w, 1) for w in sent[:max_words]]
                out[a, b, : len(t)] = t
        return out

    def pixels(s: str) -> np.ndarray:
        return np.stack([_image(r / "images" / images[i][0], boxes.get(i), side) for i, _ in rows[s]])

    return CUBCaptions(
        pixels("train"),
        tokens("train"),
        np.array([k for _, k in rows["train"]], np.int64),
        pixels("test"),
        tokens("test"),
        np.array([k for _, k in rows["test"]], np.int64),
        vocab,
        [folder_of[c] for c in wanted],
        side,
    )
