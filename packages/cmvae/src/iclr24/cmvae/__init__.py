"""CMVAE: deep generative clustering with multimodal diffusion VAEs (Palumbo et al., ICLR 2024)."""

from .checkpoint import load_checkpoint, save_checkpoint
from .cub import CUBCaptions, load_cub_captions
from .data import MultimodalData, load_multimodal_npz, load_polymnist, poly_digits, poly_mnist
from .diffusion import DiffusionRefiner
from .metrics import cluster_accuracy, clustering_scores, conditional_coherence, unconditional_coherence
from .model import (
    CMVAE,
    ClusterPrediction,
    ClusterSelection,
    MMVAEPlus,
    build_mlp_model,
    majority_vote,
)
from .nets import MLPDecoder, MLPEncoder
from .train import fit

__all__ = [
    "CMVAE",
    "CUBCaptions",
    "MMVAEPlus",
    "MLPEncoder",
    "MLPDecoder",
    "ClusterPrediction",
    "ClusterSelection",
    "DiffusionRefiner",
    "MultimodalData",
    "build_mlp_model",
    "cluster_accuracy",
    "clustering_scores",
    "conditional_coherence",
    "unconditional_coherence",
    "fit",
    "load_checkpoint",
    "load_cub_captions",
    "load_multimodal_npz",
    "load_polymnist",
    "majority_vote",
    "poly_digits",
    "poly_mnist",
    "save_checkpoint",
]
