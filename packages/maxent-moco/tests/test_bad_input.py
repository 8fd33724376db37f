"""Bad input at the Python API: mismatched MDP arrays, NaN values and bad policies are one InputError (never numpy's
matmul or broadcasting messages, never a NaN error metric)."""

import numpy as np
import pytest

from iclr24.maxent_moco import garnet
from iclr24.maxent_moco import normalized_error
from iclr24.maxent_moco import q_values
from iclr24.maxent_moco import sample_stream
from iclr24.paperkit.errors import InputError


def test_q_values_names_the_mismatched_array():
    mdp = garnet(seed=0, n_states=4, n_actions=2, branching=2, n_rewards=2)
    with pytest.raises(InputError, match="V must hold one value per state"):
        q_values(mdp.P, mdp.R, mdp.gamma, np.zeros(5))
    with pytest.raises(InputError, match="gamma"):
        q_values(mdp.P, mdp.R, 1.5, np.zeros(4))


def test_normalized_error_refuses_nan_instead_of_answering_nan():
    with pytest.raises(InputError, match="NaN"):
        normalized_error(np.array([np.nan, 1.0]), np.ones(2))


def test_sample_stream_checks_its_policy():
    mdp = garnet(seed=0, n_states=4, n_actions=2, branching=2, n_rewards=2)
    with pytest.raises(InputError, match="policy"):
        sample_stream(mdp, 10, 0, mode="pe", policy=np.array([0, 1, 5, 0]))
    with pytest.raises(InputError, match="needs the policy"):
        sample_stream(mdp, 10, 0, mode="pe")


def test_model_makers_refuse_a_kernel_that_is_not_a_distribution():
    from iclr24.maxent_moco import identity_smoothed
    from iclr24.maxent_moco import locally_smoothed

    mdp = garnet(seed=0, n_states=4, n_actions=2, branching=2, n_rewards=2)
    P = np.array(mdp.P)
    P[0, 0] = 0.0  # an empty row used to give a silent NaN row (0 / 0 support)
    with pytest.raises(InputError, match="probability distribution"):
        locally_smoothed(P, 0.5)
    P[0, 0, 0] = np.nan
    with pytest.raises(InputError, match="NaN"):
        identity_smoothed(P, 0.5)
