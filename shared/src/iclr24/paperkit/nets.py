"""Network pieces that several papers build the same way (torch is imported when one is built)."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Sequence
from typing import Any

__all__ = ["mlp_layers"]


def mlp_layers(d_in: int, widths: Sequence[int], d_out: int, act: Callable[[], Any] | None = None) -> list:
    """The layers of a plain MLP, for ``nn.Sequential(*layers)``: ``Linear(d_in, w_1), act(), Linear(w_1, w_2),
    act(), ..., Linear(w_last, d_out)`` (just ``Linear(d_in, d_out)`` for no widths). ``act``: the activation's
    module class, ``torch.nn.ReLU`` by default. Built in that order, so under one seed they get the weights a
    hand-written loop gets. The sizes are taken as given: check them first (``errors.check_layer_widths``)."""
    from torch import nn

    act = nn.ReLU if act is None else act
    layers: list[nn.Module] = []
    prev = d_in
    for w in widths:
        layers += [nn.Linear(prev, w), act()]
        prev = w
    layers.append(nn.Linear(prev, d_out))
    return layers
