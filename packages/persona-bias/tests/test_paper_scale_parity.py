"""Parity (issue 65): the row paper_scale("cpu") gives is the one captured before the paperkit migration."""

from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import recorded_fingerprint
from iclr24.persona_bias.paper_scale import paper_scale


def test_paper_scale_row_is_the_one_recorded_before_the_migration(tmp_path):
    # an empty data folder: the stand-in MMLU row paper_scale("cpu") gives where the real MMLU is missing
    assert fingerprint(paper_scale("cpu", data_dir=tmp_path)) == recorded_fingerprint(__file__)
