import json
import os
import socket

import pytest

from iclr24.persona_bias import EndpointError
from iclr24.persona_bias import GenerationConfig
from iclr24.persona_bias import LoopbackServer
from iclr24.persona_bias import OpenAIBackend
from iclr24.persona_bias import Prompt
from iclr24.persona_bias import RunStore
from iclr24.persona_bias import ScriptedBackend
from iclr24.persona_bias import TransformersBackend
from iclr24.persona_bias import build_prompt
from iclr24.persona_bias import run_evaluation
from iclr24.persona_bias import score_records
from iclr24.persona_bias.backends import MAX_RESPONSE_CHARS
from iclr24.persona_bias.bench import tiny_chat_model


def flat(datasets):
    return [it for its in datasets.values() for it in its]


def _prompts(items, persona="a man"):
    return [build_prompt(it, persona) for it in items]


def test_chat_and_completion_endpoints(small_items, planted):
    items = flat(small_items)[:6]
    with LoopbackServer(items, planted) as srv:
        with OpenAIBackend(srv.base_url, "planted", concurrency=2) as be:
            out = dict(be.generate(_prompts(items), GenerationConfig()))
            assert sorted(out) == list(range(6)) and all("answer is (" in c.text for c in out.values())
            assert out[0].raw["choices"][0]["message"]["content"] == out[0].text
        with OpenAIBackend(srv.base_url, "planted", chat=False) as be:
            p = build_prompt(items[0], "a man", chat=False)
            assert "answer is (" in be.complete(p).text
        # two concurrent requests arrive in either order: check the log as a set
        assert {("a man", it.dataset, it.id) for it in items} <= set(srv.log)


def test_retries_injected_429_and_500(small_items, planted):
    items = flat(small_items)[:4]
    with LoopbackServer(items, planted, fail_first=[429, 500, 503, 429]) as srv:
        with OpenAIBackend(srv.base_url, "planted", concurrency=1, backoff=0.01, max_retries=5) as be:
            out = dict(be.generate(_prompts(items), GenerationConfig()))
        assert len(out) == 4 and be.retries == 4 and srv.faults == 4 and srv.answered == 4


def test_bounded_retries_then_clear_error(small_items, planted):
    items = flat(small_items)[:2]
    with LoopbackServer(items, planted, fault_rate=1.0) as srv:
        with OpenAIBackend(srv.base_url, "planted", max_retries=2, backoff=0.01) as be:
            with pytest.raises(EndpointError, match="failed after 3 attempts; last error: HTTP (429|500)"):
                be.complete(_prompts(items)[0])
        assert srv.requests == 3


def test_bounded_concurrency(small_items, planted):
    items = flat(small_items)[:24]
    with LoopbackServer(items, planted, latency=0.03) as srv:
        with OpenAIBackend(srv.base_url, "planted", concurrency=3) as be:
            assert len(list(be.generate(_prompts(items), GenerationConfig()))) == 24
        assert 2 <= srv.max_inflight <= 3


def test_unreachable_endpoint_and_secret_never_shown(monkeypatch):
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now
    monkeypatch.setenv("MY_SECRET_KEY", "sk-very-secret-123")
    be = OpenAIBackend(
        f"http://127.0.0.1:{port}/v1",
        "m",
        api_key_env="MY_SECRET_KEY",
        max_retries=2,
        backoff=0.01,
        timeout=2,
    )
    with pytest.raises(EndpointError) as e:
        be.complete(Prompt("", "hi"))
    assert "after 3 attempts" in str(e.value) and "connection failed" in str(e.value)
    assert "sk-very-secret" not in str(e.value) and "sk-very-secret" not in repr(be)
    with pytest.raises(ValueError, match="http"):
        OpenAIBackend("localhost:8000", "m")


def test_non_retryable_status_fails_fast(small_items, planted):
    with LoopbackServer(flat(small_items), planted) as srv:
        with OpenAIBackend(srv.base_url.replace("/v1", "/v2"), "planted", max_retries=5) as be:
            with pytest.raises(EndpointError, match="HTTP 404"):
                be.complete(Prompt("", "hi"))
        assert srv.requests == 1


def test_server_dying_mid_run_leaves_a_clean_resumable_store(tmp_path, small_items, planted):
    items = flat(small_items)
    personas = ["a human", "a physically-disabled person"]
    with LoopbackServer(items, planted, die_after=40) as srv:
        with OpenAIBackend(
            srv.base_url, "planted", concurrency=4, max_retries=2, backoff=0.01, timeout=5
        ) as be:
            with pytest.raises(EndpointError):
                run_evaluation(be, small_items, personas, RunStore(tmp_path))
    lines = (tmp_path / "responses.jsonl").read_text().splitlines()
    assert 0 < len(lines) <= 40
    assert all(json.loads(line)["response"] for line in lines)  # nothing half-written
    with LoopbackServer(items, planted) as srv2:
        with OpenAIBackend(srv2.base_url, "planted", concurrency=4) as be:
            summ = run_evaluation(be, small_items, personas, RunStore(tmp_path))
        assert summ.cached == len(lines) and srv2.answered == summ.total - len(lines)
    assert len(score_records(RunStore(tmp_path).records())) == summ.total


def test_empty_and_huge_responses(tmp_path, small_items):
    texts = iter(["", "y" * (MAX_RESPONSE_CHARS + 10)])
    be = ScriptedBackend(lambda p: next(texts), name="m")
    run_evaluation(be, {"d": small_items["builtin-units"][:2]}, ["a man"], RunStore(tmp_path))
    recs = sorted(RunStore(tmp_path).records(), key=lambda r: r["id"])
    assert (
        recs[0]["response"] == "" and len(recs[1]["response"]) == MAX_RESPONSE_CHARS and recs[1]["truncated"]
    )
    scored = score_records(recs)
    assert not any(s["is_correct"] or s["abstained"] for s in scored) and scored[0]["empty"]


def test_transformers_backend_tiny_model(small_items):
    model, tok = tiny_chat_model()
    be = TransformersBackend(model, tok, name="tiny", batch_size=3)
    prompts = _prompts(flat(small_items)[:5])
    out = dict(be.generate(prompts, GenerationConfig(max_tokens=4)))
    assert sorted(out) == list(range(5)) and all(isinstance(c.text, str) for c in out.values())
    assert 0 < be.generated_tokens <= 20
    tok.chat_template = None
    with pytest.raises(ValueError, match="no chat template"):
        TransformersBackend(model, tok, name="tiny")
    plain = TransformersBackend(model, tok, name="tiny", chat=False)
    assert plain.render(prompts[0]) == prompts[0].as_completion()
    with pytest.raises(FileNotFoundError, match="does not exist"):
        TransformersBackend.from_pretrained(os.path.join("no", "such", "model"))
