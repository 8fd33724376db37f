"""Checks of a package's workflows, beside :mod:`.testing`: what its CLI's help lists, the usage errors argparse
refuses, a run stopped part-way (Ctrl-C or a callback) and a finished run's folder met again.

    from iclr24.paperkit.runner.testing_workflow import check_help_lists, check_usage_errors, run_interrupted

    def test_help_exits_zero():
        check_help_lists(main, ("train", "sample", "reproduce", "bench"))

    def test_bad_argument_exits_2():
        check_usage_errors(main, ["reproduce", "--seed", "-1"], ["sample", "--smoke"])

    def test_resume(tmp_path):
        assert run_interrupted(main, [*base, "--out", str(tmp_path / "b")], at_step=5) == 130
        assert main([*base, "--out", str(tmp_path / "b"), "--resume"]) == 0

Each raises ``AssertionError`` with what went wrong, so they work with plain pytest.
"""

from __future__ import annotations

import contextlib
import importlib.util
import io
import os
from collections.abc import Callable
from collections.abc import Sequence
from pathlib import Path
from types import ModuleType
from typing import Any

from .testing import _run

__all__ = [
    "check_help_lists",
    "check_usage_errors",
    "check_finished_run_folder",
    "check_unlabelled_data_forms",
    "fail_as",
    "load_script",
    "run_interrupted",
    "same_weights",
    "Stopped",
    "stop_at",
]


def check_help_lists(main: Callable[[Sequence[str]], int], commands: Sequence[str]) -> str:
    """``main(["--help"])`` exits through argparse with status 0 and its help names every one of ``commands``;
    returns the help text."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            main(["--help"])
        except SystemExit as e:
            assert e.code == 0, f"--help exited {e.code}"
        else:
            raise AssertionError("--help returned instead of exiting (SystemExit) with status 0")
    text = out.getvalue()
    missing = [c for c in commands if c not in text]
    assert not missing, f"--help does not name {missing}"
    return text


def check_usage_errors(main: Callable[[Sequence[str]], int], *argvs: Sequence[str]) -> None:
    """Each of ``argvs`` is a usage error argparse refuses before any work: ``main(argv)`` raises SystemExit with
    status 2 (a flag the command does not take, a value out of range)."""
    assert argvs, "no command line to check"
    for argv in argvs:
        with contextlib.redirect_stderr(io.StringIO()):
            try:
                main(list(argv))
            except SystemExit as e:
                assert e.code == 2, f"{list(argv)}: exited {e.code}, not 2"
                continue
        raise AssertionError(f"{list(argv)}: ran instead of being refused as a usage error (exit 2)")


def check_finished_run_folder(
    main: Callable[[Sequence[str]], int],
    argv: Sequence[str],
    load: Callable[[], Any],
    same: Callable[[Any, Any], bool],
    other_settings: Sequence[str],
) -> None:
    """A finished run's ``--out`` met again by the same ``argv``: refused without ``--resume`` (exit 2, the error
    names ``--overwrite``); with ``--resume`` nothing is left to train (exit 0, and ``load()`` reads a model
    ``same`` as before); with ``--resume`` and ``other_settings`` (flags that change the run) refused (exit 2)."""
    first = load()
    rc, _, err = _run(main, list(argv))
    assert rc == 2 and "--overwrite" in err, (
        f"a finished run's folder must be refused naming --overwrite: {err!r}"
    )
    assert main([*argv, "--resume"]) == 0, "--resume of a finished run must succeed"
    assert same(load(), first), "--resume of a finished run changed the model"
    assert main([*argv, "--resume", *other_settings]) == 2, (
        f"--resume with {list(other_settings)} was not refused"
    )


def run_interrupted(main: Callable[[Sequence[str]], int], argv: Sequence[str], *, at_step: int) -> int:
    """``main(argv)`` stopped as a Ctrl-C would stop it at step ``at_step``: paperkit's ``StepLog`` raises
    KeyboardInterrupt when the run reports that step (before logging it). Returns main's exit status (130 for an
    App's command); ``StepLog`` is itself again afterwards."""
    from ..tracking import StepLog

    real_call = StepLog.__call__

    def interrupt(self, step, metrics):
        if step == at_step:
            raise KeyboardInterrupt
        real_call(self, step, metrics)

    StepLog.__call__ = interrupt
    try:
        return main(list(argv))
    finally:
        StepLog.__call__ = real_call


def same_weights(a: Any, b: Any) -> bool:
    """Whether the torch modules ``a`` and ``b`` hold the same weights: their ``state_dict()`` names the same
    tensors in the same order and each pair is bit-for-bit equal (``torch.equal``)."""
    import torch

    sa, sb = a.state_dict(), b.state_dict()
    return list(sa) == list(sb) and all(torch.equal(sa[k], sb[k]) for k in sa)


def check_unlabelled_data_forms(run: Callable[[Any], tuple[Any, Any]], x: Any, *, batch_size: int) -> None:
    """A trainer of unlabelled samples takes a user's data in any form: ``run(data)`` trains a fresh, equally
    seeded model on ``data`` and returns ``(losses, model)``. For the tensor ``x`` (one sample a row), a
    ``TensorDataset(x)``, a ``TensorDataset(x, labels)`` (labels beside the samples, ignored) and a ``DataLoader``
    of it in batches of ``batch_size`` each give the losses and (:func:`same_weights`) the weights ``x`` gives;
    a dataset of three fields is refused, an :class:`~iclr24.paperkit.errors.InputError` that says ``fields``."""
    import torch
    from torch.utils.data import DataLoader
    from torch.utils.data import TensorDataset

    from ..errors import InputError

    ref_losses, ref_model = run(x)
    labels = torch.zeros(len(x), dtype=torch.long)
    forms = {
        "TensorDataset(x)": TensorDataset(x),
        "TensorDataset(x, labels)": TensorDataset(x, labels),
        "DataLoader": DataLoader(TensorDataset(x), batch_size=batch_size),
    }
    for name, data in forms.items():
        losses, model = run(data)
        assert losses == ref_losses, f"{name}: other losses than the tensor's"
        assert same_weights(model, ref_model), f"{name}: other weights than the tensor's"
    try:
        run(TensorDataset(x, labels, labels))
    except InputError as e:
        assert "fields" in str(e), (
            f"a dataset of three fields is refused, but the error does not say fields: {e}"
        )
    else:
        raise AssertionError("a dataset of three fields (x, labels, labels) was not refused (InputError)")


def fail_as(how: str) -> None:
    """Fail the way a test's demo command is told to (its ``--fail HOW``), one failure of each kind an App tells
    apart: ``"usage"`` a :class:`~iclr24.paperkit.cli.UsageError` and ``"value"`` a ValueError (user errors, exit
    2), ``"bug"`` a RuntimeError (a crash, raised on), ``"interrupt"`` a KeyboardInterrupt (Ctrl-C, exit 130).
    Any other ``how`` returns, and the command goes on."""
    from ..cli import UsageError

    failures = {
        "usage": UsageError("bad --thing"),
        "value": ValueError("bad data"),
        "bug": RuntimeError("a real bug"),
        "interrupt": KeyboardInterrupt(),
    }
    if how in failures:
        raise failures[how]


class Stopped(Exception):
    """Raised by a :func:`stop_at` callback: a run stopped part-way, as a crash there would stop it."""


def stop_at(step: int) -> Callable[[int, Any], None]:
    """A step callback ``f(step, metrics)`` that raises :class:`Stopped` at ``step`` (to test resuming)."""

    def callback(s: int, metrics: Any) -> None:
        if s == step:
            raise Stopped(f"stopped at step {step}")

    return callback


def load_script(path: str | os.PathLike) -> ModuleType:
    """Import the script at ``path`` (a package's ``scripts/*.py`` or a ``tools/*.py``, which are not packages) as a
    module, without running its ``if __name__ == "__main__"`` block, so a test can call its functions."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"no script at {path}")
    spec = importlib.util.spec_from_file_location(f"_script_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
