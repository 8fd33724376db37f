"""Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs (Gupta et al., ICLR 2024).

The paper's evaluation pipeline as a tool: personas and templates as data, datasets, backends (OpenAI-compatible
HTTP, local transformers, scripted), a resumable run store, the official scoring and statistics, and reports.
"""

from . import stats
from .analysis import Comparison, compare_personas, percent_personas_biased, persona_summary
from .backends import Backend, Completion, EndpointError, OpenAIBackend, ScriptedBackend, TransformersBackend
from .config import (
    CONTROL_PERSONAS,
    DEBIAS_INSTRUCTIONS,
    DEFAULT_TEMPLATE,
    NO_PERSONA,
    PAPER_DATASETS,
    PAPER_MAX_SIZE,
    PAPER_MMLU_SUBSETS,
    PAPER_PERSONAS,
    PERSONA_GROUPS,
    PERSONA_INSTRUCTIONS,
    SYSTEM_TEMPLATES,
    GenerationConfig,
    Prompt,
    resolve_personas,
    system_prompt,
)
from .data import (
    BUILTIN_TASKS,
    Item,
    builtin_questions,
    format_mc_question,
    load_bbh,
    load_dataset,
    load_jsonl,
    load_mbpp,
    load_mmlu,
)
from .loopback import LoopbackServer, PlantedBias
from .pipeline import RunSummary, export_official, judge_abstentions, run_evaluation, score_records
from .prompts import build_prompt, user_prompt
from .released import load_released
from .scoring import (
    detect_abstention,
    extract_answer,
    extract_bbh_answer,
    references_persona,
    run_mbpp,
    score_response,
)
from .store import RunStore

__all__ = [
    "BUILTIN_TASKS",
    "CONTROL_PERSONAS",
    "DEBIAS_INSTRUCTIONS",
    "DEFAULT_TEMPLATE",
    "NO_PERSONA",
    "PAPER_DATASETS",
    "PAPER_MAX_SIZE",
    "PAPER_MMLU_SUBSETS",
    "PAPER_PERSONAS",
    "PERSONA_GROUPS",
    "PERSONA_INSTRUCTIONS",
    "SYSTEM_TEMPLATES",
    "Backend",
    "Comparison",
    "Completion",
    "EndpointError",
    "GenerationConfig",
    "Item",
    "LoopbackServer",
    "OpenAIBackend",
    "PlantedBias",
    "Prompt",
    "RunStore",
    "RunSummary",
    "ScriptedBackend",
    "TransformersBackend",
    "build_prompt",
    "builtin_questions",
    "compare_personas",
    "load_released",
    "detect_abstention",
    "export_official",
    "extract_answer",
    "extract_bbh_answer",
    "format_mc_question",
    "judge_abstentions",
    "load_bbh",
    "load_dataset",
    "load_jsonl",
    "load_mbpp",
    "load_mmlu",
    "percent_personas_biased",
    "persona_summary",
    "references_persona",
    "resolve_personas",
    "run_evaluation",
    "run_mbpp",
    "score_records",
    "score_response",
    "stats",
    "system_prompt",
    "user_prompt",
]
