"""Paper scale (issue 48): the paper's fine-tuning run (official ``run_ft.py`` / ``train_path``) for a few steps.

``PAPER_SCALE``: a 110M BERT-base sequence classifier (12 layers, hidden 768, 12 heads, uncased 30,522-token
vocabulary: the shape of BERT, BioBERT, Clinical BioBERT and PubMedBERT), reports truncated to 512 tokens, AdamW lr
7.6e-6 (weight decay 0.01, none on biases and LayerNorm, eps 1e-8), gradient clipping 1.0, linear warm-up over 20% of
the steps, batch 8, a ``WeightedRandomSampler``, 25 epochs on the SeminalVesicleNone task (2,066 training reports,
binary): 259 steps an epoch. One step is one micro-batch of :func:`~.finetune.fine_tune`'s update.

The prostate reports are private and no BERT-base weights are offline, so the encoder is randomly initialised (the
cost of a step does not depend on the weights) with MiniLM's uncased BERT tokenizer (the same vocabulary), and the
data is a JSONL file of synthetic synoptic reports, each long enough to fill the 512 tokens (the worst case),
written to a temporary folder and read by :func:`~.data.load_labelled`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch

from iclr24.paperkit import PaperScale
from iclr24.paperkit.scale import ScaleRun
from iclr24.paperkit.scale import steps_per_epoch

from .data import load_labelled
from .data import synthetic_reports
from .finetune import _param_groups
from .finetune import balanced_sampler

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale", "write_reports_jsonl"]


@dataclass(frozen=True)
class PaperScaleConfig:
    """``run_ft.py`` defaults on the SV task, with BERT-base's shape (``BertConfig()``)."""

    hidden: int = 768
    layers: int = 12
    heads: int = 12
    intermediate: int = 3072
    vocab_size: int = 30_522
    max_length: int = 512
    num_labels: int = 2  # SeminalVesicleNone: binary
    lr: float = 7.6e-6
    weight_decay: float = 0.01
    eps: float = 1e-8
    max_grad_norm: float = 1.0
    warmup_fraction: float = 0.2
    batch_size: int = 8
    epochs: int = 25
    n_train: int = 2066  # SV training reports (2066/517/324)
    cpu_micro_batch: int = 1  # one 512-token sequence is several seconds on one core: 1 x 8 on the CPU

    @property
    def steps_per_epoch(self) -> int:
        return steps_per_epoch(self.n_train, self.batch_size, drop_last=False)

    @property
    def paper_steps(self) -> int:
        return self.epochs * self.steps_per_epoch


PAPER_SCALE = PaperScaleConfig()


def write_reports_jsonl(path: Path, n: int, repeat: int = 12, seed: int = 0) -> Path:
    """``n`` rows ``{"text", "label"}`` (label "yes" on every 8th row, "no" otherwise: a 12.5% minority, about SV's
    13%): synthetic synoptic reports, each ``repeat`` reports long (past the 512-token truncation)."""
    ds = synthetic_reports(n * repeat, seed=seed, outlier_fraction=0.0)
    minority = np.arange(n) % 8 == 0
    with open(path, "w", encoding="utf-8") as f:
        for i in range(n):
            text = " ".join(ds.texts[i * repeat : (i + 1) * repeat])
            f.write(json.dumps({"text": text, "label": "yes" if minority[i] else "no"}) + "\n")
    return path


def paper_scale(
    device: str = "cpu",
    *,
    items: int = 2066,
    micro_batch: int | None = None,
    cfg: PaperScaleConfig | None = None,
) -> PaperScale:
    """One micro-step of the official fine-tuning on a JSONL of ``items`` synthetic 512-token reports.
    ``micro_batch``: default 8 on CUDA, ``cfg.cpu_micro_batch`` on the CPU; ``cfg``: a smaller config (tests)."""
    from transformers import AutoTokenizer
    from transformers import BertConfig
    from transformers import BertForSequenceClassification
    from transformers import get_linear_schedule_with_warmup

    from .features import minilm_path

    cfg = cfg or PAPER_SCALE
    run = ScaleRun(device, batch=cfg.batch_size, cpu=cfg.cpu_micro_batch, micro_batch=micro_batch)
    tok = AutoTokenizer.from_pretrained(minilm_path(), local_files_only=True)  # uncased BERT vocabulary
    train = load_labelled(write_reports_jsonl(run.folder / "reports.jsonl", items))
    bert = BertConfig(
        vocab_size=cfg.vocab_size,
        hidden_size=cfg.hidden,
        num_hidden_layers=cfg.layers,
        num_attention_heads=cfg.heads,
        intermediate_size=cfg.intermediate,
        max_position_embeddings=512,
        num_labels=cfg.num_labels,
    )
    torch.manual_seed(0)
    model = BertForSequenceClassification(bert).to(device).train()
    opt = torch.optim.AdamW(_param_groups(model, cfg.weight_decay), lr=cfg.lr, eps=cfg.eps)
    total = cfg.paper_steps * run.accumulation
    sched = get_linear_schedule_with_warmup(opt, int(cfg.warmup_fraction * total), total)
    sampler = balanced_sampler(train.labels, seed=0)

    def minibatches():  # fine_tune's epochs: the weighted sampler's draws, a partial last micro-batch dropped
        while True:
            order = list(sampler)
            for at in range(0, len(order) - run.micro_batch + 1, run.micro_batch):
                idx = order[at : at + run.micro_batch]
                texts = [train.texts[i] for i in idx]
                b = tok(texts, padding=True, truncation=True, max_length=cfg.max_length, return_tensors="pt")
                yield b.to(device), torch.as_tensor(train.labels[idx])

    def loss(b, labels):
        return model(**b, labels=labels).loss

    clip = (model.parameters(), cfg.max_grad_norm)
    step = run.train_step(minibatches(), loss, opt, clip=clip, after=sched.step)
    n_tok = len(tok(train.texts[0], truncation=True, max_length=cfg.max_length)["input_ids"])
    notes = [
        f"stand-in: a JSONL of {items:,} synthetic synoptic reports ({n_tok} tokens after truncation) read by "
        "load_labelled; the UCSF prostate reports are private",
        "BERT-base shape, randomly initialised (no BERT/BioBERT/PubMedBERT weights offline; a step's cost does not "
        "depend on them), MiniLM's uncased BERT tokenizer; fp32 as the official code",
        "official run_ft.py: AdamW 7.6e-6, wd 0.01, clip 1.0, warm-up 20%, batch 8, weighted sampler, 25 epochs "
        "(SV: 2,066 training reports)",
    ]
    if not run.cuda and run.micro_batch != cfg.batch_size:
        notes.append(f"CPU: micro-batch {run.micro_batch} x {run.accumulation}; CUDA runs the paper's 8 x 1")
    return run.paper_scale(
        step,
        config=(
            f"BERT-base ({cfg.layers} layers, {cfg.hidden}) fine-tune, {cfg.max_length} tokens, batch "
            f"{cfg.batch_size}, AdamW {cfg.lr:g}, {cfg.epochs} epochs"
        ),
        paper_steps=cfg.paper_steps,
        dataset=f"synthetic reports JSONL, {len(train):,} reports of {n_tok} tokens",
        notes=notes,
    )
