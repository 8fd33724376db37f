"""Dynamic Sparse Training with Structured Sparsity (SRigL; Lasby, Golubeva, Evci, Nica, Ioannou; ICLR 2024).

from iclr24.srigl import SRigL, condense
sparsifier = SRigL(model, optimizer, sparsity=0.9, total_steps=10_000)
...  # optimizer.step(); sparsifier.step()
fast = condense(model, sparsifier)

r = train(TrainConfig(), digits_split())   # the built-in loop; r.save_pretrained("runs/srigl") writes a model folder
sm = SparseModel.from_pretrained("runs/srigl"); fast = condense(sm)
"""

from .condensed import CondensedConv2d
from .condensed import CondensedLinear
from .condensed import auto_variant
from .condensed import condensed_linear
from .convert import condense
from .data import Split
from .data import digits_split
from .data import load_data
from .data import load_npz
from .masks import ablate_neurons
from .masks import constant_fan_in
from .masks import cosine_drop_fraction
from .masks import erk_densities
from .masks import is_update_step
from .masks import layer_budget
from .masks import random_constant_fan_in_mask
from .masks import random_unstructured_mask
from .masks import rigl_update
from .masks import srigl_update
from .model import SparseModel
from .model import build_model
from .model import mlp
from .sparsifier import METHODS
from .sparsifier import Dense
from .sparsifier import NonFiniteError
from .sparsifier import RigL
from .sparsifier import SparseLayer
from .sparsifier import Sparsifier
from .sparsifier import SRigL
from .sparsifier import StaticSparse
from .sparsifier import make_sparsifier
from .train import TrainConfig
from .train import TrainResult
from .train import evaluate
from .train import train

__all__ = [
    "METHODS",
    "NonFiniteError",
    "CondensedConv2d",
    "CondensedLinear",
    "Dense",
    "RigL",
    "SRigL",
    "SparseLayer",
    "SparseModel",
    "Sparsifier",
    "Split",
    "StaticSparse",
    "TrainConfig",
    "TrainResult",
    "ablate_neurons",
    "auto_variant",
    "build_model",
    "condense",
    "condensed_linear",
    "constant_fan_in",
    "cosine_drop_fraction",
    "digits_split",
    "erk_densities",
    "evaluate",
    "is_update_step",
    "layer_budget",
    "load_data",
    "load_npz",
    "make_sparsifier",
    "mlp",
    "random_constant_fan_in_mask",
    "random_unstructured_mask",
    "rigl_update",
    "srigl_update",
    "train",
]
