"""CMVAE: deep generative clustering with multimodal diffusion VAEs (Palumbo et al., ICLR 2024)."""

from .checkpoint import load_checkpoint
from .checkpoint import save_checkpoint
from .cub import CUBCaptions
from .cub import load_cub_captions
from .data import MultimodalData
from .data import load_multimodal_npz
from .data import load_polymnist
from .data import poly_digits
from .data import poly_mnist
from .diffusion import DiffusionRefiner
from .metrics import cluster_accuracy
from .metrics import clustering_scores
from .metrics import conditional_coherence
from .metrics import unconditional_coherence
from .model import CMVAE
from .model import ClusterPrediction
from .model import ClusterSelection
from .model import MMVAEPlus
from .model import build_mlp_model
from .model import majority_vote
from .nets import MLPDecoder
from .nets import MLPEncoder
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
