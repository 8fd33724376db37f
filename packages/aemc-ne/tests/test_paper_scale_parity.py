"""Parity (issue 65): the row paper_scale("cpu") gives is the one recorded in docs/paper-scale-cpu.json before the
paperkit migration (paper_scale_row.json: its configuration, batch arithmetic, notes and FLOPs of a micro-step)."""

from iclr24.aemc_ne.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint
from iclr24.paperkit.scale import recorded_fingerprint


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    spec = paper_scale("cpu")
    # A micro-step's FLOPs follow its batch's observed entries (the element net g runs on them): the recorded
    # row counted the fifth batch, after measure_paper_scale's warm-up step and its 3 timed steps.
    for _ in range(4):
        spec.step()
    assert fingerprint(spec) == recorded_fingerprint(__file__)
