"""SUFO: supervised probing, unsupervised similarity, feature dynamics and outlier analysis of fine-tuned
transformer feature spaces (Hsu et al., ICLR 2024)."""

from .data import TextDataset
from .data import icd10cm_chapters
from .data import load_labelled
from .data import split
from .data import synthetic_reports
from .dynamics import Dynamics
from .dynamics import feature_dynamics
from .dynamics import plot_dynamics
from .features import CLSPoolingWarning
from .features import extract_features
from .features import is_causal_decoder
from .features import load_encoder
from .features import minilm_path
from .features import save_encoder
from .features import tiny_encoder
from .finetune import FineTuneConfig
from .finetune import FineTuneResult
from .finetune import balanced_sampler
from .finetune import fine_tune
from .finetune import predict
from .outliers import OutlierReport
from .outliers import common_outliers
from .outliers import outliers_pc12
from .probing import ProbeConfig
from .probing import ProbeResult
from .probing import freeze_for_probe
from .probing import frozen_encoder_probe
from .probing import layerwise_probe
from .probing import logistic_probe
from .probing import probe_head
from .similarity import constant_features
from .similarity import layerwise_cka
from .similarity import layerwise_rsa
from .similarity import linear_cka
from .similarity import rdm
from .similarity import rsa
from .sparsity import explained_variance
from .sparsity import label_separation
from .sparsity import low_rank_approx
from .sparsity import pc_removal_curve
from .sparsity import rank_1_approx

__all__ = [
    "CLSPoolingWarning",
    "Dynamics",
    "FineTuneConfig",
    "FineTuneResult",
    "OutlierReport",
    "ProbeConfig",
    "ProbeResult",
    "TextDataset",
    "balanced_sampler",
    "common_outliers",
    "constant_features",
    "explained_variance",
    "extract_features",
    "feature_dynamics",
    "fine_tune",
    "freeze_for_probe",
    "frozen_encoder_probe",
    "icd10cm_chapters",
    "is_causal_decoder",
    "label_separation",
    "layerwise_cka",
    "layerwise_probe",
    "layerwise_rsa",
    "linear_cka",
    "load_encoder",
    "load_labelled",
    "logistic_probe",
    "low_rank_approx",
    "minilm_path",
    "outliers_pc12",
    "pc_removal_curve",
    "plot_dynamics",
    "predict",
    "probe_head",
    "rank_1_approx",
    "rdm",
    "rsa",
    "save_encoder",
    "split",
    "synthetic_reports",
    "tiny_encoder",
]
