"""The CLI's defaults are the configs' (declared once)."""

from iclr24.paperkit.runner.testing import check_app_defaults


def test_cli_defaults_are_the_configs():
    from iclr24.task_geometry.cli import app
    from iclr24.task_geometry.experiments import SweepConfig
    from iclr24.task_geometry.measure import measure
    from iclr24.task_geometry.students import TrainConfig

    # --seeds counts the seeds SweepConfig.seeds lists (from --seed on)
    check_app_defaults(
        app, {"run": (SweepConfig, TrainConfig), "measure": measure}, skip=("seeds",), dests={"act": "acts"}
    )
