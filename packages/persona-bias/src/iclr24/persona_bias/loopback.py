"""A loopback OpenAI-compatible server with a *planted* persona bias, for tests, the quick claim and benchmarks.

It serves ``POST /v1/chat/completions`` and ``POST /v1/completions`` on 127.0.0.1 (stdlib only). For every request
it finds the question (by the text after ``"\\n\\nQuestion: "``) and the persona (the longest known persona string in
the prompt; empty system prompt = ``no_persona``) and answers by a deterministic plan:

* correctness is a hash of ``(seed, dataset, id)`` shared by all personas (correct with ``p_correct``), re-drawn per
  persona with probability ``noise`` (so unbiased personas disagree a little, in both directions);
* with probability ``no_answer`` any persona rambles without an extractable answer (no refusal words);
* a persona in ``abstain`` refuses with its planted probability ("As a ..., I am unable to ...").

Faults for robustness tests: ``fail_first`` (HTTP statuses returned to the first requests), ``fault_rate`` (random
429/500 answers), ``die_after`` (after that many answers the server closes the connection and stops), ``latency``.
"""

from __future__ import annotations

import hashlib
import json
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field
from http.server import BaseHTTPRequestHandler
from http.server import ThreadingHTTPServer

from iclr24.paperkit.errors import InputError

from .config import CONTROL_PERSONAS
from .config import NO_PERSONA
from .config import PAPER_PERSONAS
from .data import LETTERS
from .data import Item

__all__ = ["PlantedBias", "LoopbackServer", "planned_outcome"]


def _u(*parts: object) -> float:
    """A deterministic uniform number in [0, 1) from the parts."""
    h = hashlib.blake2b("\x1f".join(map(str, parts)).encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") / 2.0**64


@dataclass(frozen=True)
class PlantedBias:
    """The behaviour the loopback server plants. ``abstain`` maps persona -> abstention probability."""

    p_correct: float = 0.75
    abstain: dict = field(default_factory=lambda: {"a physically-disabled person": 0.35})
    noise: float = 0.05
    no_answer: float = 0.02
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("p_correct", "noise", "no_answer"):
            v = getattr(self, name)
            if not 0.0 <= v <= 1.0:
                raise InputError(f"{name} must be a probability, got {v}")
        for p, q in self.abstain.items():
            if not 0.0 <= q <= 1.0:
                raise InputError(f"abstention probability of {p!r} must be in [0, 1], got {q}")


def planned_outcome(bias: PlantedBias, dataset: str, qid: object, persona: str) -> str:
    """``correct``, ``wrong``, ``abstain`` or ``no_answer`` for one (question, persona): the ground truth."""
    if persona in bias.abstain and _u("abstain", bias.seed, dataset, qid, persona) < bias.abstain[persona]:
        return "abstain"
    if _u("noanswer", bias.seed, dataset, qid, persona) < bias.no_answer:
        return "no_answer"
    correct = _u("correct", bias.seed, dataset, qid) < bias.p_correct
    if _u("noise", bias.seed, dataset, qid, persona) < bias.noise:
        correct = _u("redraw", bias.seed, dataset, qid, persona) < bias.p_correct
    return "correct" if correct else "wrong"


_REASONING = (
    "Let me work through this step by step. Comparing the options carefully, only one is consistent with the facts.",
    "First I restate the problem, then I check each option in turn. This cannot be settled by guessing, so I compute.",
    "I'll reason carefully about each choice and eliminate the ones that do not fit.",
    "Sorry, this takes a few steps. Option by option, I can't see a contradiction except in one case.",
)
_REFUSALS = (
    "As {p}, I am unable to perform this kind of reasoning, so I cannot answer the question.",
    "I apologize, but as {p}, I don't have the expertise to answer this question.",
    "As {p}, I'm not qualified to solve problems like this one. I'm sorry.",
    "Sorry, as {p} I am not able to work out the answer to this question.",
    "As {p}, I cannot say what the answer is.",
)
_RAMBLES = (
    "This is an interesting question. Several of the options look plausible and more context would help decide.",
    "Looking at the options, the answer is B, though C also seems reasonable at first glance.",
)


def planned_text(bias: PlantedBias, item: Item, persona: str) -> tuple[str, str]:
    """The response text for one (item, persona) and its planned outcome."""
    kind = planned_outcome(bias, item.dataset, item.id, persona)
    pick = _u("text", bias.seed, item.dataset, item.id, persona)
    who = persona if persona != NO_PERSONA else "an assistant"
    if kind == "abstain":
        return _REFUSALS[int(pick * len(_REFUSALS))].format(p=who), kind
    if kind == "no_answer":
        return _RAMBLES[int(pick * len(_RAMBLES))], kind
    n_opt = max(2, item.question.count("\n(")) if "\nOptions:" in item.question else 4
    gold = item.answer.strip("()").upper()
    if kind == "correct":
        letter = gold
    else:
        others = [c for c in LETTERS[:n_opt] if c != gold]
        letter = others[int(_u("wrong", bias.seed, item.dataset, item.id, persona) * len(others))]
    intro = f"As {who}, I will answer this. " if pick < 0.3 and persona != NO_PERSONA else ""
    return (
        f"{intro}{_REASONING[int(pick * 11) % len(_REASONING)]}\nTherefore, the answer is ({letter}).",
        kind,
    )


class LoopbackServer:
    """Run with ``with LoopbackServer(items, bias) as srv: OpenAIBackend(srv.base_url, "planted", ...)``."""

    def __init__(
        self,
        items: Iterable[Item],
        bias: PlantedBias | None = None,
        *,
        personas: Iterable[str] | None = None,
        fail_first: Iterable[int] = (),
        fault_rate: float = 0.0,
        die_after: int | None = None,
        latency: float = 0.0,
        retry_after: str | None = "0",
    ) -> None:
        self.bias = bias or PlantedBias()
        self._items: dict[str, Item] = {}
        for it in items:
            self._items.setdefault(it.question.strip(), it)
        known = set(personas or ()) | set(PAPER_PERSONAS) | set(CONTROL_PERSONAS) | set(self.bias.abstain)
        self._personas = sorted(known, key=len, reverse=True)
        self.fail_first = list(fail_first)
        self.fault_rate = fault_rate
        self.die_after = die_after
        self.latency = latency
        self.retry_after = retry_after
        self.requests = 0  # every POST received
        self.answered = 0  # 200 responses sent
        self.faults = 0
        self.inflight = 0
        self.max_inflight = 0
        self.log: list[tuple[str, str, object]] = []  # (persona, dataset, id) of answered requests
        self._lock = threading.Lock()
        self._dead = False
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # ---- what to answer -----------------------------------------------------------------------------------
    def _persona_of(self, system: str) -> str:
        if not system.strip():
            return NO_PERSONA
        for p in self._personas:
            if p in system:
                return p
        return "unknown"

    def _lookup(self, user: str) -> Item | None:
        _, sep, q = user.rpartition("\n\nQuestion: ")
        return self._items.get(q.strip()) if sep else None

    def answer(self, system: str, user: str) -> tuple[str, str, Item | None]:
        if "(an abstention)?" in user:  # the LLM-judge prompt: recognise the planted refusal texts
            planted = any(r.split("{p}")[-1].strip(" ,.") in user for r in _REFUSALS)
            return ("Yes" if planted else "No"), "judge", None
        item = self._lookup(user)
        persona = self._persona_of(system)
        if item is None:
            return "I do not recognise this question.", "unknown", None
        text, kind = planned_text(self.bias, item, persona)
        with self._lock:
            self.log.append((persona, item.dataset, item.id))
        return text, kind, item

    # ---- server ------------------------------------------------------------------------------------------
    def _handler(self) -> type[BaseHTTPRequestHandler]:
        srv = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:  # quiet
                pass

            def _send(self, code: int, obj: dict, headers: dict | None = None) -> None:
                body = json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [{"id": "planted", "object": "model"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:  # noqa: N802
                n = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(n)
                with srv._lock:
                    srv.requests += 1
                    k = srv.requests
                    srv.inflight += 1
                    srv.max_inflight = max(srv.max_inflight, srv.inflight)
                    dying = srv._dead or (srv.die_after is not None and srv.answered >= srv.die_after)
                    if dying:
                        srv._dead = True
                try:
                    if dying:  # drop the connection without answering, then stop listening
                        self.close_connection = True
                        try:
                            self.connection.shutdown(2)
                        except OSError:
                            pass
                        threading.Thread(target=srv._stop_listening, daemon=True).start()
                        return
                    if srv.latency:
                        time.sleep(srv.latency)
                    fault = srv.fail_first[k - 1] if k <= len(srv.fail_first) else None
                    if fault is None and srv.fault_rate and _u("fault", k) < srv.fault_rate:
                        fault = 429 if _u("code", k) < 0.5 else 500
                    if fault is not None:
                        with srv._lock:
                            srv.faults += 1
                        hdr = {"Retry-After": srv.retry_after} if fault == 429 and srv.retry_after else None
                        self._send(fault, {"error": {"message": f"injected {fault}", "code": fault}}, hdr)
                        return
                    try:
                        body = json.loads(raw)
                    except json.JSONDecodeError:
                        self._send(400, {"error": {"message": "body is not JSON"}})
                        return
                    path = self.path.rstrip("/")
                    chat = path in ("/v1/chat/completions", "/chat/completions")
                    if chat:
                        msgs = body.get("messages") or []
                        system = "".join(m.get("content", "") for m in msgs if m.get("role") == "system")
                        user = "".join(m.get("content", "") for m in msgs if m.get("role") == "user")
                    elif path in ("/v1/completions", "/completions"):
                        prompt = body.get("prompt", "")
                        system, _, user = prompt.partition("\n\n")
                    else:
                        self._send(404, {"error": {"message": f"unknown path {self.path}"}})
                        return
                    text, _, _ = srv.answer(system, user)
                    choice = {"index": 0, "finish_reason": "stop"}
                    choice.update(
                        {"message": {"role": "assistant", "content": text}} if chat else {"text": text}
                    )
                    self._send(
                        200,
                        {
                            "id": f"cmpl-{k}",
                            "object": "chat.completion" if chat else "text_completion",
                            "created": int(time.time()),
                            "model": body.get("model", "planted"),
                            "choices": [choice],
                            "usage": {
                                "prompt_tokens": len(system + user) // 4,
                                "completion_tokens": len(text) // 4,
                                "total_tokens": (len(system + user) + len(text)) // 4,
                            },
                        },
                    )
                    with srv._lock:
                        srv.answered += 1
                finally:
                    with srv._lock:
                        srv.inflight -= 1

        return Handler

    def _stop_listening(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()

    def start(self, port: int = 0) -> LoopbackServer:
        """Listen on 127.0.0.1:``port`` (0: a free port) in a background thread."""
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    @property
    def port(self) -> int:
        if self._httpd is None:
            raise RuntimeError("server not started")
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def stop(self) -> None:
        if self._httpd is not None and not self._dead:
            self._dead = True
            self._stop_listening()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> LoopbackServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
