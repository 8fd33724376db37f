import json
import math

import pytest

from iclr24.paperkit import Claim
from iclr24.paperkit import RunConfig
from iclr24.paperkit import claims_to_markdown
from iclr24.paperkit import evaluate_rule
from iclr24.paperkit import write_claims_json
from iclr24.paperkit.paper import Paper


def make(**kw):
    base = dict(
        paper="demo",
        claim="ours halves the error",
        metric="error, lower is better",
        ours=0.2,
        baseline_name="ULA",
        baseline=0.5,
        rule="ours <= 0.5 * baseline",
    )
    base.update(kw)
    return Claim(**base)


def test_holds_is_computed_from_rule():
    assert make(ours=0.2, baseline=0.5, rule="ours <= 0.5 * baseline").holds is True
    assert make(ours=0.3).holds is False
    assert make(ours=0.25).holds is True


def test_holds_cannot_be_typed_in():
    with pytest.raises(TypeError):
        make(holds=True)


@pytest.mark.parametrize(
    "rule,env,expected",
    [
        ("ours >= baseline and ours_std < 0.1", {"ours": 1, "baseline": 0.5, "ours_std": 0.05}, True),
        ("ours >= baseline and ours_std < 0.1", {"ours": 1, "baseline": 0.5, "ours_std": 0.5}, False),
        ("0.9 <= ours / baseline <= 1.1", {"ours": 1.0, "baseline": 1.05}, True),
        ("abs(ours - paper_value) < 0.01 or not ours > 2", {"ours": 1.0, "paper_value": 3.0}, True),
        ("sqrt(ours) == 2", {"ours": 4.0}, True),
        ("-ours < 0", {"ours": 4.0}, True),
        ("max(ours, 1) ** 2 > 3", {"ours": 2.0}, True),
    ],
)
def test_evaluate_rule(rule, env, expected):
    assert evaluate_rule(rule, env) is expected


@pytest.mark.parametrize(
    "rule,msg",
    [
        ("__import__('os').system('true')", "not allowed"),
        ("ours.real > 0", "not allowed"),
        ("ours <= ", "not a valid expression"),
        ("unknown > 1", "unknown name"),
        ("baseline > 1", "null"),
        ("", "non-empty"),
    ],
)
def test_bad_rules_are_rejected(rule, msg):
    with pytest.raises(ValueError, match=msg):
        evaluate_rule(rule, {"ours": 1.0, "baseline": None})


@pytest.mark.parametrize("field", ["ours", "baseline", "paper_value", "seconds"])
@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_rejected(field, bad):
    with pytest.raises(ValueError, match=f"Claim.{field} must be finite"):
        make(**{field: bad})


def test_non_finite_in_details_or_variables_rejected():
    with pytest.raises(ValueError, match="details"):
        make(details={"per_seed": [1.0, math.nan]})
    with pytest.raises(ValueError, match="variables"):
        make(rule="ours < x", variables={"x": math.inf})
    with pytest.raises(ValueError, match="details"):
        make(details={"obj": object()})


def test_other_validation():
    with pytest.raises(ValueError, match="non-empty string"):
        make(claim="")
    with pytest.raises(ValueError, match="number"):
        make(ours="high")
    with pytest.raises(ValueError, match="number"):
        make(ours=True)
    with pytest.raises(ValueError, match="relative"):
        make(artifacts=["/abs/plot.png"])


def test_schema_and_roundtrip(tmp_path):
    c = make(
        paper_value=0.1,
        seconds=1.5,
        details={"seeds": [0, 1]},
        artifacts=["demo/plot.png"],
        rule="ours <= k * baseline",
        variables={"k": 0.5},
    )
    d = c.to_dict()
    assert list(d) == [
        "paper",
        "claim",
        "metric",
        "ours",
        "baseline_name",
        "baseline",
        "paper_value",
        "rule",
        "verdict",
        "holds",
        "message",
        "seconds",
        "timing",
        "paired",
        "kind",
        "details",
        "artifacts",
    ]
    assert d["details"]["rule_variables"] == {"k": 0.5}
    assert Claim.from_dict(json.loads(json.dumps(d))) == c
    bad = dict(d, verdict="fails")
    with pytest.raises(ValueError, match="disagrees"):
        Claim.from_dict(bad)
    p = write_claims_json(tmp_path / "c.json", [c], version=1)
    assert json.loads(p.read_text())["claims"][0]["holds"] == c.holds


def test_markdown_table():
    md = claims_to_markdown(
        [make(ours=0.1, paper_value=0.05), make(ours=0.4, baseline=None, rule="ours < 1")]
    )
    lines = md.strip().splitlines()
    assert lines[0].startswith("| paper | kind | claim |") and len(lines) == 4
    assert "yes" in lines[2] and "| 0.05 |" in lines[2]
    assert "- (ULA)" in lines[3]


def test_runconfig(tmp_path):
    cfg = RunConfig(mode="smoke", seed=3, out=tmp_path / "demo", root=tmp_path)
    assert cfg.pick(smoke=1, quick=2, full=3) == 1
    assert cfg.artifact("plot.png") == "demo/plot.png"
    with pytest.raises(ValueError, match="mode"):
        RunConfig(mode="fast")
    with pytest.raises(ValueError, match="seed"):
        RunConfig(seed=-1)


def test_paper_check_validates_return():
    p = Paper("demo", "Demo", "one line", run=lambda cfg: [make()])
    assert p.check(RunConfig(mode="smoke"))[0].paper == "demo"
    with pytest.raises(TypeError, match="must return a ClaimSet"):
        Paper("demo", "Demo", "one line", run=lambda cfg: [1.0]).check(RunConfig())
    with pytest.raises(ValueError):
        Paper("", "Demo", "x", run=lambda cfg: [])
