"""One table of geometry metrics for any layer of any torch model (or for activations you already have)."""

from __future__ import annotations

from dataclasses import asdict
from dataclasses import dataclass

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .metrics import as_matrix
from .metrics import ccgp
from .metrics import cka
from .metrics import condition_means
from .metrics import kernel
from .metrics import parallelism_score
from .metrics import participation_ratio
from .metrics import shattering_dim

__all__ = ["Geometry", "activations", "measure"]


@dataclass(frozen=True)
class Geometry:
    """The metrics of one representation. ``ps``/``ccgp`` are the means over the target dichotomies (per target in
    ``ps_per_target``/``ccgp_per_target``); ``cka_input`` is None when no input kernel was given."""

    cka_target: float
    cka_input: float | None
    ps: float
    ccgp: float
    sd: float
    sd_untrained: float
    participation_ratio: float
    ps_per_target: tuple[float, ...]
    ccgp_per_target: tuple[float, ...]
    n_conditions: int

    def as_dict(self) -> dict:
        d = asdict(self)
        d["ps_per_target"] = list(self.ps_per_target)
        d["ccgp_per_target"] = list(self.ccgp_per_target)
        return d


@torch.no_grad()
def activations(
    model: nn.Module,
    inputs: torch.Tensor | np.ndarray,
    layer: str,
    *,
    batch_size: int = 1024,
    device: str = "cpu",
) -> np.ndarray:
    """The output of the submodule ``layer`` (a name from ``model.named_modules()``) for ``inputs``, flattened to
    ``(n, features)``."""
    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a torch.nn.Module, got {type(model).__name__}")
    modules = dict(model.named_modules())
    if not isinstance(layer, str) or layer not in modules or layer == "":
        names = [n for n in modules if n]
        raise InputError(f"unknown layer {layer!r}; the model's layers are {names[:20]}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**31)
    try:
        x = torch.as_tensor(np.asarray(inputs) if not torch.is_tensor(inputs) else inputs).to(torch.float32)
    except (TypeError, ValueError, RuntimeError, OverflowError) as e:
        raise InputError(f"inputs must be a numeric array, got {describe(inputs)}: {e}") from None
    if x.dim() == 0 or x.shape[0] == 0:
        raise InputError(f"inputs must be a non-empty batch [n, ...], got shape {tuple(x.shape)}")
    if not bool(torch.isfinite(x).all()):
        raise InputError("inputs contain NaN/inf values")
    grabbed: list[torch.Tensor] = []
    handle = modules[layer].register_forward_hook(
        lambda _m, _i, out: grabbed.append(out.detach().flatten(1).cpu())
    )
    was_training = model.training
    model.eval()
    try:
        for start in range(0, x.shape[0], batch_size):
            try:
                model(x[start : start + batch_size].to(device))
            except (
                RuntimeError,
                IndexError,
            ) as e:  # torch's shape/dtype errors, named with the input's shape
                if isinstance(e, InputError):
                    raise
                raise InputError(
                    f"the model cannot take inputs of shape {tuple(x.shape)}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
                ) from e
    finally:
        handle.remove()
        model.train(was_training)
    if not grabbed:
        raise InputError(f"layer {layer!r} is not called by the model's forward pass; nothing to record")
    return torch.cat(grabbed).double().numpy()


def measure(
    source: nn.Module | np.ndarray | torch.Tensor,
    conditions: np.ndarray | torch.Tensor,
    *,
    targets: np.ndarray,
    inputs: np.ndarray | torch.Tensor | None = None,
    layer: str | None = None,
    means: np.ndarray | None = None,
    input_kernel: np.ndarray | None = None,
    classifier: str = "svc",
    rep_noise: float = 0.0,
    max_splits: int | None = None,
    max_dichotomies: int | None = None,
    seed: int = 0,
    device: str = "cpu",
) -> Geometry:
    """Kernel alignment to targets and inputs, parallelism score, CCGP, shattering dimensionality (all and untrained
    dichotomies) and participation ratio of one representation.

    ``source`` is a torch model (then ``inputs`` and ``layer`` are required and the activations of ``layer`` are
    taken) or an array of activations ``(n, N)``; ``conditions (n,)`` names the condition of each row and
    ``targets (P, k)`` the 0/1 label of each condition for each trained target. CCGP and SD use the rows as noisy
    trials; CKA, PS and PR use the condition means (``means (P, N)`` overrides them, e.g. the responses to the
    noise-free inputs). The input kernel is ``input_kernel``, else the kernel of the condition means of ``inputs``.
    """
    if isinstance(source, nn.Module):
        if inputs is None or layer is None:
            raise InputError(
                "measuring a torch model needs inputs= and layer= (a name from model.named_modules())"
            )
        Z = activations(source, inputs, layer, device=device)
    else:
        Z = as_matrix("activations", source)
    Zbar = condition_means(Z, conditions)
    P = Zbar.shape[0]
    try:
        T = np.asarray(
            targets.detach().cpu().numpy() if torch.is_tensor(targets) else targets, dtype=np.float64
        )
    except (TypeError, ValueError) as e:
        raise InputError(
            f"targets must be (P, k) 0/1 labels per condition, got {describe(targets)}: {e}"
        ) from None
    if T.ndim == 1:
        T = T[:, None]
    if T.ndim != 2 or T.shape[0] != P:
        raise InputError(f"targets must be (P, k) = ({P}, k) 0/1 labels per condition, got shape {T.shape}")
    M = Zbar if means is None else as_matrix("means", means)
    if M.shape[0] != P:
        raise InputError(f"means must have one row per condition ({P}), got shape {M.shape}")
    K_y = (2 * T - 1) @ (2 * T - 1).T
    K_z = kernel(M)
    if input_kernel is None and inputs is not None:
        x = inputs.detach().cpu().numpy() if torch.is_tensor(inputs) else np.asarray(inputs)
        if x.ndim == 0 or x.shape[0] != Z.shape[0]:
            raise InputError(
                f"inputs must be a batch of {Z.shape[0]} rows (one per activation row), got {describe(inputs)}"
            )
        input_kernel = kernel(condition_means(x.reshape(x.shape[0], -1), conditions, P))
    cka_in = None if input_kernel is None else cka(K_z, input_kernel)
    ps = tuple(parallelism_score(M, T[:, j]) for j in range(T.shape[1]))
    cc = tuple(
        ccgp(Z, conditions, T[:, j], classifier=classifier, max_splits=max_splits, seed=seed)
        for j in range(T.shape[1])
    )
    kw = dict(classifier=classifier, rep_noise=rep_noise, seed=seed, max_dichotomies=max_dichotomies)
    return Geometry(
        cka_target=cka(K_z, K_y),
        cka_input=cka_in,
        ps=float(np.mean(ps)),
        ccgp=float(np.mean(cc)),
        sd=shattering_dim(Z, conditions, **kw),
        sd_untrained=shattering_dim(Z, conditions, exclude=T.T, **kw),
        participation_ratio=participation_ratio(M),
        ps_per_target=ps,
        ccgp_per_target=cc,
        n_conditions=P,
    )
