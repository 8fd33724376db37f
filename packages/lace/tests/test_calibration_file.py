"""The headline rules' calibration numbers and the unclamped-L_rec run are package data (calibration.json)."""

from iclr24.lace.reproduce import CALIBRATION_SEEDS
from iclr24.lace.reproduce import CLAIMS
from iclr24.lace.reproduce import UNCLAMPED_CALIBRATION
from iclr24.paperkit.power import calibration_table


def test_the_claims_calibration_is_the_files():
    t = calibration_table("iclr24.lace")
    assert t["seeds"] == CALIBRATION_SEEDS
    calibrated = {c.id: c.calibration for c in CLAIMS if c.calibration}
    assert list(calibrated) == list(t["rules"]) == ["align", "overlap"]
    for key, cal in calibrated.items():
        for mode in ("quick", "full"):
            assert (cal[mode].seeds, cal[mode].ours, cal[mode].baseline) == (
                t["seeds"], t["rules"][key]["ours"], t["rules"][key]["baseline"]
            )  # fmt: skip
            assert cal[mode].seconds_per_seed == round(t["cpu_seconds"][mode] / len(t["seeds"]), 1)
            assert cal[mode].measured == t["measured"]
    assert calibrated["align"]["full"].seconds_per_seed == 16.9  # 118.53 CPU s for the 7 pairs


def test_the_unclamped_run_is_the_files():
    u = calibration_table("iclr24.lace")["unclamped"]
    assert (
        UNCLAMPED_CALIBRATION["seed"] == u["seed"]
        and UNCLAMPED_CALIBRATION["real_vs_real"] == u["real_vs_real"]
    )
    assert UNCLAMPED_CALIBRATION["max_iou"] == {int(k): v for k, v in u["max_iou"].items()}
    assert all(isinstance(k, int) for k in UNCLAMPED_CALIBRATION["max_iou"])
