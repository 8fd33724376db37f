"""Parity (issue 65): the row paper_scale("cpu") gives is the one captured before the paperkit migration."""

import pytest

from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import recorded_fingerprint
from iclr24.rlcf.paper_scale import paper_scale


@pytest.mark.slow  # builds the default stand-in data and counts FLOPs (about 70 s)
def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == recorded_fingerprint(__file__)
