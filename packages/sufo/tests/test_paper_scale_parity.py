"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.sufo.paper_scale import paper_scale

RECORDED = {
    "config": "BERT-base (12 layers, 768) fine-tune, 512 tokens, batch 8, AdamW 7.6e-06, 25 epochs",
    "micro_batch": 1,
    "accumulation": 8,
    "paper_steps": 6475,
    "dataset": "synthetic reports JSONL, 2,066 reports of 512 tokens",
    "notes": [
        "stand-in: a JSONL of 2,066 synthetic synoptic reports (512 tokens after truncation) "
        "read by load_labelled; the UCSF prostate reports are private",
        "BERT-base shape, randomly initialised (no BERT/BioBERT/PubMedBERT weights offline; a "
        "step's cost does not depend on them), MiniLM's uncased BERT tokenizer; fp32 as the "
        "official code",
        "official run_ft.py: AdamW 7.6e-6, wd 0.01, clip 1.0, warm-up 20%, batch 8, weighted "
        "sampler, 25 epochs (SV: 2,066 training reports)",
        "CPU: micro-batch 1 x 8; CUDA runs the paper's 8 x 1",
    ],
    "flops_per_micro_step": 289913840640,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
