"""SUFO: supervised probing, unsupervised similarity, feature dynamics and outlier analysis of fine-tuned
transformer feature spaces (Hsu et al., ICLR 2024)."""

from .data import TextDataset, icd10cm_chapters, load_labelled, split, synthetic_reports
from .dynamics import Dynamics, feature_dynamics, plot_dynamics
from .features import (
    CLSPoolingWarning,
    extract_features,
    is_causal_decoder,
    load_encoder,
    minilm_path,
    save_encoder,
    tiny_encoder,
)
from .finetune import FineTuneConfig, FineTuneResult, balanced_sampler, fine_tune, predict
from .outliers import OutlierReport, common_outliers, outliers_pc12
from .probing import (
    ProbeConfig,
    ProbeResult,
    freeze_for_probe,
    frozen_encoder_probe,
    layerwise_probe,
    logistic_probe,
    probe_head,
)
from .similarity import constant_features, layerwise_cka, layerwise_rsa, linear_cka, rdm, rsa
from .sparsity import explained_variance, label_separation, low_rank_approx, pc_removal_curve, rank_1_approx

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
