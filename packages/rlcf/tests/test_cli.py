"""The CLI's defaults are the configs' (declared once)."""

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.rlcf.cli import app
from iclr24.rlcf.experiments import DemoConfig
from iclr24.rlcf.tta import TTAConfig


def test_cli_defaults_are_the_configs():
    # --lr: None, the mode's own rate (7e-3 prompt; 1e-3 digits / 1e-5 real weights otherwise), not one number
    check_app_defaults(app, {"train": DemoConfig, "adapt": TTAConfig}, skip=("lr",))
