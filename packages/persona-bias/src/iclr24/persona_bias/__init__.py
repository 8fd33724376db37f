"""Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs (Gupta et al., ICLR 2024).

The paper's evaluation pipeline as a tool: personas and templates as data, datasets, backends (OpenAI-compatible
HTTP, local transformers, scripted), a resumable run store, the official scoring and statistics, and reports.
"""

from . import stats
from .analysis import Comparison
from .analysis import compare_personas
from .analysis import percent_personas_biased
from .analysis import persona_summary
from .backends import Backend
from .backends import Completion
from .backends import EndpointError
from .backends import OpenAIBackend
from .backends import ScriptedBackend
from .backends import TransformersBackend
from .config import CONTROL_PERSONAS
from .config import DEBIAS_INSTRUCTIONS
from .config import DEFAULT_TEMPLATE
from .config import NO_PERSONA
from .config import PAPER_DATASETS
from .config import PAPER_MAX_SIZE
from .config import PAPER_MMLU_SUBSETS
from .config import PAPER_PERSONAS
from .config import PERSONA_GROUPS
from .config import PERSONA_INSTRUCTIONS
from .config import SYSTEM_TEMPLATES
from .config import GenerationConfig
from .config import Prompt
from .config import resolve_personas
from .config import system_prompt
from .data import BUILTIN_TASKS
from .data import Item
from .data import builtin_questions
from .data import format_mc_question
from .data import load_bbh
from .data import load_dataset
from .data import load_jsonl
from .data import load_mbpp
from .data import load_mmlu
from .loopback import LoopbackServer
from .loopback import PlantedBias
from .pipeline import RunSummary
from .pipeline import export_official
from .pipeline import judge_abstentions
from .pipeline import run_evaluation
from .pipeline import score_records
from .prompts import build_prompt
from .prompts import user_prompt
from .released import load_released
from .scoring import detect_abstention
from .scoring import extract_answer
from .scoring import extract_bbh_answer
from .scoring import references_persona
from .scoring import run_mbpp
from .scoring import score_response
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
