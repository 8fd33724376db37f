"""Test-Time Adaptation with CLIP Reward for Zero-Shot Generalization in Vision-Language Models."""

__all__: list[str] = []
