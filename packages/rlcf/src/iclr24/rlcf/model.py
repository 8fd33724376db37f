"""CLIP models for the policy and the reward: open_clip models from a local checkpoint, and the small in-process
CLIPs of the offline demo.

Notation (Zhao et al., ICLR 2024, Sec. 3): a CLIP has an image encoder E_img and a text encoder E_txt into a shared
d-dimensional space; its zero-shot classifier over classes c = 1..C is
    pi(c | x) = softmax_c( tau * cos(E_img(x), E_txt(t_c)) ),  tau = exp(logit_scale),
where t_c is the prompt of class c ("a photo of a {class}."). Every model here is an ``open_clip.model.CLIP`` (the
toy ones with their ``visual`` tower swapped for a small conv net), so the policy, the prompt learner and the reward
use the same API as a real ViT-B/16 or ViT-L/14.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import check_tensor
from iclr24.paperkit.errors import describe
from iclr24.paperkit.errors import strip_unsafe_advice

__all__ = [
    "ConvTower",
    "ToyCLIPConfig",
    "train_toy_clip",
    "load_clip",
    "class_logits",
    "encode_class_prompts",
    "tokenize",
    "image_input_spec",
    "check_images",
    "TOY_CONTEXT_LENGTH",
]

TOY_CONTEXT_LENGTH = 16


def tokenize(texts: list[str], context_length: int = 77) -> torch.Tensor:
    """open_clip's BPE tokenizer (the vocabulary ships in the wheel: no network): ``(len(texts), context_length)``
    int64 token ids, each text truncated to fit. ``context_length`` holds at least the start and end tokens (2)."""
    if (
        isinstance(texts, str)
        or not isinstance(texts, list | tuple)
        or not all(isinstance(t, str) for t in texts)
    ):
        raise InputError(f"texts must be a list of strings, got {describe(texts)}")
    if not texts:
        raise InputError("texts is empty: expected at least one string")
    check_int(context_length, "context_length", minimum=2, maximum=2**16)
    import open_clip

    return open_clip.tokenize(list(texts), context_length=context_length)


def image_input_spec(model: nn.Module) -> tuple[int | None, tuple[int, int] | None]:
    """``(channels, (H, W))`` the image encoder of a CLIP (``model.visual``, or ``model`` itself) takes: channels
    from its first ``Conv2d`` (open_clip's ViT patch embedding and ResNet stem, the toy :class:`ConvTower`), the
    side from its ``image_size``; ``None`` where the encoder does not say."""
    visual = getattr(model, "visual", model)
    first = next((m for m in visual.modules() if isinstance(m, nn.Conv2d)), None)
    channels = first.in_channels if first is not None else getattr(visual, "in_chans", None)
    size = getattr(visual, "image_size", None)
    if size is not None:
        size = (int(size[0]), int(size[1])) if isinstance(size, tuple | list) else (int(size), int(size))
    return channels, size


def check_images(model: nn.Module, images, who: str = "model", check_size: bool = True) -> torch.Tensor:
    """``images`` if ``model``'s image encoder can take them: a float tensor ``(N, C, H, W)`` with its channel count
    (and, with ``check_size``, its side); otherwise one ``ValueError`` saying what it takes and what came, before
    torch meets the mismatch deep inside a convolution."""
    if not isinstance(images, torch.Tensor) or images.ndim != 4:
        raise InputError(
            f"the {who} takes images as a tensor (N, C, H, W), got "
            f"{tuple(images.shape) if isinstance(images, torch.Tensor) else type(images).__name__}"
        )
    if not images.is_floating_point():
        raise InputError(f"the {who} takes floating-point images in [0, 1], got {describe(images)}")
    w = next(iter(getattr(model, "visual", model).parameters()), None)
    if w is not None and (images.dtype == torch.float64) != (w.dtype == torch.float64):
        raise InputError(f"the {who}'s weights are {w.dtype}, the images {images.dtype}: convert one")
    channels, size = image_input_spec(model)
    if channels is not None and images.shape[1] != channels:
        raise InputError(
            f"the {who}'s image encoder takes {channels}-channel images (N, {channels}, H, W), got "
            f"{images.shape[1]} channels in shape {tuple(images.shape)}"
        )
    if check_size and size is not None and tuple(images.shape[-2:]) != size:
        raise InputError(
            f"the {who}'s image encoder takes {size[0]}x{size[1]} images, got "
            f"{images.shape[-2]}x{images.shape[-1]} in shape {tuple(images.shape)}"
        )
    return images


class ConvTower(nn.Module):
    """A small conv image encoder with CLIP's interface (``forward(images) -> (B, d)``) for 8x8 one-channel
    digits: three 3x3 convs (GroupNorm + GELU), the middle one with stride 2, then a linear map to ``d``."""

    def __init__(self, width: int = 8, embed_dim: int = 32, in_chans: int = 1, image_size: int = 8) -> None:
        super().__init__()
        w = int(width)
        self.image_size = image_size
        self.in_chans = in_chans
        self.body = nn.Sequential(
            nn.Conv2d(in_chans, w, 3, padding=1),
            nn.GroupNorm(1, w),
            nn.GELU(),
            nn.Conv2d(w, 2 * w, 3, stride=2, padding=1),
            nn.GroupNorm(1, 2 * w),
            nn.GELU(),
            nn.Conv2d(2 * w, 2 * w, 3, padding=1),
            nn.GroupNorm(1, 2 * w),
            nn.GELU(),
        )
        side = (image_size + 1) // 2
        self.proj = nn.Linear(2 * w * side * side, embed_dim)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(self.body(x).flatten(1))


@dataclass(frozen=True)
class ToyCLIPConfig:
    """A tiny CLIP: a :class:`ConvTower` image encoder and open_clip's text transformer."""

    vision_width: int = 8
    embed_dim: int = 32
    text_width: int = 32
    text_heads: int = 4
    text_layers: int = 1
    context_length: int = TOY_CONTEXT_LENGTH

    def __post_init__(self) -> None:
        for name in ("vision_width", "embed_dim", "text_width", "text_heads", "text_layers"):
            check_int(getattr(self, name), name, minimum=1, maximum=2**12)
        check_int(self.context_length, "context_length", minimum=2, maximum=2**12)
        if self.text_width % self.text_heads:
            raise InputError(
                f"text_width {self.text_width} must be divisible by text_heads {self.text_heads}"
            )


def encode_class_prompts(model: nn.Module, tokens: torch.Tensor) -> torch.Tensor:
    """L2-normalised text features ``(C, d)`` of tokenised class prompts."""
    return F.normalize(model.encode_text(tokens).float(), dim=-1)


def class_logits(model: nn.Module, images: torch.Tensor, text_features: torch.Tensor) -> torch.Tensor:
    """Zero-shot logits ``tau * cos(E_img(x), t_c)``, shape ``(B, C)``; ``text_features`` already normalised."""
    img = F.normalize(model.encode_image(images).float(), dim=-1)
    return model.logit_scale.exp().float() * img @ text_features.t()


def train_toy_clip(
    model: nn.Module,
    images,
    labels: torch.Tensor | None = None,
    tokens: torch.Tensor | None = None,
    *,
    steps: int = 500,
    lr: float = 3e-3,
    batch_size: int = 128,
    weight_decay: float = 0.1,
    seed: int = 0,
    progress=None,
    callbacks=None,
    log_dir: str | os.PathLike | None = None,
) -> nn.Module:
    """Train both towers on image-caption pairs: the caption of an image is its class prompt, and the loss is CLIP's
    image-to-text cross-entropy over the C class captions (AdamW). Returns ``model`` in eval mode.

    ``images``, ``labels``: tensors ``(N, C, H, W)`` and ``(N,)``; or your own data: a ``Dataset`` or
    ``DataLoader`` of ``(image, label)`` items (batches) as ``images`` and ``labels`` omitted, read once in its
    order into the same tensors (the mini-batches are drawn from them by ``seed``, so the result is the tensors'
    result). ``tokens``: the tokenised class captions ``(C, L)``. ``callbacks`` (``f(step, metrics)`` or objects
    with ``on_step``) and ``log_dir`` (``metrics.jsonl``, TensorBoard event files when installed) get each step's
    ``loss`` and ``logit_scale`` (tau = exp of it); logging changes no number of the training."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data
    from iclr24.paperkit.tracking import StepLog

    if not isinstance(model, nn.Module):
        raise InputError(f"model must be a CLIP (build_toy_clip), got {describe(model)}")
    if is_user_data(images):
        if labels is not None:
            raise InputError("images is a Dataset/DataLoader of (image, label) items: leave labels out")
        images, labels = as_tensors(images, fields=2, what="training data (image, label)")
    elif labels is None:
        raise InputError(
            "labels are missing: give images and labels, or a Dataset/DataLoader of (image, label)"
        )
    if tokens is None:
        raise InputError("tokens (the tokenised class captions, (C, L)) are missing")
    images = check_images(model, images, "model")
    check_tensor(images, "images", kind="float", finite=True)
    check_tensor(labels, "labels", ndim=1, kind="int")
    check_tensor(tokens, "tokens", ndim=2, kind="int")
    if len(labels) and (int(labels.min()) < 0 or int(labels.max()) >= len(tokens)):
        raise InputError(
            f"labels must index the {len(tokens)} class captions, got values outside [0, {len(tokens)})"
        )
    check_int(steps, "steps", minimum=0, maximum=10**7)
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    check_float(lr, "lr", minimum=0, maximum=10, open_min=True)
    check_float(weight_decay, "weight_decay", minimum=0)
    if len(images) != len(labels) or len(images) == 0:
        raise InputError(
            f"need as many labels as images (> 0), got {len(images)} images, {len(labels)} labels"
        )
    g = torch.Generator().manual_seed(seed)
    opt = torch.optim.AdamW(  # foreach: the same update (bit-identical on CPU) in fewer ops
        [p for p in model.parameters() if p.requires_grad], lr=lr, weight_decay=weight_decay, foreach=True
    )
    log = StepLog(log_dir, callbacks, name="rlcf")
    listening = bool(log.callbacks or log.writers or log.logger.isEnabledFor(10))  # 10: logging.DEBUG
    model.train()
    last = None
    with log:
        for step in range(steps):
            idx = torch.randint(len(images), (batch_size,), generator=g)
            text = F.normalize(model.encode_text(tokens), dim=-1)
            logits = class_logits(model, images[idx], text)
            loss = F.cross_entropy(logits, labels[idx])
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, 4.6052)  # as open_clip's training: tau <= 100
            if listening:
                last = float(loss.detach())
                log(step, {"loss": last, "logit_scale": float(model.logit_scale.detach())})
            if progress is not None:
                progress.update(1)
        log.close({"steps": steps, "loss": last} if last is not None else {"steps": steps})
    model.eval()
    return model


def _load_model_folder(path: Path, arch: str | None, device: str) -> tuple[nn.Module, object]:
    """A CLIP saved as a model folder (model.safetensors, config.json, provenance.json) and its tokenizer."""
    from iclr24.paperkit.pretrained import CONFIG_FILE
    from iclr24.paperkit.pretrained import load_pretrained

    if not (path / CONFIG_FILE).is_file():
        raise InputFolderError(
            f"CLIP checkpoint {path} is a folder without {CONFIG_FILE}; expected a .pt/.bin/.safetensors file or a "
            "model folder written by save_pretrained (rlcf train)"
        )
    if arch is not None:
        raise InputError(
            f"{path} is a model folder: its config.json names the architecture; drop arch={arch!r}"
        )
    model = load_pretrained(path)
    if not (callable(getattr(model, "encode_image", None)) and callable(getattr(model, "encode_text", None))):
        raise InputFileError(f"{path} holds a {type(model).__name__}, not a CLIP", path / CONFIG_FILE)
    ctx = int(getattr(model, "context_length", 77))

    def tokenizer(texts, context_length: int = ctx) -> torch.Tensor:
        return tokenize(list(texts), context_length)

    return model.to(device).eval(), tokenizer


def _sniff_checkpoint(path: Path, what: str) -> None:
    """Refuse, from its first bytes, a file that cannot be a checkpoint (before a model is built for it): a
    ``.safetensors`` starts with an 8-byte header length then ``{``; a torch file is a zip (``PK``) or a pickle."""
    with open(path, "rb") as f:
        head = f.read(16)
    if path.suffix == ".safetensors":
        n = int.from_bytes(head[:8], "little") if len(head) >= 9 else 0
        ok = 0 < n <= path.stat().st_size - 8 and head[8:9] == b"{"
    elif head[:2] == b"PK":  # torch.save / TorchScript: a zip holding <name>/data.pkl
        import zipfile

        try:
            with zipfile.ZipFile(path) as z:
                ok = any(n.endswith("data.pkl") for n in z.namelist())
        except (zipfile.BadZipFile, OSError):
            ok = False
    else:
        ok = head[:1] == b"\x80"
    if not ok:
        kind = "safetensors" if path.suffix == ".safetensors" else "torch"
        raise InputFileError(
            f"{path} is not {what}: not a {kind} file (damaged, truncated or another format)", path
        )


def load_clip(
    arch_or_path: str | os.PathLike, *, arch: str | None = None, device: str = "cpu"
) -> tuple[nn.Module, object]:
    """Load a CLIP from a local file, never from the network: ``(model, tokenizer)``, the model in eval mode.

    - an OpenAI TorchScript/state-dict ``.pt`` (``ViT-B-16.pt`` as ``clip`` downloads it) through
      ``open_clip.load_openai_model(path)``;
    - an open_clip state dict (``.pt``/``.bin``/``.safetensors``) for the architecture ``arch`` (``"ViT-B-16"``,
      ``"ViT-L-14"``, ..., or the path of a model config ``.json``) through ``open_clip.create_model(arch, pretrained=path)`` (``torch.load`` with
      ``weights_only=True``).

    - a model folder written by ``save_pretrained`` (``rlcf train`` writes two: the demo's toy CLIPs), read by
      :func:`iclr24.paperkit.load_pretrained` (``arch`` must be None); the tokenizer uses its context length.

    A missing file or a file that is no CLIP checkpoint is a clear error naming the file."""
    path = Path(arch_or_path).expanduser()
    if not path.exists():
        raise InputFileError(
            f"CLIP checkpoint {path} does not exist; pass a local OpenAI .pt (e.g. ViT-B-16.pt), an open_clip "
            "state dict with --arch, or a model folder of rlcf train (weights are never downloaded)"
        )
    if path.is_dir():
        return _load_model_folder(path, arch, device)
    import open_clip

    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if path.stat().st_size == 0:
        raise InputFileError(f"CLIP checkpoint {path} is empty (0 bytes)", path)
    _sniff_checkpoint(
        path, "an OpenAI CLIP checkpoint" if arch is None else f"an open_clip {arch} checkpoint"
    )
    if arch is None:
        try:
            model = open_clip.load_openai_model(str(path), precision="fp32", device=device)
        except Exception as e:  # noqa: BLE001 - any failure means: not an OpenAI CLIP checkpoint
            raise InputFileError(
                f"{path} is not an OpenAI CLIP checkpoint ({type(e).__name__}: {strip_unsafe_advice(e)[:120]}); for an open_clip "
                "state dict also pass its architecture (arch='ViT-B-16', CLI --arch)"
            ) from None
        return model.eval(), open_clip.get_tokenizer("ViT-B-16")
    if str(arch).endswith(".json"):  # a model config file of one's own (open_clip's model_configs format)
        cfg_path = Path(arch).expanduser()
        if not cfg_path.is_file():
            raise InputFileError(f"open_clip model config {cfg_path} does not exist")
        open_clip.add_model_config(cfg_path)
        arch = cfg_path.stem
    if arch not in open_clip.list_models():
        raise InputError(
            f"unknown open_clip architecture {arch!r}; use a name of open_clip.list_models() (e.g. ViT-B-16) or "
            "the path of a model config .json"
        )
    try:
        model = open_clip.create_model(arch, pretrained=str(path), device=device, weights_only=True)
    except Exception as e:  # noqa: BLE001 - a foreign, truncated or mismatched checkpoint
        raise InputFileError(
            f"{path} is not an open_clip {arch} checkpoint ({type(e).__name__}: {strip_unsafe_advice(e)[:160]})",
            path,
        ) from None
    return model.eval(), open_clip.get_tokenizer(arch)
