"""Parity (issue 65): the row paper_scale("cpu") gives is the one captured before the paperkit migration."""

from iclr24.fif.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import recorded_fingerprint


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    # items=5000: the stand-in row paper_scale("cpu") gives where the real mnist.pkl.gz is missing, on any machine
    assert fingerprint(paper_scale("cpu", items=5000)) == recorded_fingerprint(__file__)
