"""The measured calibration of the accuracy claims (calibration.json; docs/calibration.md), fixed before any
evaluated run."""

from __future__ import annotations

from iclr24.paperkit.power import Calibration
from iclr24.paperkit.power import calibration_table

__all__ = ["ACCURACY_POOL", "CALIBRATION_SEEDS", "accuracy_calibration"]

# Calibration of the accuracy claims (docs/calibration.md), package data: calibration.json, per mode the
# calibration seeds, per calibration seed the three models trained alike on the seed's own KG by this code and their
# filtered MRR with the tie-breaking's expectation (ties="expected"), and the CPU seconds of one evaluated seed of a
# row (DRUM and the variant trained, their link prediction); scripts/calibrate.py --write merges a run into it.
# Calibration seeds are disjoint from the evaluated pool.
_table = calibration_table(__package__)
CALIBRATION_SEEDS = {mode: _table[mode]["seeds"] for mode in ("quick", "full")}
ACCURACY_POOL = tuple(
    range(100)
)  # evaluated seeds: offsets added to --seed; offset 0 is the run's own models
_MEASURED = _table["measured"]


def accuracy_calibration(mode: str, agg: str) -> Calibration:
    """The calibration of an accuracy claim in ``mode`` for the variant ``agg`` against DRUM (``"sum"``)."""
    row = _table[mode]
    return Calibration(
        seeds=CALIBRATION_SEEDS[mode],
        ours=row["mrr"][agg],
        baseline=row["mrr"]["sum"],
        seconds_per_seed=row["seconds_per_seed"],
        measured=_MEASURED,
        note="MRR with ties='expected'; seconds: DRUM and the variant trained on one seed, and their MRR",
    )
