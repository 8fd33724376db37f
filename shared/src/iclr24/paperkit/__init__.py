"""iclr24.paperkit: the small toolkit every iclr24 paper package uses."""

from .bench import BenchResult, bench_table, benchmark, benchmark_many, peak_rss_delta
from .claims import MODES, Claim, Paper, RunConfig, claims_to_markdown, evaluate_rule, write_claims_json
from .io import atomic_torch_save, atomic_write_bytes, atomic_write_json, atomic_write_text, ensure_out_dir
from .progress import is_quiet, progress, set_quiet
from .seeding import deterministic, seed_everything, set_deterministic, torch_threads

__all__ = [
    "MODES",
    "BenchResult",
    "Claim",
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
    "claims_to_markdown",
    "deterministic",
    "ensure_out_dir",
    "evaluate_rule",
    "is_quiet",
    "progress",
    "seed_everything",
    "set_deterministic",
    "set_quiet",
    "torch_threads",
    "write_claims_json",
]
