"""The CLI's defaults are the configs' (declared once)."""

from iclr24.ncde_bounds.cli import app
from iclr24.ncde_bounds.synthetic import smooth_paths
from iclr24.ncde_bounds.train import TrainConfig
from iclr24.paperkit.runner.testing import check_app_defaults


def test_cli_defaults_are_the_configs():
    check_app_defaults(app, {"bias": smooth_paths, "train": TrainConfig})
