"""Bad input at the Python API: a binary or empty triples file is one InputFileError naming it (never a raw
UnicodeDecodeError, never a graph of 0 facts); NaN scores are refused before the beta search starts."""

import numpy as np
import pytest

from iclr24.drum_rules import load_tsv
from iclr24.drum_rules import search_for_beta
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError


def test_a_binary_triples_file_names_the_file(tmp_path):
    p = tmp_path / "kg.tsv"
    p.write_bytes(b"a\tr\tb\n\xff\xfe\x00\x81\tr\tc\n")
    with pytest.raises(InputFileError, match="not utf-8 text") as e:
        load_tsv(p)
    assert str(p) in str(e.value) and "line 2" in str(e.value)


@pytest.mark.parametrize("content", [b"", b"\n\n  \n"])
def test_an_empty_triples_file_is_refused_not_a_graph_of_no_facts(tmp_path, content):
    p = tmp_path / "kg.tsv"
    p.write_bytes(content)
    with pytest.raises(InputFileError, match="empty|no triples") as e:
        load_tsv(p)
    assert str(p) in str(e.value)


def test_a_folder_is_named(tmp_path):
    with pytest.raises(InputFileError, match="folder"):
        load_tsv(tmp_path)


def test_beta_search_refuses_nan_scores_and_a_zero_gap():
    labels = np.array([0, 1, 0, 1])
    with pytest.raises(InputError, match="NaN"):
        search_for_beta(np.array([0.1, np.nan, 0.3, 0.4]), labels)
    with pytest.raises(InputError, match="gap"):
        search_for_beta(np.array([0.1, 0.2, 0.3, 0.4]), labels, gap=0.0)
