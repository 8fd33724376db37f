"""Defaults declared once: ``field_arg`` reads a CLI default from a config dataclass; ``check_cli_defaults``
catches a default declared twice that drifted apart."""

from dataclasses import dataclass, field

import pytest

from iclr24.paperkit.cli import App, arg, field_arg
from iclr24.paperkit.testing import check_cli_defaults


@dataclass
class Cfg:
    lr: float = 0.1
    gamma_sal: float = 0.3
    milestones: tuple[int, ...] = (3, 5)
    augment: bool = False
    names: list = field(default_factory=lambda: ["a"])


def _app(*args):
    app = App("toy", "a toy")

    @app.command("train", "train", *args, modes=False)
    def _train(a):
        return 0

    return app


def test_field_arg_reads_the_default_flag_and_switch_from_the_config():
    app = _app(field_arg(Cfg, "lr", type=float, help="lr"), field_arg(Cfg, "gamma_sal", type=float, help="g"),
               field_arg(Cfg, "augment", help="aug"), field_arg(Cfg, "names", "--name", nargs="+", help="n"))  # fmt: skip
    ns = app.parser.parse_args(["train", "--gamma-sal", "0.5", "--augment"])
    assert (ns.lr, ns.gamma_sal, ns.augment, ns.names) == (0.1, 0.5, True, ["a"])
    assert set(check_cli_defaults(app, "train", Cfg)) == {"lr", "gamma_sal", "augment", "names"}
    with pytest.raises(TypeError, match="no field 'nope'"):
        field_arg(Cfg, "nope")


def test_check_cli_defaults_catches_a_default_declared_twice_that_drifted():
    app = _app(arg("--lr", type=float, default=0.2, help="lr"), field_arg(Cfg, "milestones", help="m"))
    with pytest.raises(AssertionError, match=r"--lr: 0.2 vs Cfg.lr = 0.1"):
        check_cli_defaults(app, "train", Cfg)
    assert check_cli_defaults(app, "train", Cfg, skip=("lr",)) == ["milestones"]
