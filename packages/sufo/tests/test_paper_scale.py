"""Paper scale (issue 48): the official fine-tuning configuration, and one step at a tiny size on a JSONL file."""

import json
from dataclasses import replace

import pytest

from iclr24.paperkit import measure_paper_scale
from iclr24.sufo.data import load_labelled
from iclr24.sufo.paper_scale import PAPER_SCALE
from iclr24.sufo.paper_scale import paper_scale
from iclr24.sufo.paper_scale import write_reports_jsonl
from iclr24.sufo.reproduce import PAPER


def test_paper_scale_is_the_official_fine_tuning_config():
    # run_ft.py / train_path: AdamW lr 7.6e-6, weight decay 0.01, eps 1e-8, clip 1.0, warm-up 20%, batch 8,
    # 25 epochs, 512 tokens; BERT-base shape; SV task: 2,066 training reports -> 259 steps an epoch
    c = PAPER_SCALE
    assert (c.layers, c.hidden, c.heads, c.intermediate, c.vocab_size, c.max_length) == (
        12,
        768,
        12,
        3072,
        30_522,
        512,
    )
    assert (c.lr, c.weight_decay, c.eps, c.max_grad_norm, c.warmup_fraction) == (7.6e-6, 0.01, 1e-8, 1.0, 0.2)
    assert (c.batch_size, c.epochs, c.n_train) == (8, 25, 2066)
    assert c.steps_per_epoch == 259 and c.paper_steps == 6475
    assert PAPER.paper_scale is paper_scale


def test_one_tiny_step_on_a_reports_jsonl(tmp_path):
    tiny = replace(
        PAPER_SCALE, hidden=16, layers=1, heads=2, intermediate=32, max_length=64, epochs=2, n_train=16
    )
    spec = paper_scale("cpu", items=12, micro_batch=2, cfg=tiny)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (2, 4, 2 * 2)
    assert row["flops_per_paper_step"] > 0 and "12 reports of 64 tokens" in row["dataset"]
    path = write_reports_jsonl(tmp_path / "r.jsonl", 10)
    first = json.loads(path.read_text().splitlines()[0])
    assert set(first) == {"text", "label"} and "gleason" in first["text"]
    ds = load_labelled(path)
    assert len(ds) == 10 and ds.label_names == ["no", "yes"] and ds.labels.tolist().count(1) == 2
    with pytest.raises(ValueError, match="must divide"):
        paper_scale("cpu", items=12, micro_batch=3, cfg=tiny)
