import json
import multiprocessing as mp

import pytest

from iclr24.persona_bias import RunStore
from iclr24.persona_bias import ScriptedBackend
from iclr24.persona_bias import run_evaluation
from iclr24.persona_bias.store import record_key


def _rec(i, persona="a man"):
    return {"model": "m", "persona": persona, "template": "t", "dataset": "d", "id": i, "response": "x" * 50}


def test_append_reload_and_latest_wins(tmp_path):
    s = RunStore(tmp_path)
    s.append(_rec(1))
    s.append(_rec("1"))
    s.append({**_rec(1), "response": "new"})
    again = RunStore(tmp_path)
    assert len(again) == 2  # 1 and "1" are different ids
    assert again.get(record_key(_rec(1)))["response"] == "new"
    with pytest.raises(ValueError, match="missing key fields"):
        s.append({"model": "m"})


def test_torn_line_is_skipped_and_isolated(tmp_path):
    s = RunStore(tmp_path)
    s.append(_rec(1))
    with open(s.path, "ab") as f:
        f.write(b'{"model": "m", "persona": "a man", "tem')  # a writer killed mid-line
    s2 = RunStore(tmp_path)
    assert len(s2) == 1
    s2.append(_rec(2))
    s3 = RunStore(tmp_path)
    assert len(s3) == 2 and s3.skipped_lines == 1


def _writer(path, persona, n):
    s = RunStore(path)
    for i in range(n):
        s.append(_rec(i, persona) | {"response": persona * 200})


def test_two_processes_never_corrupt_each_other(tmp_path):
    ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
    procs = [ctx.Process(target=_writer, args=(str(tmp_path), p, 150)) for p in ("a man", "a woman")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(60)
        assert p.exitcode == 0
    lines = (tmp_path / "responses.jsonl").read_text().splitlines()
    assert len(lines) == 300
    recs = [json.loads(line) for line in lines]  # every line is complete JSON
    assert all(r["response"] == r["persona"] * 200 for r in recs)
    assert len(RunStore(tmp_path)) == 300


class _Killed(Exception):
    pass


def test_resume_sends_zero_cached_requests(tmp_path, small_items):
    personas = ["a human", "a man"]
    sent_first = []

    def dies_after_25(p):
        if len(sent_first) == 25:
            raise _Killed
        sent_first.append(p)
        return "Therefore, the answer is (A)."

    store = RunStore(tmp_path)
    with pytest.raises(_Killed):
        run_evaluation(ScriptedBackend(dies_after_25, name="m"), small_items, personas, store)
    assert len(RunStore(tmp_path)) == 25
    second = ScriptedBackend(lambda p: "Therefore, the answer is (B).", name="m")
    summ = run_evaluation(second, small_items, personas, RunStore(tmp_path))
    assert summ.cached == 25 and summ.sent == summ.total - 25 == len(second.calls)
    assert not set(second.calls) & set(sent_first)  # not one cached request re-sent
    third = ScriptedBackend(lambda p: "x", name="m")
    assert run_evaluation(third, small_items, personas, RunStore(tmp_path)).sent == 0 and not third.calls


def test_deadline_stops_a_run_cleanly_and_it_resumes(tmp_path, small_items):
    import time

    be = ScriptedBackend(lambda p: "Therefore, the answer is (C).", name="m")
    summ = run_evaluation(be, small_items, ["a man"], RunStore(tmp_path), deadline=time.monotonic() - 1)
    assert summ.stopped_early and summ.sent == 1 == len(RunStore(tmp_path))
    rest = run_evaluation(be, small_items, ["a man"], RunStore(tmp_path))
    assert not rest.stopped_early and rest.cached == 1 and rest.sent == rest.total - 1
