"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.drum_rules.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "DRUM rank 3, num_step 3, LSTM 128, batch 64 (+inverse = 128 rows), Adam 0.001, 10 epochs",
    "micro_batch": 8,
    "accumulation": 16,
    "paper_steps": 10630,
    "dataset": "synthetic FB15k-237-sized TSVs: 14,541 entities, 237 relations, 272,111 training "
    "triples (204,083 facts, 68,028 queries)",
    "notes": [
        "stand-in: random Freebase-named triples at FB15k-237's counts, tab-separated "
        "train/valid/test.txt in a temporary folder, read by load_tsv; the paper's own runs use "
        "the smaller GraIL FB15k-237 v1-v4 inductive splits (at most 4,707 entities)",
        "micro-batch 8 rows x 16: sized for the earlier sum step, which kept M_k v for all 474 "
        "operators for backward ((2|R|, E, B) floats per step and rank, about 21 GB at 128 "
        "rows); the present gather/scatter step keeps only v",
        "paper steps: 10 epochs (max_epoch; early stopping may end after 5), CPU only as the reference code",
    ],
    "flops_per_micro_step": 35020800,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
