import pytest

from iclr24.rdmc.cli import main


def test_help_exits_zero(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--help"])
    assert e.value.code == 0
    assert "reproduce" in capsys.readouterr().out


def test_bad_argument_exits_2():
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "--seed", "-1"])
    assert e.value.code == 2
