"""File readers for users' inputs: a NumPy ``.npz`` archive and an image file, each failure one
:class:`~iclr24.paperkit.errors.InputFileError` line naming the file."""

from __future__ import annotations

import os

from ..errors import InputFileError
from ..io import readable_file

__all__ = ["load_npz", "load_image"]


def load_npz(path: str | os.PathLike, keys: tuple[str, ...] | None = None) -> dict:
    """Read a NumPy ``.npz`` archive into a dict of arrays (eagerly, no pickled objects). A missing, empty,
    truncated or foreign file, or one without the ``keys`` asked for, is one :class:`InputFileError` line
    naming the file."""
    import zipfile

    import numpy as np

    p = readable_file(path, ".npz file")
    if not zipfile.is_zipfile(p):
        raise InputFileError(
            f"{p} is not a readable .npz archive: damaged, truncated or another format (expected a zip written "
            "by numpy.savez)",
            p,
        )
    try:
        with np.load(p, allow_pickle=False) as z:
            data = {k: z[k] for k in z.files}
    except (zipfile.BadZipFile, EOFError, OSError, KeyError) as e:
        raise InputFileError(f"{p} is a damaged .npz archive (truncated or corrupt): {e}", p) from None
    except ValueError as e:
        if "pickle" in str(e):
            raise InputFileError(
                f"{p} holds Python objects, not plain arrays; only numeric arrays are read", p
            ) from None
        raise InputFileError(f"{p} is a damaged .npz archive: {e}", p) from None
    if keys is not None:
        missing = [k for k in keys if k not in data]
        if missing:
            raise InputFileError(f"{p} lacks the array(s) {missing}; it has {sorted(data)}", p)
    return data


def load_image(path: str | os.PathLike, mode: str = "RGB"):
    """Read an image file as float32 in [0, 1]: ``(H, W, 3)`` for ``mode="RGB"``, ``(H, W)`` for ``"L"``. A missing,
    empty, truncated or non-image file is one clear ``InputFileError`` naming the file. Needs Pillow (``[data]``)."""
    import numpy as np

    if mode not in ("RGB", "L"):
        from ..errors import InputError

        raise InputError(f"mode must be 'RGB' or 'L', got {mode!r}")
    p = readable_file(path, "image file")
    try:
        from PIL import Image
        from PIL import UnidentifiedImageError
    except ImportError:  # pragma: no cover
        raise ImportError("load_image needs Pillow: pip install 'iclr24-paperkit[data]'") from None
    try:
        with Image.open(p) as im:
            im.load()
            arr = np.asarray(im.convert(mode), dtype=np.float32) / 255.0
    except UnidentifiedImageError:
        raise InputFileError(f"{p} is not an image file Pillow can read (PNG, JPEG, ...)", p) from None
    except Image.DecompressionBombError as e:
        raise InputFileError(f"{p} is too large an image to decode safely: {e}", p) from None
    except (OSError, SyntaxError, ValueError) as e:
        raise InputFileError(f"{p} is a damaged image file (truncated or corrupt): {e}", p) from None
    return arr
