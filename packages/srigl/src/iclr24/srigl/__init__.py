"""Dynamic Sparse Training with Structured Sparsity (SRigL; Lasby, Golubeva, Evci, Nica, Ioannou; ICLR 2024).

from iclr24.srigl import SRigL, condense
sparsifier = SRigL(model, optimizer, sparsity=0.9, total_steps=10_000)
...  # optimizer.step(); sparsifier.step()
fast = condense(model, sparsifier)

r = train(TrainConfig(), digits_split())   # the built-in loop; r.save_pretrained("runs/srigl") writes a model folder
sm = SparseModel.from_pretrained("runs/srigl"); fast = condense(sm)
"""

from .condensed import CondensedConv2d, CondensedLinear, auto_variant, condensed_linear
from .convert import condense
from .data import Split, digits_split, load_data, load_npz
from .masks import (
    ablate_neurons,
    constant_fan_in,
    cosine_drop_fraction,
    erk_densities,
    is_update_step,
    layer_budget,
    random_constant_fan_in_mask,
    random_unstructured_mask,
    rigl_update,
    srigl_update,
)
from .model import SparseModel, build_model, mlp
from .sparsifier import (
    METHODS,
    Dense,
    NonFiniteError,
    RigL,
    SparseLayer,
    Sparsifier,
    SRigL,
    StaticSparse,
    make_sparsifier,
)
from .train import TrainConfig, TrainResult, evaluate, train

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
