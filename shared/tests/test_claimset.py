import json
import math
import time

import pytest

from iclr24.paperkit import Claim
from iclr24.paperkit import ClaimSet
from iclr24.paperkit import Fact
from iclr24.paperkit import Paper
from iclr24.paperkit import RunConfig
from iclr24.paperkit.runner.testing import check_paper_smoke
from iclr24.paperkit.runner.testing import check_records


def cfg(tmp_path, mode="quick"):
    return RunConfig(mode=mode, out=tmp_path, progress=False)


def add_one(cs, ours=2.0, **kw):
    return cs.add(
        claim="ours wins",
        metric="score",
        ours=ours,
        baseline_name="base",
        baseline=1.0,
        rule="ours > baseline",
        **kw,
    )


def test_claim_is_keyword_only_and_needs_a_rule():
    with pytest.raises(TypeError):
        Claim("p", "c", "m", 1.0, "b", 0.5, "ours > baseline")
    with pytest.raises(ValueError, match="has no rule"):
        Claim(paper="p", claim="c", metric="m", ours=1.0, baseline_name="b", baseline=0.5)


def test_timed_records_seconds_of_its_block(tmp_path):
    cs = ClaimSet("demo", cfg(tmp_path))
    with cs.timed("block"):
        time.sleep(0.05)
        add_one(cs)
        add_one(cs, ours=0.5)
    add_one(cs)  # outside a block: no seconds
    assert [c.status for c in cs] == ["holds", "fails", "holds"]
    assert cs[0].seconds == cs[1].seconds >= 0.05 and cs[2].seconds == 0.0
    assert not cs.partial and cs.counts()["holds"] == 2


def test_timed_block_that_raises_is_an_error_record_and_the_run_goes_on(tmp_path):
    cs = ClaimSet("demo", cfg(tmp_path))
    with cs.timed("broken measurement"):
        add_one(cs)
        raise RuntimeError("division by\nzero")
    with cs.timed("next"):
        add_one(cs)
    assert [c.status for c in cs] == ["holds", "error", "holds"]
    err = cs[1]
    assert err.claim == "broken measurement" and err.message == "RuntimeError: division by zero"
    assert err.holds is None and err.ours is None and "traceback" in err.details
    assert cs.partial
    with pytest.raises(AssertionError, match="measurements raised"):
        check_records(cs, tmp_path, mode="quick")


def test_missing_real_data_is_skipped_naming_the_command(tmp_path):
    from iclr24.paperkit.data.folder import DataMissing

    cs = ClaimSet("demo", cfg(tmp_path, "full"))
    with cs.timed("MNIST claim"):
        raise DataMissing("mnist.pkl.gz is missing: run `iclr24 data get mnist`")
    assert cs[0].status == "skipped" and "iclr24 data get mnist" in cs[0].message and not cs.partial


def test_smoke_mode_claims_carry_no_verdict_but_the_rule_is_checked(tmp_path):
    cs = ClaimSet("demo", cfg(tmp_path, "smoke"))
    c = add_one(cs, ours=0.0)
    assert c.status == "smoke" and c.holds is None and c.rule_value is False
    with pytest.raises(ValueError, match="unknown name"):
        cs.add(claim="x", metric="m", ours=1.0, baseline_name="b", baseline=1.0, rule="ours > nope")
    d = c.to_dict()
    assert d["verdict"] == "smoke" and d["holds"] is None
    assert Claim.from_dict(json.loads(json.dumps(d))) == c


def test_facts_are_apart_from_claims(tmp_path):
    cs = ClaimSet("demo", cfg(tmp_path))
    f = cs.fact("IFA with Sigma = 0", value=4 * math.log(2), description="closed form")
    assert isinstance(f, Fact) and cs.facts == [f] and len(cs) == 0
    assert Fact.from_dict(json.loads(json.dumps(f.to_dict()))) == f
    with pytest.raises(ValueError, match="finite"):
        cs.fact("bad", value=math.nan)
    with pytest.raises(ValueError, match="non-empty"):
        cs.fact("", value=1)


def test_figure_is_saved_atomically_and_registered(tmp_path):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    cs = ClaimSet("demo", cfg(tmp_path))
    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    a = cs.figure(fig, "curve.png")
    assert a == "curve.png" and (tmp_path / "curve.png").read_bytes()[:4] == b"\x89PNG"
    assert not plt.get_fignums()  # closed
    assert cs.to_dict()["artifacts"] == ["curve.png"]
    with pytest.raises(ValueError, match="must end in"):
        cs.figure(plt.figure(), "curve.txt")


def test_check_paper_smoke_on_a_paper(tmp_path):
    def run(c):
        cs = ClaimSet("demo", c)
        with cs.timed("m"):
            (c.out / "x.txt").write_text("x")
            add_one(cs, artifacts=[cs.artifact("x.txt")])
        return cs

    cs = check_paper_smoke(Paper("demo", "Demo", "one line", run=run), tmp_path)
    assert cs[0].status == "smoke"

    def missing_artifact(c):
        cs = ClaimSet("demo", c)
        add_one(cs, artifacts=["nope.png"])
        return cs

    with pytest.raises(AssertionError, match="missing"):
        check_paper_smoke(Paper("demo", "Demo", "one line", run=missing_artifact), tmp_path / "2")
    with pytest.raises(TypeError, match="claims of paper"):
        Paper("other", "Other", "x", run=run).check(cfg(tmp_path))
    with pytest.raises(ValueError, match="data names"):
        Paper("demo", "Demo", "x", run=run, data="mnist")
