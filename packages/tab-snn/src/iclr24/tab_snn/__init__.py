"""TAB: Temporal Accumulated Batch Normalization in Spiking Neural Networks (Jiang et al., ICLR 2024)."""

from .data import TemporalData
from .data import load_cifar
from .data import load_dvs_cifar10
from .data import seq_digits
from .data import seq_mnist
from .data import static_digits
from .model import SpikingMLP
from .model import SpikingResNet19
from .model import SpikingVGG9
from .model import build_model
from .neurons import LIF
from .neurons import ReadoutIntegrator
from .neurons import direct_encoding
from .neurons import firing_rates
from .norms import BNTT
from .norms import NORMS
from .norms import TAB
from .norms import TDBN
from .norms import TEBN
from .norms import SeqBN
from .norms import make_norm
from .packed import train_packed
from .train import TrainConfig
from .train import TrainResult
from .train import evaluate
from .train import train_model
from .train import train_on

__all__ = [
    "BNTT",
    "LIF",
    "NORMS",
    "TAB",
    "TDBN",
    "TEBN",
    "ReadoutIntegrator",
    "SeqBN",
    "SpikingMLP",
    "SpikingResNet19",
    "SpikingVGG9",
    "TemporalData",
    "TrainConfig",
    "TrainResult",
    "build_model",
    "direct_encoding",
    "evaluate",
    "firing_rates",
    "load_cifar",
    "load_dvs_cifar10",
    "make_norm",
    "seq_digits",
    "seq_mnist",
    "static_digits",
    "train_model",
    "train_on",
    "train_packed",
]
