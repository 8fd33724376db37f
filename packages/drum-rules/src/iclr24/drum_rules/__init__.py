"""Faithful rule extraction for DRUM, SMDRUM and MMDRUM (Wang, Tena Cucala, Cuenca Grau, Horrocks; ICLR 2024)."""

from . import synthetic
from .check import FaithfulnessReport, check_faithfulness, model_consequences
from .checkpoint import load_checkpoint, load_model, load_official_checkpoint, save_checkpoint, save_model
from .data import (
    load_dataset,
    load_drum_dir,
    load_faithfulre_dir,
    load_grail,
    load_real_kg,
    load_tsv,
    perturbed_datasets,
)
from .datalog import consequences, evaluate_naive, walk_counts
from .extract import (
    Explanation,
    explain,
    explanation_program,
    extract_mm_bruteforce,
    faithful_rules,
    path_rules,
    path_weights,
    rank_max_weights,
)
from .kg import KG, KGData
from .model import DRUM
from .rules import Rule, RuleProgram, format_rule
from .train import (
    DegenerateBetaWarning,
    TrainConfig,
    auc_pr,
    link_prediction,
    search_for_beta,
    select_beta,
    train,
)

__all__ = [
    "DRUM",
    "DegenerateBetaWarning",
    "KG",
    "KGData",
    "Explanation",
    "FaithfulnessReport",
    "Rule",
    "RuleProgram",
    "TrainConfig",
    "auc_pr",
    "check_faithfulness",
    "consequences",
    "evaluate_naive",
    "explain",
    "explanation_program",
    "extract_mm_bruteforce",
    "faithful_rules",
    "format_rule",
    "link_prediction",
    "load_checkpoint",
    "load_dataset",
    "load_drum_dir",
    "load_faithfulre_dir",
    "load_grail",
    "load_model",
    "load_official_checkpoint",
    "load_real_kg",
    "load_tsv",
    "model_consequences",
    "path_rules",
    "path_weights",
    "perturbed_datasets",
    "save_checkpoint",
    "save_model",
    "rank_max_weights",
    "search_for_beta",
    "select_beta",
    "synthetic",
    "train",
    "walk_counts",
]
