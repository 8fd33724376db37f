"""The CLI's defaults are the configs' (declared once)."""

from iclr24.paperkit.runner.testing import check_app_defaults
from iclr24.sufo.cli import app
from iclr24.sufo.features import extract_features
from iclr24.sufo.outliers import outliers_pc12
from iclr24.sufo.reproduce import ReproConfig
from iclr24.sufo.sparsity import explained_variance


def test_cli_defaults_are_the_configs():
    features = (ReproConfig, extract_features)  # --max-length, --pooling
    check_app_defaults(app, {"probe": features, "rsa": features, "sparsity": (*features, explained_variance),
                             "outliers": (*features, outliers_pc12), "dynamics": features, "report": ReproConfig})  # fmt: skip
