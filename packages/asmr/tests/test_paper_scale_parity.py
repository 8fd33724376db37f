"""Parity (issue 65): the row paper_scale("cpu") gives is the one recorded in docs/paper-scale-cpu.json before the
paperkit migration (paper_scale_row.json: its configuration, batch arithmetic, notes and FLOPs of a micro-step)."""

from iclr24.asmr.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import recorded_fingerprint


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == recorded_fingerprint(__file__)
