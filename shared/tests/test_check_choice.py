"""``check_choice``: a package's option checked against its tuple of names, with the one message every package
used to write by hand; ``check_layer_widths``: an MLP's hidden widths."""

import pytest

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_choice


def test_check_choice_returns_a_listed_value():
    assert check_choice("laplace", "latent", ("laplace", "gaussian")) == "laplace"


def test_check_choice_names_the_argument_the_choices_and_the_value():
    with pytest.raises(InputError) as err:
        check_choice("cauchy", "latent", ("laplace", "gaussian"))
    assert str(err.value) == "latent must be one of ('laplace', 'gaussian'), got 'cauchy'"
    with pytest.raises(ValueError):
        check_choice(None, "mode", ("a",))


def test_check_layer_widths_takes_a_sequence_of_positive_widths():
    from iclr24.paperkit.errors import check_layer_widths

    assert check_layer_widths((128, 64)) == (128, 64)
    assert check_layer_widths([]) == []
    with pytest.raises(InputError, match="hidden must be a sequence of layer widths, got str '128'"):
        check_layer_widths("128")
    with pytest.raises(InputError, match="each hidden width must be >= 1 and <= 16"):
        check_layer_widths([8, 32], maximum=16)
