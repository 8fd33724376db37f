"""iclr24.paperkit: the small toolkit every iclr24 paper package uses.

The core imports neither torch, scikit-learn, scikit-image nor matplotlib: those come with the extras
``iclr24-paperkit[torch]``, ``[data]`` and ``[plots]`` and are imported only by the functions that need them.
"""

from .bench import BenchReport, BenchResult, bench_table, benchmark, benchmark_many, peak_rss_delta
from .checkpoint import load_checkpoint
from .claims import (
    BUDGETS,
    KINDS,
    MODES,
    VERDICTS,
    Claim,
    ClaimSet,
    ClaimSpec,
    Fact,
    RunConfig,
)
from .data.readers import load_image, load_npz
from .data.user import as_tensors
from .errors import InputError, InputFileError
from .io import atomic_torch_save, atomic_write_bytes, atomic_write_json, atomic_write_text, ensure_out_dir
from .paired import PairedResult, paired_verdict
from .paper import Paper, run_claims
from .plots import save_figure
from .power import Calibration, PowerPlan, power_plan
from .pretrained import PretrainedMixin, load_pretrained
from .progress import is_quiet, progress, set_quiet
from .resume import load_train_state, save_train_state
from .rules import evaluate_rule
from .scale import PaperScale, measure_paper_scale
from .seeding import deterministic, seed_everything, set_deterministic
from .summary import claims_to_markdown, facts_to_markdown, write_claims_json
from .threads import machine_record, pinned_threads
from .tracking import StepLog

__all__ = [
    "BUDGETS",
    "KINDS",
    "MODES",
    "VERDICTS",
    "BenchReport",
    "BenchResult",
    "Calibration",
    "Claim",
    "ClaimSet",
    "ClaimSpec",
    "InputError",
    "InputFileError",
    "PowerPlan",
    "PretrainedMixin",
    "StepLog",
    "Fact",
    "PairedResult",
    "PaperScale",
    "Paper",
    "RunConfig",
    "as_tensors",
    "atomic_torch_save",
    "atomic_write_bytes",
    "atomic_write_json",
    "atomic_write_text",
    "bench_table",
    "benchmark",
    "benchmark_many",
    "peak_rss_delta",
    "save_train_state",
    "claims_to_markdown",
    "deterministic",
    "ensure_out_dir",
    "evaluate_rule",
    "facts_to_markdown",
    "is_quiet",
    "load_train_state",
    "load_checkpoint",
    "load_image",
    "load_npz",
    "load_pretrained",
    "machine_record",
    "measure_paper_scale",
    "paired_verdict",
    "power_plan",
    "run_claims",
    "pinned_threads",
    "progress",
    "save_figure",
    "seed_everything",
    "set_deterministic",
    "set_quiet",
    "write_claims_json",
]
