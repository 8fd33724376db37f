"""Step logging of an evaluation (callbacks, --log-dir), exact resume with the local backend's batches, and
--quiet reaching transformers' own bars."""

import io
import time

import pytest

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.progress import is_quiet
from iclr24.paperkit.progress import set_quiet
from iclr24.paperkit.tracking import read_jsonl
from iclr24.persona_bias import GenerationConfig
from iclr24.persona_bias import RunStore
from iclr24.persona_bias import ScriptedBackend
from iclr24.persona_bias import TransformersBackend
from iclr24.persona_bias import run_evaluation
from iclr24.persona_bias.backends import third_party_bars_off
from iclr24.persona_bias.bench import tiny_chat_model
from iclr24.persona_bias.cli import main
from iclr24.persona_bias.store import record_key


def _answer(p):
    return "Therefore, the answer is (A)."


def test_callbacks_and_log_dir_get_one_record_per_response_and_resume_continues(tmp_path, small_items):
    rows = []
    be = ScriptedBackend(_answer, name="m")
    first = run_evaluation(be, small_items, ["a man"], RunStore(tmp_path / "s"), deadline=time.monotonic() - 1,
                           callbacks=lambda s, m: rows.append((s, m)), log_dir=tmp_path / "log")  # fmt: skip
    assert first.sent == 1 and [s for s, _ in rows] == [0]
    rest = run_evaluation(be, small_items, ["a man"], RunStore(tmp_path / "s"),
                          callbacks=lambda s, m: rows.append((s, m)), log_dir=tmp_path / "log")  # fmt: skip
    assert [s for s, _ in rows] == list(range(first.total))  # the resumed run continues the count
    last = rows[-1][1]
    assert last["done"] == last["total"] == first.total and last["persona"] == "a man" and last["finish_stop"]
    lines = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    ends = [r for r in lines if r["step"] == -1]
    assert len(lines) == first.total + 2 and [e["sent"] for e in ends] == [1, rest.sent]
    assert {r["dataset"] for r in lines if r["step"] >= 0} == set(small_items)


def test_bad_callbacks_or_log_dir_send_nothing(tmp_path, small_items):
    (tmp_path / "f").write_text("x")
    for kw in ({"callbacks": 3}, {"log_dir": tmp_path / "f"}):
        be = ScriptedBackend(_answer, name="m")
        with pytest.raises(InputError):
            run_evaluation(be, small_items, ["a man"], RunStore(tmp_path / "s"), **kw)
        assert not be.calls and len(RunStore(tmp_path / "s")) == 0


def test_interrupted_local_evaluation_resumes_to_the_uninterrupted_store(tmp_path, small_items):
    """Greedy decoding on the tiny local model, batches of 4: stopped after its first batch and resumed, the store
    holds exactly the uninterrupted run's responses, and the remaining prompts went in the uninterrupted run's
    batches (padding differs between batchings, so greedy outputs of a real model could otherwise change)."""
    items = {k: v[:7] for k, v in small_items.items()}
    gen = GenerationConfig(max_tokens=6)
    model, tok = tiny_chat_model()
    be = TransformersBackend(model, tok, name="tiny", batch_size=4)
    batches = []
    inner = be._generate_batch
    be._generate_batch = lambda texts, g: (batches.append(tuple(texts)), inner(texts, g))[1]
    ref = RunStore(tmp_path / "ref")
    run_evaluation(be, items, ["a human", "a man"], ref, gen=gen)
    cut = RunStore(tmp_path / "cut")
    first = run_evaluation(be, items, ["a human", "a man"], cut, gen=gen, deadline=time.monotonic() - 1)
    assert first.stopped_early and first.sent == 4
    n_ref = len(batches) - 1  # the uninterrupted run's batches, then the first batch of the stopped run
    rest = run_evaluation(be, items, ["a human", "a man"], RunStore(tmp_path / "cut"), gen=gen)
    assert batches[n_ref] == batches[0] and batches[n_ref + 1 :] == batches[1:n_ref]
    assert rest.cached == 4 and rest.sent == first.total - 4
    want = {record_key(r): r["response"] for r in ref.records()}
    got = {record_key(r): r["response"] for r in RunStore(tmp_path / "cut").records()}
    assert got == want and len(want) == first.total
    assert (
        len({v for v in want.values()}) > 1
    )  # the responses differ between prompts: the check means something


def test_quiet_reaches_the_gguf_conversion_bar_and_is_restored():
    import transformers.modeling_gguf_pytorch_utils as gguf_utils
    import transformers.utils.logging as tlog

    def drawn():
        out = io.StringIO()
        for _ in gguf_utils.tqdm(range(3), file=out):
            pass
        return out.getvalue()

    before = tlog.is_progress_bar_enabled()  # earlier --quiet runs in this process may have turned it off
    tlog.enable_progress_bar()
    try:
        assert drawn()
        with third_party_bars_off(True):
            assert drawn() == "" and not tlog.is_progress_bar_enabled()
        assert drawn() and tlog.is_progress_bar_enabled()  # both restored
        with third_party_bars_off(False):
            assert drawn()
        was = is_quiet()
        set_quiet(False)
        with third_party_bars_off():  # None: follows paperkit's --quiet
            assert drawn()
        set_quiet(True)
        try:
            with third_party_bars_off():
                assert drawn() == ""
        finally:
            set_quiet(was)
        assert drawn()
    finally:
        (tlog.enable_progress_bar if before else tlog.disable_progress_bar)()


def test_cli_run_log_dir(tmp_path):
    rc = main(["run", "--builtin-size", "3", "--datasets", "builtin-arithmetic", "--personas", "a human,a man",
               "--out", str(tmp_path / "r"), "--log-dir", str(tmp_path / "log"), "--quiet"])  # fmt: skip
    assert rc == 0
    rows = read_jsonl(tmp_path / "log" / "metrics.jsonl")
    assert [r["step"] for r in rows] == [0, 1, 2, 3, 4, 5, -1] and rows[-1]["sent"] == 6
