"""Paper scale (issue 48): DRUM's reference flags on an FB15k-237-sized graph, and one step at a tiny size."""

from dataclasses import replace

import pytest

from iclr24.drum_rules.data import read_triples
from iclr24.drum_rules.paper_scale import PAPER_SCALE
from iclr24.drum_rules.paper_scale import paper_scale
from iclr24.drum_rules.paper_scale import write_fb15k237_like
from iclr24.drum_rules.reproduce import PAPER
from iclr24.paperkit import measure_paper_scale

TINY = replace(
    PAPER_SCALE,
    n_entities=60,
    n_relations=5,
    n_train=400,
    n_valid=20,
    n_test=20,
    embed_dim=8,
    hidden_dim=8,
    batch_size=8,
    micro_batch=4,
    epochs=2,
)


def test_paper_scale_is_drums_reference_config_on_fb15k237_counts():
    # DRUM / FaithfulRE: --rank 3 --num_step 3 --rnn_state_size 128 --query_embed_size 128 --batch_size 64
    # --max_epoch 10 --learning_rate 1e-3; FB15k-237: 14,541 entities, 237 relations, 272,115 training triples
    c = PAPER_SCALE
    assert (c.rank, c.steps + 1, c.hidden_dim, c.embed_dim, c.batch_size, c.epochs, c.lr) == (
        3,
        3,
        128,
        128,
        64,
        10,
        1e-3,
    )
    assert (c.n_entities, c.n_relations, c.n_train, c.n_valid, c.n_test) == (
        14_541,
        237,
        272_115,
        17_535,
        20_466,
    )
    # 68,029 training queries (a quarter of the triples), doubled by inverses, 128 rows a step, 10 epochs
    assert c.n_queries == 2 * 68_029 and c.paper_steps == 10 * 1063
    assert (c.micro_batch, c.rows_per_step // c.micro_batch) == (8, 16)  # 8 rows x 16 (memory and CPU time)
    assert PAPER.paper_scale is paper_scale


def test_one_tiny_step_through_the_tsv_loader(tmp_path):
    spec = paper_scale("cpu", cfg=TINY)
    row = measure_paper_scale(spec, steps=1, warmup=0)
    assert (row["micro_batch"], row["accumulation"], row["paper_steps"]) == (4, 4, 2 * 13)
    assert row["flops_per_paper_step"] > 0 and "60 entities, 5 relations" in row["dataset"]
    folder = write_fb15k237_like(tmp_path / "kg", TINY)
    rows = read_triples(folder / "train.txt")
    assert len(rows) == 400 and all(h.startswith("/m/0") and r.startswith("/domain") for h, r, _ in rows)
    assert "\t" in (folder / "valid.txt").read_text().splitlines()[0]
    with pytest.raises(ValueError, match="CPU only"):
        paper_scale("cuda", cfg=TINY)
    with pytest.raises(ValueError, match="must divide"):
        paper_scale("cpu", cfg=replace(TINY, micro_batch=5))
