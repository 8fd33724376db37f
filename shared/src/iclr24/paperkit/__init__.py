"""iclr24.paperkit: the small toolkit every iclr24 paper package uses.

A core (this package's modules: claims, rules, statistics, CLI scaffold, run folders, bench, io, threads, seeding,
progress, plots, scale, checkpoints, tracking, torchrun) and two rings around it: :mod:`iclr24.paperkit.data`
(every dataset helper and the data folder) and :mod:`iclr24.paperkit.runner` (the report, the ``iclr24`` umbrella
command, the test helpers). The core imports neither ring; the runner may import the data ring, never the reverse.

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
from .errors import InputError, InputFileError
from .io import atomic_torch_save, atomic_write_bytes, atomic_write_json, atomic_write_text, ensure_out_dir
from .paired import paired_verdict
from .paper import Paper, run_claims
from .plots import save_figure
from .power import Calibration, power_plan
from .pretrained import PretrainedMixin, load_pretrained
from .progress import is_quiet, progress, set_quiet
from .resume import load_train_state, save_train_state
from .rules import evaluate_rule
from .scale import PaperScale, measure_paper_scale
from .seeding import deterministic, seed_everything
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
    "PretrainedMixin",
    "StepLog",
    "Fact",
    "PaperScale",
    "Paper",
    "RunConfig",
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
    "set_quiet",
    "write_claims_json",
]
