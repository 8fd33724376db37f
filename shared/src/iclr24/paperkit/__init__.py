"""iclr24.paperkit: the small toolkit every iclr24 paper package uses.

A core (this package's modules: claims, rules, statistics, CLI scaffold, run folders, bench, io, threads, seeding,
progress, plots, scale, checkpoints, tracking, torchrun) and two rings around it: :mod:`iclr24.paperkit.data`
(every dataset helper and the data folder) and :mod:`iclr24.paperkit.runner` (the report, the ``iclr24`` umbrella
command, the test helpers). The core imports neither ring; the runner may import the data ring, never the reverse.

The core imports neither torch, scikit-learn, scikit-image nor matplotlib: those come with the extras
``iclr24-paperkit[torch]``, ``[data]`` and ``[plots]`` and are imported only by the functions that need them.
"""

from .bench import BenchReport
from .bench import BenchResult
from .bench import bench_table
from .bench import benchmark
from .bench import benchmark_many
from .bench import peak_rss_delta
from .checkpoint import load_checkpoint
from .claims import BUDGETS
from .claims import KINDS
from .claims import MODES
from .claims import VERDICTS
from .claims import Claim
from .claims import ClaimSet
from .claims import ClaimSpec
from .claims import Fact
from .claims import RunConfig
from .errors import InputError
from .errors import InputFileError
from .io import atomic_torch_save
from .io import atomic_write_bytes
from .io import atomic_write_json
from .io import atomic_write_text
from .io import ensure_out_dir
from .io import fields_dict
from .paired import paired_verdict
from .paper import Paper
from .paper import run_claims
from .plots import save_figure
from .power import Calibration
from .power import power_plan
from .pretrained import PretrainedMixin
from .pretrained import load_pretrained
from .progress import is_quiet
from .progress import progress
from .progress import set_quiet
from .resume import load_train_state
from .resume import save_train_state
from .rules import evaluate_rule
from .scale import PaperScale
from .scale import measure_paper_scale
from .seeding import deterministic
from .seeding import seed_everything
from .summary import claims_to_markdown
from .summary import facts_to_markdown
from .summary import write_claims_json
from .threads import machine_record
from .threads import pinned_threads
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
    "fields_dict",
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
