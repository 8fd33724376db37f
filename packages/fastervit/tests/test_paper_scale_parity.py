"""Parity (issue 65): ``paper_scale("cpu")`` on paperkit's shared blocks gives the row it gave before the
migration: configuration, batch arithmetic, dataset, notes and the FLOPs of one micro-step, as captured then."""

from iclr24.fastervit.paper_scale import paper_scale
from iclr24.paperkit.scale import fingerprint

RECORDED = {
    "config": "faster_vit_0_224 at 224px, batch 4096 (128/GPU), AdamW lr 0.005 cosine (warm-up 20 ep, "
    "min 5e-06), wd 0.005, clip 5, mixup/cutmix, RandAugment, erasing 0.25, EMA 0.9998, 310 "
    "epochs x 312 steps",
    "micro_batch": 4,
    "accumulation": 1024,
    "paper_steps": 96720,
    "dataset": "synthetic ImageNet-format JPEG folder: 2,000 train images, 1000 classes",
    "notes": [
        "stand-in data: 2,000 synthetic 500x375 JPEGs in ImageNet's train/<wnid>/ layout (1000 "
        "classes), read by image_folder_datasets with the paper's RandAugment and streamed by a "
        "DataLoader",
        "the official global batch of 4,096 is 32 GPUs x 128; a paper step here is "
        "micro-batches x accumulation on one device (each micro-step also clips, steps AdamW "
        "and updates the EMA: a slight over-estimate)",
        "CPU: 4 images per micro-step, fp32 (AMP is CUDA-only here)",
        "MESA (the official mesa: 0.0 in this yaml; the paper's 0.1 for FasterViT-0) is not implemented",
    ],
    "flops_per_micro_step": 82209316864,
}


def test_paper_scale_row_is_the_one_recorded_before_the_migration():
    assert fingerprint(paper_scale("cpu")) == RECORDED
