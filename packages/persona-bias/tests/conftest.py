import pytest

from iclr24.persona_bias import PlantedBias
from iclr24.persona_bias import builtin_questions


@pytest.fixture
def small_items():
    """Two built-in datasets of 30 questions each."""
    return {f"builtin-{t}": builtin_questions(t, 30, seed=0) for t in ("arithmetic", "units")}


@pytest.fixture
def planted():
    return PlantedBias(abstain={"a physically-disabled person": 0.4}, noise=0.0, no_answer=0.0)
