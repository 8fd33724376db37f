"""Benchmarks behind the ``bench`` subcommand: ours against the baseline in one run, ratios of medians.

* requests/s against the loopback server at concurrency 4 and 16 (baseline: concurrency 1), 5 ms server latency;
* resume: rerunning a complete run store (nothing left to send) against a fresh run at concurrency 16;
* prompt building for the paper's full grid (24 datasets x 19 personas x 3 templates; built-in questions stand in
  for the real ones);
* answer extraction of 100k responses (baseline: the official two-step rule re-compiling its regexes per call);
* local-model generation batched vs one prompt at a time (a tiny random GPT-2 in quick mode, SmolLM2 in full).
"""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

from iclr24.paperkit import BenchReport
from iclr24.paperkit import BenchResult
from iclr24.paperkit import benchmark
from iclr24.paperkit.errors import InputError

from .backends import OpenAIBackend
from .config import CONTROL_PERSONAS
from .config import NO_PERSONA
from .config import PAPER_DATASETS
from .config import PAPER_PERSONAS
from .config import PERSONA_INSTRUCTIONS
from .config import GenerationConfig
from .data import BUILTIN_TASKS
from .data import Item
from .data import builtin_questions
from .loopback import LoopbackServer
from .loopback import PlantedBias
from .pipeline import run_evaluation
from .prompts import build_prompt
from .scoring import extract_answer
from .store import RunStore

__all__ = ["run_benchmarks", "tiny_chat_model"]


def _official_extract(text: str) -> str | None:
    matches = re.findall(r"answer is:?\s*(.*)", text, re.IGNORECASE)
    if matches:
        text = matches[-1].strip().strip(".")
    text = text.strip("\n").strip().strip(".")
    m = re.search(r"\(([a-z])\)", text, re.IGNORECASE)
    return m.group(1).upper() if m else None


def tiny_chat_model(seed: int = 0):
    """A tiny random GPT-2 with an in-process word-level tokenizer that has a chat template (offline plumbing)."""
    import torch
    from tokenizers import Tokenizer
    from tokenizers import models
    from tokenizers import pre_tokenizers
    from transformers import GPT2Config
    from transformers import GPT2LMHeadModel
    from transformers import PreTrainedTokenizerFast

    words = sorted({w for t in BUILTIN_TASKS for it in builtin_questions(t, 20) for w in it.question.split()})
    vocab = {"<pad>": 0, "<eos>": 1, "<unk>": 2, **{w: i + 3 for i, w in enumerate(words[:2000])}}
    tk = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk, pad_token="<pad>", eos_token="<eos>", unk_token="<unk>"
    )
    tok.chat_template = "{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}assistant:"
    torch.manual_seed(seed)
    model = GPT2LMHeadModel(
        GPT2Config(
            vocab_size=len(vocab),
            n_positions=512,
            n_layer=2,
            n_head=2,
            n_embd=64,
            eos_token_id=1,
            pad_token_id=0,
            bos_token_id=1,
        )
    )
    return model, tok


def run_benchmarks(mode: str = "quick") -> BenchReport:
    """Requests/s by concurrency, prompt building, extraction, McNemar, the MBPP runner and local-model batching.
    ``mode``: smoke and quick run the same small sizes (a tiny random GPT-2); full uses 160 requests and SmolLM2."""
    if mode not in ("smoke", "quick", "full"):
        raise InputError(f"mode must be smoke, quick or full, got {mode!r}")
    res = _http_and_prompts(quick=mode != "full") + _local_model(quick=mode != "full")
    notes = [
        "ours and the baseline interleaved in one run; medians of the repeats; speedup = baseline / ours",
        "HTTP: the loopback server with 5 ms latency per request; built-in questions stand in for the paper's",
        "local model: a tiny random GPT-2 (smoke, quick) or SmolLM2-135M-Instruct (full), 8 prompts",
    ]
    return BenchReport(results=res, notes=notes)


def _http_and_prompts(quick: bool) -> list[BenchResult]:
    res: list[BenchResult] = []
    gen = GenerationConfig(max_tokens=64)

    # 1. HTTP throughput by concurrency
    items = builtin_questions("arithmetic", 48 if quick else 160, seed=0)
    with LoopbackServer(items, PlantedBias(), latency=0.005) as srv:
        prompts = [build_prompt(it, "a man") for it in items]

        def http(c: int):
            def f() -> None:
                with OpenAIBackend(srv.base_url, "planted", concurrency=c, backoff=0.01) as be:
                    for _ in be.generate(prompts, gen):
                        pass

            return f

        for c in (4, 16):
            res.append(
                benchmark(
                    http(c),
                    baseline=http(1),
                    repeats=3 if quick else 5,
                    warmup=1,
                    name=f"{len(prompts)} requests, concurrency {c}",
                    baseline_name="concurrency 1",
                )
            )

        # 1b. resume: a rerun on a complete store sends no request (it reads the store and plans nothing)
        ds = {"builtin-arithmetic": items}
        with (
            tempfile.TemporaryDirectory() as tmp,
            OpenAIBackend(srv.base_url, "planted", concurrency=16, backoff=0.01) as be,
        ):
            done = RunStore(Path(tmp) / "done")
            run_evaluation(be, ds, ["a man"], done, gen=gen)
            fresh_runs = iter(range(1_000_000))

            def resume() -> None:
                if run_evaluation(be, ds, ["a man"], done, gen=gen).sent:
                    raise RuntimeError("a rerun on a complete store sent requests")

            def fresh() -> None:
                run_evaluation(be, ds, ["a man"], RunStore(Path(tmp) / f"f{next(fresh_runs)}"), gen=gen)

            res.append(
                benchmark(
                    resume,
                    baseline=fresh,
                    repeats=3 if quick else 5,
                    warmup=1,
                    name=f"resume a complete store of {len(items)} records (0 requests sent)",
                    baseline_name="fresh run, concurrency 16",
                )
            )

    # 2. prompt building for the paper's grid
    personas = (*PAPER_PERSONAS, *CONTROL_PERSONAS, NO_PERSONA)
    per_ds = 10 if quick else 100
    qs = [
        Item(id=i, question=it.question, answer=it.answer, dataset=ds)
        for ds in PAPER_DATASETS
        if ds != "mbpp"
        for i, it in enumerate(builtin_questions("units", per_ds))
    ]

    def build() -> None:
        for t in PERSONA_INSTRUCTIONS:
            for p in personas:
                for it in qs:
                    build_prompt(it, p, t)

    n_prompts = len(qs) * len(personas) * len(PERSONA_INSTRUCTIONS)
    res.append(
        benchmark(build, repeats=3, warmup=1, name=f"build {n_prompts} prompts (23 datasets x 19 x 3)")
    )

    return res + _extraction(quick)


def _extraction(quick: bool) -> list[BenchResult]:
    res: list[BenchResult] = []
    # 3. extraction of 100k responses
    texts = [
        f"Step {i}: reasoning...\nTherefore, the answer is ({'ABCD'[i % 4]})."
        if i % 7
        else "As a person, I am unable to answer."
        for i in range(100_000 if not quick else 20_000)
    ]

    def ours() -> None:
        for t in texts:
            extract_answer(t)

    def naive() -> None:
        re.purge()
        for t in texts:
            _official_extract(t)

    res.append(
        benchmark(
            ours,
            baseline=naive,
            repeats=3,
            warmup=1,
            name=f"extract {len(texts)} answers",
            baseline_name="official rule via re.findall/search",
        )
    )

    # 4. statistics: McNemar over ~1.4k paired answers (official scale: 24 datasets x ~60 questions per persona)
    import numpy as np

    from . import stats as _stats

    rng = np.random.default_rng(0)
    c, t = (rng.random((24, 60)) < 0.75).astype(int), (rng.random((24, 60)) < 0.6).astype(int)

    def sig() -> None:
        for j in range(24):
            _stats.mcnemar_pairs(c[j], t[j])

    res.append(benchmark(sig, repeats=5, warmup=1, name="McNemar on 24 datasets x 60 pairs (1,440 pairs)"))

    # 5. MBPP runner: one program in a fresh Python process
    from .scoring import run_mbpp

    prog = "```python\ndef add(a, b):\n    return a + b\n```"
    res.append(
        benchmark(
            lambda: run_mbpp(prog, [], ["assert add(1, 2) == 3"]),
            repeats=3,
            warmup=1,
            name="MBPP runner, one program",
        )
    )

    return res


def _local_model(quick: bool) -> list[BenchResult]:
    # 6. local model: batched vs one at a time
    from .backends import TransformersBackend

    res: list[BenchResult] = []

    if quick:
        model, tok = tiny_chat_model()
        be = TransformersBackend(model, tok, name="tiny-gpt2", batch_size=8)
        one = TransformersBackend(model, tok, name="tiny-gpt2", batch_size=1)
    else:
        be = TransformersBackend.smollm2(batch_size=8)
        one = TransformersBackend(be.model, be.tokenizer, name=be.name, batch_size=1)
    lp = [build_prompt(it, "a woman") for it in builtin_questions("sequence", 8)]
    lgen = GenerationConfig(max_tokens=16 if quick else 32)

    def run_be(b):
        return lambda: list(b.generate(lp, lgen))

    res.append(
        benchmark(
            run_be(be),
            baseline=run_be(one),
            repeats=3 if quick else 2,
            warmup=1,
            name=f"{be.name}: 8 prompts, batch 8",
            baseline_name="batch 1",
        )
    )
    return res
