"""Maximum Entropy Model Correction in Reinforcement Learning."""

__all__: list[str] = []
