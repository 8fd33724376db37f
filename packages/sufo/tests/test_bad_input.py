"""Bad input at the Python API: a binary or undecodable labelled file is one InputFileError naming it (never a
raw UnicodeDecodeError, which names no file); a constant RDM is refused, not answered with NaN."""

import numpy as np
import pytest

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.sufo import load_labelled
from iclr24.sufo import rsa
from iclr24.sufo.cli import main


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_binary_labelled_file_names_the_file(tmp_path, suffix):
    p = tmp_path / f"reports{suffix}"
    p.write_bytes(b"text,label\n\xff\xfe\x00binary\x81,1\n")
    with pytest.raises(InputFileError, match="not utf-8 text") as e:
        load_labelled(p)
    assert str(p) in str(e.value) and "line 2" in str(e.value)


def test_empty_and_folder_labelled_files_are_input_file_errors(tmp_path):
    empty = tmp_path / "e.csv"
    empty.write_bytes(b"")
    for path in (empty, tmp_path / "dir.csv"):
        if path.name == "dir.csv":
            path.mkdir()
        with pytest.raises(InputFileError):
            load_labelled(path)


def test_the_cli_names_the_binary_file(tmp_path, capsys):
    p = tmp_path / "reports.csv"
    p.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    rc = main(["probe", "--data", str(p), "--out", str(tmp_path / "o"), "--quiet"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert rc == 2 and len(err) == 1 and str(p) in err[0] and "UnicodeDecodeError" not in err[0]


def test_rsa_of_a_constant_rdm_is_refused():
    x = np.random.default_rng(0).standard_normal((6, 3))
    with pytest.raises(InputError, match="constant"):
        rsa(np.ones((6, 3)), x)
