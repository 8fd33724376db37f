"""LACE's continuous layout diffusion: training loss with the aesthetic constraints, DDIM sampling with conditions
re-imposed through masks (official ``model_diffusion.py``, ``train.py``, ``test.py``).

Notation: x_0 the clean tokens (B, L, C+5), eps ~ N(0, I), x_t = sqrt(ab_t) x_0 + sqrt(1 - ab_t) eps with ab the
cumulative alphas; eps_hat = f(x_t, t) the network; x0_hat = (x_t - sqrt(1 - ab_t) eps_hat) / sqrt(ab_t);
b_hat = clamp(x0_hat[bbox], -1, 1) / 2 + 0.5; w(t) = 0.96^(t+1).
"""

from __future__ import annotations

import numpy as np
import torch

from iclr24.paperkit.distributed import rank_and_world
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_finite
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.resume import check_checkpoint_arg

from .constraints import alignment_loss
from .constraints import global_alignment_loss
from .constraints import overlap_loss
from .layout import as_layouts
from .layout import encode_layout
from .layout import finalize
from .model import LaceConfig
from .model import LayoutDenoiser
from .model import make_model
from .schedule import alphas_cumprod
from .schedule import constraint_weight
from .schedule import cosine_betas
from .schedule import ddim_timesteps
from .schedule import refinement_timesteps

__all__ = [
    "TASKS",
    "condition_mask",
    "predict_x0",
    "ddim_step",
    "constraint_term",
    "training_loss",
    "ddim_sample",
    "guide_x0",
    "train",
    "generate",
    "save_checkpoint",
    "load_checkpoint",
]

TASKS = ("uncond", "c", "cwh", "complete", "refine")


def _ab(cfg: LaceConfig) -> torch.Tensor:
    return torch.tensor(alphas_cumprod(cosine_betas(cfg.num_timesteps)), dtype=torch.float32)


def condition_mask(
    task: str,
    x0: torch.Tensor,
    num_classes: int,
    generator: torch.Generator | None = None,
    keep_first: bool = True,
    keep: float = 0.2,
):
    """Which token entries a task fixes to the real layout: (B, L, C+5) bool (True = fixed).

    ``c``: the one-hot; ``cwh``: the one-hot and w, h; ``complete``: whole tokens of a random subset of the real
    elements (each kept with probability ``keep`` u, u ~ U(0, 1) once per batch: the official ``rand_fix``), and
    with ``keep_first`` (this package's default) also the first real element, so that completion always has a
    condition (the official ``rand_fix`` alone may keep none); ``uncond``: nothing; ``refine``: the one-hot (the
    boxes start from the noisy layout)."""
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; expected one of {TASKS}")
    B, L, D = x0.shape
    m = torch.zeros(B, L, D, dtype=torch.bool)
    if task in ("c", "cwh", "refine"):
        m[..., : num_classes + 1] = True
    if task == "cwh":
        m[..., num_classes + 3 :] = True
    if task == "complete":
        real = x0[..., : num_classes + 1].argmax(-1) != num_classes
        u = torch.rand((), generator=generator)
        kept = (torch.rand(B, L, generator=generator) < keep * u) & real
        if keep_first:
            # at least the first real element of each layout, so completion always has a condition
            kept = kept | (real & (real.long().cumsum(-1) == 1))
        m |= kept[..., None]
    return m


def predict_x0(x_t: torch.Tensor, eps_hat: torch.Tensor, ab_t: torch.Tensor) -> torch.Tensor:
    """x0_hat = (x_t - sqrt(1 - ab_t) eps_hat) / sqrt(ab_t); ``ab_t`` broadcastable (B, 1, 1)."""
    # Eq. (x0_hat): Tweedie-style inversion of x_t = sqrt(ab) x0 + sqrt(1 - ab) eps
    return (x_t - (1 - ab_t).sqrt() * eps_hat) / ab_t.sqrt()


def ddim_step(x_t: torch.Tensor, eps_hat: torch.Tensor, ab_t, ab_prev) -> tuple[torch.Tensor, torch.Tensor]:
    """One DDIM step with eta = 0: returns (x_prev, x0_hat)."""
    ab_t, ab_prev = torch.as_tensor(ab_t, dtype=x_t.dtype), torch.as_tensor(ab_prev, dtype=x_t.dtype)
    x0_hat = predict_x0(x_t, eps_hat, ab_t)
    # Eq. (DDIM, eta = 0): x' = sqrt(ab') x0_hat + sqrt(1 - ab') eps_hat
    return ab_prev.sqrt() * x0_hat + (1 - ab_prev).sqrt() * eps_hat, x0_hat


def constraint_term(
    bbox_hat: torch.Tensor,
    mask: torch.Tensor,
    t: torch.Tensor,
    cfg: LaceConfig,
    bbox_real: torch.Tensor | None = None,
) -> torch.Tensor:
    """w(t) (lambda_a L_align + lambda_o L_overlap) per layout (B,); ``bbox_real`` (the clean boxes in [0, 1]) is
    needed by the 'global' alignment loss only."""
    terms = torch.zeros(bbox_hat.shape[0], dtype=bbox_hat.dtype)
    if cfg.align_weight and cfg.align_type == "global":
        if bbox_real is None:
            raise InputError("the 'global' alignment loss needs bbox_real, the real boxes")
        terms = terms + cfg.align_weight * global_alignment_loss(
            bbox_hat, bbox_real, mask, padding_partners=cfg.align_padding_partners
        )
    elif cfg.align_weight:
        terms = terms + cfg.align_weight * alignment_loss(
            bbox_hat, mask, scale=cfg.align_scale, padding_partners=cfg.align_padding_partners
        )
    if cfg.overlap_weight:
        terms = terms + cfg.overlap_weight * overlap_loss(bbox_hat, mask)
    # Eq. (L): the constraints are weighted by w(t) = 0.96^(t+1)
    return constraint_weight(t.to(bbox_hat.dtype)) * terms


def guide_x0(x0_hat: torch.Tensor, t: int, cfg: LaceConfig, scale: float) -> torch.Tensor:
    """EXTENSION (not in the official code): one gradient step on x0_hat's boxes against
    w(t) (L_align + L_overlap), real elements read from x0_hat's one-hot; ``scale`` is the step size."""
    C = cfg.num_classes
    real = x0_hat[..., : C + 1].argmax(-1) != C
    with torch.enable_grad():
        box = x0_hat[..., C + 1 :].detach().clamp(-1, 1).requires_grad_(True)
        b = box / 2 + 0.5
        w = constraint_weight(torch.full((x0_hat.shape[0],), float(t), dtype=x0_hat.dtype))
        loss = (w * (alignment_loss(b, real, cfg.align_scale) + overlap_loss(b, real))).sum()
        (g,) = torch.autograd.grad(loss, box)
    out = x0_hat.clone()
    out[..., C + 1 :] = x0_hat[..., C + 1 :] - scale * g
    return out


def _check_tokens(
    tokens: object, cfg: LaceConfig, what: str, model: torch.nn.Module | None = None
) -> torch.Tensor:
    if not isinstance(cfg, LaceConfig):
        raise InputError(f"cfg must be a LaceConfig, got {describe(cfg)}")
    want = (cfg.max_elements, cfg.seq_dim)
    if not isinstance(tokens, torch.Tensor) or tokens.ndim != 3 or tuple(tokens.shape[1:]) != want:
        raise InputError(
            f"{what} must be (N, {want[0]}, {want[1]}) tokens (encode_layout), got {describe(tokens)}"
        )
    if not tokens.is_floating_point():
        raise InputError(f"{what} must be floating-point tokens, got {describe(tokens)}")
    check_finite(tokens, what)
    if model is not None:
        if not isinstance(model, torch.nn.Module):
            raise InputError(f"model must be a LayoutDenoiser (make_model), got {describe(model)}")
        w = next(model.parameters(), None)
        if w is not None and w.dtype != tokens.dtype:
            raise InputError(f"{what} is {tokens.dtype} but the model's weights are {w.dtype}: convert one")
    return tokens


def training_loss(
    model: torch.nn.Module, x0: torch.Tensor, cfg: LaceConfig, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, dict]:
    """The official training objective on a batch of clean tokens x0 (B, L, C+5), as one 4B batch:
    (x_t, c-conditioned, cwh-conditioned, completion) sharing t and eps.

    L = L_diff + mean_b[w(t) (lambda_a L_align + lambda_o L_overlap)] + L_rec."""
    _check_tokens(x0, cfg, "x0", model)
    B = x0.shape[0]
    C = cfg.num_classes
    ab = _ab(cfg)
    t = torch.randint(0, cfg.num_timesteps - 1, (B,), generator=generator)  # 0..T-2, as the official randint
    eps = torch.randn(x0.shape, generator=generator)
    ab_t = ab[t][:, None, None]
    x_t = ab_t.sqrt() * x0 + (1 - ab_t).sqrt() * eps
    inputs = [x_t] + [
        torch.where(condition_mask(k, x0, C, generator, cfg.complete_keep_first, cfg.complete_keep), x0, x_t)
        for k in ("c", "cwh", "complete")
    ]
    X = torch.cat(inputs)
    t4, eps4, x04, ab4 = t.repeat(4), eps.repeat(4, 1, 1), x0.repeat(4, 1, 1), ab_t.repeat(4, 1, 1)
    eps_hat = model(X, t4)
    # Eq. (L_diff): ||eps_hat - eps||^2 over all dims
    l_diff = torch.nn.functional.mse_loss(eps_hat, eps4)
    x0_hat = predict_x0(X, eps_hat, ab4)
    box_hat = x0_hat[..., C + 1 :].clamp(-1, 1)
    # Eq. (L_rec): ||x0_hat[bbox] - x0[bbox]||^2 over every token, padding included; the official train.py takes it
    # on the unclamped x0_hat (finite, but weighted by (1 - ab_t) / ab_t through eps_hat); 'clamped' uses box_hat
    rec_in = x0_hat[..., C + 1 :] if cfg.rec_loss == "unclamped" else box_hat
    l_rec = torch.nn.functional.mse_loss(rec_in, x04[..., C + 1 :])
    loss = l_diff + l_rec
    parts = {"diff": l_diff.item(), "rec": l_rec.item(), "constraint": 0.0}
    if cfg.align_weight or cfg.overlap_weight:
        real = x04[..., : C + 1].argmax(-1) != C
        l_con = constraint_term(box_hat / 2 + 0.5, real, t4, cfg, x04[..., C + 1 :] / 2 + 0.5).mean()
        loss = loss + l_con
        parts["constraint"] = l_con.item()
    return loss, parts


@torch.no_grad()
def ddim_sample(
    model: torch.nn.Module,
    x_T: torch.Tensor,
    cfg: LaceConfig,
    steps: int | None = None,
    x_cond: torch.Tensor | None = None,
    cond_mask: torch.Tensor | None = None,
    timesteps: np.ndarray | None = None,
    guidance: float = 0.0,
) -> torch.Tensor:
    """Deterministic DDIM (eta = 0) from x_T; the entries ``cond_mask`` fixes are set to ``x_cond`` before and after
    every step. ``timesteps`` (descending order applied) defaults to the uniform ``steps`` DDIM grid.
    ``guidance`` > 0 turns on the constraint-gradient guidance of x0_hat at each step (an extension, see
    :func:`guide_x0`; the official code has none)."""
    if guidance < 0:
        raise InputError(f"guidance must be >= 0, got {guidance}")
    if (x_cond is None) != (cond_mask is None):
        raise InputError("x_cond and cond_mask go together")
    if cond_mask is not None and bool(cond_mask.all()):
        raise InputError("the condition mask fixes every entry: there is nothing to generate")
    ab = _ab(cfg)
    full = ddim_timesteps(steps or cfg.ddim_steps, cfg.num_timesteps)
    ts = full if timesteps is None else np.asarray(timesteps)
    prev = {int(full[i]): (int(full[i - 1]) if i > 0 else 0) for i in range(len(full))}
    x = x_T.clone()
    for t in ts[::-1]:
        t = int(t)
        if cond_mask is not None:
            x = torch.where(cond_mask, x_cond, x)
        eps_hat = model(x, torch.full((x.shape[0],), t, dtype=torch.long))
        if guidance > 0:
            ab_t, ab_p = ab[t], ab[prev.get(t, 0)]
            x0_hat = guide_x0(predict_x0(x, eps_hat, ab_t), t, cfg, guidance)
            x = ab_p.sqrt() * x0_hat + (1 - ab_p).sqrt() * eps_hat
        else:
            x, _ = ddim_step(x, eps_hat, ab[t], ab[prev.get(t, 0)])
        if cond_mask is not None:
            x = torch.where(cond_mask, x_cond, x)
    return x


def _train_tokens(tokens: object, cfg: LaceConfig) -> torch.Tensor:
    """Tokens from (N, L, C+5) tokens, or a torch ``Dataset`` / ``DataLoader`` of token items (read once, in its
    order) or of ``(bbox, labels, mask)`` layouts (encoded with :func:`encode_layout`)."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if not is_user_data(tokens):
        return tokens
    parts = as_tensors(tokens, what="train data (tokens, or (bbox, labels, mask) layouts)")
    if len(parts) == 1:
        return parts[0]
    if len(parts) == 3:
        return encode_layout(*parts, num_classes=cfg.num_classes, max_elements=cfg.max_elements)
    raise InputError(
        f"train data: items must be (L, C+5) tokens or (bbox, labels, mask) layouts, got {len(parts)} fields"
    )


def _state_path(checkpoint, rank: int):
    """Rank 0's training-state file is ``checkpoint``; rank r's (its own noise stream) ``<stem>.rank<r><suffix>``."""
    from pathlib import Path

    p = Path(checkpoint)
    return p if rank == 0 else p.with_name(f"{p.stem}.rank{rank}{p.suffix}")


def train(
    cfg: LaceConfig,
    tokens: torch.Tensor,
    seed: int = 0,
    steps: int | None = None,
    progress=None,
    *,
    callbacks=None,
    log_dir=None,
    checkpoint=None,
    resume: bool = False,
    checkpoint_every: int = 100,
) -> tuple[LayoutDenoiser, list[dict]]:
    """Train a denoiser on (N, L, C+5) tokens with Adam and gradient-norm clipping; returns (model, loss history),
    the model being the weights' moving average when ``cfg.ema`` > 0.

    ``tokens`` may also be a torch ``Dataset`` or ``DataLoader`` of token items, or of ``(bbox, labels, mask)``
    layouts (encoded with :func:`encode_layout`): read once, in its order, into the tokens, so the run equals the
    run on those tokens. ``callbacks`` / ``log_dir``: paperkit's :class:`~iclr24.paperkit.tracking.StepLog`, called
    after every step with ``loss``, ``diff``, ``rec`` and ``constraint`` (``log_dir``: ``metrics.jsonl``, and
    TensorBoard event files when ``tensorboard`` is installed; rank 0 only under torchrun). ``checkpoint``: a
    training-state file written every ``checkpoint_every`` steps and at the end (model, optimiser, EMA, the batch
    and noise generators, the history); with ``resume=True`` an existing one is continued, and the resumed run ends
    bit for bit as the uninterrupted one.

    Under ``torchrun`` (an initialised ``torch.distributed`` group) the model is wrapped in DDP: every rank draws
    the same global batch of ``batch_size`` indices and trains on its every world-size-th share, with its own
    noise stream; DDP averages the gradients, so every rank holds the same weights. The loss history is the rank's
    own; rank r > 0 keeps its training state (its noise stream) in ``<stem>.rank<r><suffix>`` beside
    ``checkpoint``."""
    from iclr24.paperkit.tracking import StepLog

    if not isinstance(cfg, LaceConfig):
        raise InputError(f"cfg must be a LaceConfig, got {describe(cfg)}")
    tokens = _train_tokens(tokens, cfg)
    _check_tokens(tokens, cfg, "tokens")
    check_int(seed, "seed", minimum=0, maximum=2**63 - 1)
    if steps is not None:
        check_int(steps, "steps", minimum=1, maximum=10**9)
    check_int(checkpoint_every, "checkpoint_every", minimum=1, maximum=10**9)
    check_checkpoint_arg(checkpoint, resume, written="the training-state file")
    rank, world = rank_and_world()
    if world > min(cfg.batch_size, tokens.shape[0]):
        raise InputError(f"{world} ranks need a batch of at least {world} layouts, got {cfg.batch_size}")
    torch.manual_seed(seed)
    g = torch.Generator().manual_seed(seed)  # batch indices: the same on every rank
    g_noise = g if world == 1 else torch.Generator().manual_seed(seed + 7919 * (rank + 1))
    model = make_model(cfg)
    net = model
    if world > 1:
        from torch.nn.parallel import DistributedDataParallel

        net = DistributedDataParallel(model)
    params = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.Adam(params, lr=cfg.lr, betas=(0.9, 0.999), foreach=True)
    ema = None
    if cfg.ema > 0:
        import copy

        ema = copy.deepcopy(model)
        ema_params = [q for q in ema.parameters() if q.requires_grad]
    hist: list[dict] = []
    n = tokens.shape[0]
    total = steps if steps is not None else cfg.steps
    gens = {"batch": g} if world == 1 else {"batch": g, "noise": g_noise}
    meta = {"config": cfg.to_dict(), "steps": total, "seed": seed, "n": n, "world": world}
    state_path = None if checkpoint is None else _state_path(checkpoint, rank)
    start = 0
    if resume and state_path.is_file():
        from iclr24.paperkit.resume import load_train_state

        saved: dict = {}
        start = load_train_state(state_path, model=model, optimizer=opt, generators=gens, expect=meta, into=saved,
                                 what="lace training state")  # fmt: skip
        hist = list(saved.get("history", []))
        if ema is not None:
            ema.load_state_dict(saved["ema"])

    def save(step: int) -> None:
        from iclr24.paperkit.resume import save_train_state

        extra = {"history": hist} | ({"ema": ema.state_dict()} if ema is not None else {})
        save_train_state(state_path, step=step, model=model, optimizer=opt, generators=gens, meta=meta,
                         extra=extra)  # fmt: skip

    log = StepLog(log_dir if rank == 0 else None, callbacks, name="lace")
    try:
        for step in range(start, total):
            idx = torch.randint(0, n, (min(cfg.batch_size, n),), generator=g)[rank::world]
            loss, parts = training_loss(net, tokens[idx], cfg, g_noise)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(params, cfg.grad_clip)
            opt.step()
            if ema is not None:
                with torch.no_grad():
                    # theta_ema <- ema theta_ema + (1 - ema) theta
                    torch._foreach_lerp_(ema_params, params, 1.0 - cfg.ema)
            hist.append({"step": step, "loss": loss.item(), **parts})
            log(step, {k: v for k, v in hist[-1].items() if k != "step"})
            if progress is not None:
                progress(step)
            if state_path is not None and ((step + 1) % checkpoint_every == 0 or step + 1 == total):
                save(step + 1)
    except BaseException:
        log.close()
        raise
    log.close({"final_loss": hist[-1]["loss"] if hist else None, "steps": total})
    out = ema if ema is not None else model
    out.eval()
    return out, hist


def generate(
    model: torch.nn.Module,
    cfg: LaceConfig,
    task: str = "uncond",
    n: int | None = None,
    layouts: tuple[torch.Tensor, torch.Tensor, torch.Tensor] | None = None,
    steps: int | None = None,
    seed: int = 0,
    refine_noise: float = 0.1,
    guidance: float = 0.0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sample layouts: ``uncond`` needs ``n``; the conditional tasks need ``layouts = (bbox, labels, mask)`` (the
    conditions: categories for ``c``, categories + sizes for ``cwh``, some elements for ``complete``, a noisy layout
    for ``refine``). ``guidance`` > 0 turns on the constraint-gradient extension (not in the official code).
    Returns (bbox (B, L, 4) in [0, 1], labels (B, L), mask (B, L))."""
    if task not in TASKS:
        raise InputError(f"unknown task {task!r}; expected one of {TASKS}")
    if not isinstance(model, torch.nn.Module) or not isinstance(cfg, LaceConfig):
        raise InputError(
            f"generate needs a model (nn.Module) and its LaceConfig, got {describe(model)}, {describe(cfg)}"
        )
    check_int(seed, "seed", minimum=0, maximum=2**63 - 1)
    if steps is not None:
        check_int(steps, "steps", minimum=1, maximum=cfg.num_timesteps)
    check_float(refine_noise, "refine_noise", minimum=0)
    check_float(guidance, "guidance", minimum=0)
    g = torch.Generator().manual_seed(seed)
    C = cfg.num_classes
    if task == "uncond":
        if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**6:
            raise InputError(f"unconditional sampling needs 1 <= n <= 10**6 layouts, got {n!r}")
        x_T = torch.randn(n, cfg.max_elements, cfg.seq_dim, generator=g)
        return finalize(ddim_sample(model, x_T, cfg, steps, guidance=guidance), C)
    if layouts is None:
        raise InputError(f"task {task!r} needs layouts=(bbox, labels, mask) to condition on")
    layouts = as_layouts(layouts, "layouts", C)
    x0 = encode_layout(*layouts, num_classes=C, max_elements=cfg.max_elements)
    m = condition_mask(task, x0, C, g, cfg.complete_keep_first, cfg.complete_keep)
    if task == "refine":
        bbox, labels, mask = layouts
        noisy = (bbox + refine_noise * torch.randn(bbox.shape, generator=g)).clamp(0, 1)
        x_start = encode_layout(noisy, labels, mask, C, cfg.max_elements)
        ts = refinement_timesteps(steps or cfg.ddim_steps, cfg.num_timesteps)
        return finalize(ddim_sample(model, x_start, cfg, steps, x0, m, timesteps=ts, guidance=guidance), C)
    x_T = torch.randn(x0.shape, generator=g)
    return finalize(ddim_sample(model, x_T, cfg, steps, x0, m, guidance=guidance), C)


def save_checkpoint(model: torch.nn.Module, cfg: LaceConfig, path) -> None:
    """Save {config, state_dict} (this package's own format), atomically."""
    from pathlib import Path

    from iclr24.paperkit.io import atomic_torch_save

    if not isinstance(cfg, LaceConfig) or not isinstance(model, torch.nn.Module):
        raise InputError(
            f"save_checkpoint needs a model and its LaceConfig, got {describe(model)}, {describe(cfg)}"
        )
    if Path(path).is_dir():
        raise InputFolderError(f"checkpoint path {path} is a folder; expected a file path", path)
    atomic_torch_save({"config": cfg.to_dict(), "state_dict": model.state_dict()}, path)


def load_checkpoint(path, categories: tuple[str, ...] | None = None) -> tuple[LayoutDenoiser, LaceConfig]:
    """Load a model folder (``model.save_pretrained(dir)``; what ``lace train`` writes into ``OUT/model``) or a
    checkpoint file written by :func:`save_checkpoint`: ``(model, cfg)``. ``categories``: the category set the
    caller expects; a checkpoint trained on another set is a ValueError."""
    from pathlib import Path

    from iclr24.paperkit.checkpoint import safe_torch_load

    p = Path(path)
    if p.is_dir():
        model = LayoutDenoiser.from_pretrained(p)
        cfg = getattr(model, "lace_config", None)
        if cfg is None:
            raise InputFileError(
                f"{p} holds a LayoutDenoiser without its LaceConfig (saved from a model not made by make_model); "
                "load it with LayoutDenoiser.from_pretrained and give generate its config",
                p,
            )
        if categories is not None and tuple(categories) != cfg.categories:
            raise InputError(
                f"{p} was trained on categories {list(cfg.categories)}, expected {list(categories)}"
            )
        model.eval()
        return model, cfg
    if not p.exists():
        raise InputFileError(f"no checkpoint at {p}", p)
    obj = safe_torch_load(p, what="lace checkpoint")
    if not isinstance(obj, dict) or not isinstance(obj.get("config"), dict) or "state_dict" not in obj:
        raise InputFileError(f"{p} is not a lace checkpoint (expected keys 'config' and 'state_dict')", p)
    try:
        cfg = LaceConfig(**obj["config"])
    except (TypeError, InputError) as e:
        raise InputFileError(
            f"{p} is not a lace checkpoint of this version: its config does not fit ({e})", p
        ) from None
    if categories is not None and tuple(categories) != cfg.categories:
        raise InputError(f"{p} was trained on categories {list(cfg.categories)}, expected {list(categories)}")
    model = make_model(cfg)
    try:
        model.load_state_dict(obj["state_dict"])
    except (RuntimeError, TypeError, AttributeError) as e:
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        raise InputFileError(
            f"{p}: its weights do not fit the model its config describes ({first})", p
        ) from None
    model.eval()
    return model, cfg
