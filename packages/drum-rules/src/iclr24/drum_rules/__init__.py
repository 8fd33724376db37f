"""Faithful rule extraction for DRUM, SMDRUM and MMDRUM (Wang, Tena Cucala, Cuenca Grau, Horrocks; ICLR 2024)."""

from . import synthetic
from .check import FaithfulnessReport
from .check import check_faithfulness
from .check import model_consequences
from .checkpoint import load_checkpoint
from .checkpoint import load_model
from .checkpoint import load_official_checkpoint
from .checkpoint import save_checkpoint
from .checkpoint import save_model
from .data import load_dataset
from .data import load_drum_dir
from .data import load_faithfulre_dir
from .data import load_grail
from .data import load_real_kg
from .data import load_tsv
from .data import perturbed_datasets
from .datalog import consequences
from .datalog import evaluate_naive
from .datalog import walk_counts
from .extract import Explanation
from .extract import explain
from .extract import explanation_program
from .extract import extract_mm_bruteforce
from .extract import faithful_rules
from .extract import path_rules
from .extract import path_weights
from .extract import rank_max_weights
from .kg import KG
from .kg import KGData
from .model import DRUM
from .rules import Rule
from .rules import RuleProgram
from .rules import format_rule
from .train import DegenerateBetaWarning
from .train import TrainConfig
from .train import auc_pr
from .train import link_prediction
from .train import search_for_beta
from .train import select_beta
from .train import train

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
