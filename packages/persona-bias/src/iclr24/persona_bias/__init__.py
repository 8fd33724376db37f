"""Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs."""

__all__: list[str] = []
