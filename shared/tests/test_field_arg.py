"""Defaults declared once: ``field_arg`` reads a CLI default from a config dataclass; ``check_cli_defaults``
catches a default declared twice that drifted apart."""

from dataclasses import dataclass
from dataclasses import field

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.paperkit.runner.testing import check_cli_defaults


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


def fit(x, steps: int = 7, rate: float = 0.5, name: str = "a"):
    return x


def test_field_arg_reads_a_function_default_and_config_from_args_builds_the_config():
    app = _app(
        field_arg(fit, "steps", help="s"), field_arg(Cfg, "lr", help="lr"), resume_arg(written="each epoch")
    )
    ns = app.parser.parse_args(["train", "--steps", "9"])
    assert (ns.steps, ns.lr, ns.resume) == (9, 0.1, False) and isinstance(ns.steps, int)
    with pytest.raises(SystemExit):  # an int default gives type=int
        app.parser.parse_args(["train", "--steps", "x"])
    assert config_from_args(Cfg, ns, augment=True) == Cfg(lr=0.1, augment=True)
    with pytest.raises(TypeError, match="no field"):
        config_from_args(Cfg, ns, nope=1)
    with pytest.raises(TypeError, match="no parameter 'nope'"):
        field_arg(fit, "nope")
    with pytest.raises(TypeError, match="no default"):
        field_arg(fit, "x")
    assert check_app_defaults(app, {"train": (fit, Cfg)}) == {"train": ["steps", "lr"]}


def test_check_app_defaults_catches_a_function_default_that_drifted_and_a_command_with_none_checked():
    app = _app(arg("--rate", type=float, default=0.25, help="r"), arg("--other", default=1, help="o"))
    with pytest.raises(AssertionError, match=r"--rate: 0.25 vs fit.rate = 0.5"):
        check_app_defaults(app, {"train": fit})
    with pytest.raises(AssertionError, match="no option defaults"):
        check_app_defaults(app, {"train": Cfg})
    with pytest.raises(AssertionError, match=r"--other: 1 vs fit.steps = 7"):
        check_cli_defaults(app, "train", fit, dests={"other": "steps"}, skip=("rate",))


def test_a_named_preset_instance_is_a_source_too():
    preset = Cfg(lr=0.5, gamma_sal=0.9)
    app = _app(field_arg(preset, "lr", help="lr"))
    ns = app.parser.parse_args(["train"])
    assert ns.lr == 0.5 and isinstance(ns.lr, float)
    assert config_from_args(preset, ns) == Cfg(lr=0.5, gamma_sal=0.9)  # the preset's other values stay
    assert check_app_defaults(app, {"train": preset}) == {"train": ["lr"]}
    with pytest.raises(AssertionError, match="vs Cfg.lr = 0.1"):
        check_app_defaults(app, {"train": Cfg})
    with pytest.raises(TypeError, match="no field 'nope'"):
        field_arg(preset, "nope")
