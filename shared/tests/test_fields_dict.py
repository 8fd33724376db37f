"""``fields_dict``: a result dataclass's fields as plain data, in field order."""

import json
from dataclasses import dataclass
from dataclasses import field

import pytest

from iclr24.paperkit import fields_dict
from iclr24.paperkit.power import Calibration


@dataclass
class _Result:
    score: float
    ci: tuple[float, float]
    mean: float = 0.0
    curve: list[float] = field(default_factory=list)
    model: object = None


def test_fields_in_order_tuples_as_lists_and_values_not_copied():
    r = _Result(0.5, (0.1, 0.9), 2.0, [3.0, 2.0], model=object())
    d = fields_dict(r, leave_out=("model",))
    assert list(d) == ["score", "ci", "mean", "curve"]
    assert d == {"score": 0.5, "ci": [0.1, 0.9], "mean": 2.0, "curve": [3.0, 2.0]}
    assert d["curve"] is r.curve  # as a hand-written {"curve": self.curve} would
    json.dumps(d)


def test_rename_keeps_the_key_in_the_fields_place():
    d = fields_dict(
        _Result(1.0, (0.0, 2.0)), leave_out=["curve", "model"], rename={"mean": "calibrated_mean"}
    )
    assert list(d) == ["score", "ci", "calibrated_mean"]


def test_a_nested_object_stays_as_it_is():
    inner = _Result(1.0, (0.0, 1.0))
    assert fields_dict(_Result(0.0, (0.0, 0.0), model=inner))["model"] is inner


def test_a_calibration_round_trips_through_its_dict():
    c = Calibration(seeds=(1, 2), ours=(1.0, 2.0), baseline=(0.5, 1.5), seconds_per_seed=2.0, measured="here")
    d = c.to_dict()
    assert d == {"seeds": [1, 2], "ours": [1.0, 2.0], "baseline": [0.5, 1.5], "seconds_per_seed": 2.0,
                 "measured": "here", "note": ""}  # fmt: skip
    assert Calibration(**d) == c


def test_misuse_is_one_clear_error():
    with pytest.raises(TypeError, match="dataclass instance"):
        fields_dict({"score": 1.0})
    with pytest.raises(TypeError, match="dataclass instance"):
        fields_dict(_Result)
    with pytest.raises(ValueError, match=r"no field\(s\) \['modle'\]"):
        fields_dict(_Result(1.0, (0.0, 1.0)), leave_out=("modle",))
    with pytest.raises(ValueError, match="'m'"):
        fields_dict(_Result(1.0, (0.0, 1.0)), leave_out="model")  # a string is not a list of names
    with pytest.raises(ValueError, match="'avg'"):
        fields_dict(_Result(1.0, (0.0, 1.0)), rename={"avg": "mean"})
