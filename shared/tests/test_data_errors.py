"""paperkit's own data helpers follow the API error policy: every bad argument or file is an InputError (a
ValueError) or an InputFileError (also a FileNotFoundError) naming what came, never a bare ValueError/OSError."""

from __future__ import annotations

import pytest
import torch

from iclr24.paperkit.data import cifar
from iclr24.paperkit.data import imagefolder
from iclr24.paperkit.data.samples import sample_image
from iclr24.paperkit.data.samples import train_test_split_tensors
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


def test_data_helpers_raise_the_package_errors(tmp_path):
    x, y = torch.zeros(4, 2), torch.zeros(3)
    with pytest.raises(InputError, match="same length"):
        train_test_split_tensors(x, y)
    with pytest.raises(InputError, match="test_fraction"):
        train_test_split_tensors(x, torch.zeros(4), test_fraction=1.5)
    with pytest.raises(InputError, match="unknown sample image"):
        sample_image("no-such-image")
    with pytest.raises(InputFileError, match="not found"):
        cifar.read_cifar_batch(tmp_path / "data_batch_1")
    bad = tmp_path / "data_batch_1"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(InputError, match="CIFAR-10 batch"):
        cifar.read_cifar_batch(bad)
    with pytest.raises(InputFileError, match="not found"):
        imagefolder.image_folder(tmp_path / "absent")
    with pytest.raises(InputFileError, match="is a file"):
        imagefolder.image_folder(bad)


def test_comparable_sees_artifacts_by_file_name():
    """A whole `iclr24 reproduce` run lists artifacts under its --out; a record lists file names: the same run."""
    from iclr24.paperkit.runner.report import comparable

    run = {"claims": [{"ours": 1.0, "artifacts": ["results/fif/reproduce/samples.png"], "seconds": 3.0}]}
    rec = {"claims": [{"ours": 1.0, "artifacts": ["samples.png"], "seconds": 9.0}]}
    assert comparable(run) == comparable(rec)
    # a claim's per-pair CPU seconds (lpn's details) are a timing too: two runs of one commit differ only there
    assert comparable({"details": {"cpu_seconds_per_pair": [0.16], "psnr": 20.0}}) == comparable(
        {"details": {"cpu_seconds_per_pair": [0.24], "psnr": 20.0}}
    )
    assert comparable({"artifacts": ["a/x.png"], "ours": 2.0}) != comparable(
        {"artifacts": ["y.png"], "ours": 2.0}
    )
