"""TAB: Temporal Accumulated Batch Normalization in Spiking Neural Networks (Jiang et al., ICLR 2024)."""

from .data import TemporalData, load_cifar, load_dvs_cifar10, seq_digits, seq_mnist, static_digits
from .model import SpikingMLP, SpikingResNet19, SpikingVGG9, build_model
from .neurons import LIF, ReadoutIntegrator, direct_encoding, firing_rates
from .norms import BNTT, NORMS, TAB, TDBN, TEBN, SeqBN, make_norm
from .packed import train_packed
from .train import TrainConfig, TrainResult, evaluate, train_model, train_on

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
