"""paperkit.runner.testing_workflow: each check passes on a CLI that keeps the contract and fails on one that
breaks it."""

import json

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg
from iclr24.paperkit.runner.testing import check_out_at_a_file_refused
from iclr24.paperkit.runner.testing_workflow import Stopped
from iclr24.paperkit.runner.testing_workflow import check_finished_run_folder
from iclr24.paperkit.runner.testing_workflow import check_help_lists
from iclr24.paperkit.runner.testing_workflow import check_unlabelled_data_forms
from iclr24.paperkit.runner.testing_workflow import check_usage_errors
from iclr24.paperkit.runner.testing_workflow import fail_as
from iclr24.paperkit.runner.testing_workflow import run_interrupted
from iclr24.paperkit.runner.testing_workflow import same_weights
from iclr24.paperkit.runner.testing_workflow import stop_at


def make_app():
    """A toy trainer: ``train --steps N`` logs N steps through a StepLog and writes ``weights.json``; with
    ``--resume`` it continues from ``state.json``, refusing a resume with another ``--steps``."""
    from iclr24.paperkit.cli import UsageError
    from iclr24.paperkit.tracking import StepLog

    app = App("demo", "A demo tool.")

    @app.command("train", "Train a toy.", arg("--steps", type=positive_int, default=4, help="steps"),
                 resume_arg("OUT/state.json"), resume=lambda a: a.resume)  # fmt: skip
    def train(args):
        state_file = args.out / "state.json"
        state = {"step": 0, "w": 0.0, "steps": args.steps}
        if args.resume and state_file.is_file():
            state = json.loads(state_file.read_text())
            if state["steps"] != args.steps:
                raise UsageError(
                    f"--resume with another --steps ({args.steps}, the run has {state['steps']})"
                )
        with StepLog(None, name="demo") as log:
            for step in range(state["step"], args.steps):
                log(step, {"w": state["w"]})
                state.update(step=step + 1, w=state["w"] + 0.5)
                state_file.write_text(json.dumps(state))
        (args.out / "weights.json").write_text(json.dumps(state["w"]))

    @app.command("info", "Print a line.", out=False, seed=False)
    def info(args):
        print("demo")

    return app


def test_help_and_usage_error_checks():
    app = make_app()
    assert "train" in check_help_lists(app.main, ("train", "info"))
    with pytest.raises(AssertionError, match="does not name"):
        check_help_lists(app.main, ("train", "sample"))
    check_usage_errors(app.main, ["train", "--steps", "0"], ["info", "--out", "x"])
    with pytest.raises(AssertionError, match="ran instead of being refused"):
        check_usage_errors(app.main, ["info"])


def test_out_at_a_file_check(tmp_path):
    app = make_app()
    check_out_at_a_file_refused(app.main, ["train"], tmp_path)


def test_interrupted_run_resumes_and_the_finished_folder_check(tmp_path):
    app = make_app()
    argv = ["train", "--out", str(tmp_path / "a"), "--quiet"]
    assert app.main(argv) == 0
    cut = ["train", "--out", str(tmp_path / "b"), "--quiet"]
    assert run_interrupted(app.main, cut, at_step=2) == 130
    assert json.loads((tmp_path / "b" / "state.json").read_text())["step"] == 2  # steps 0 and 1 done
    assert app.main([*cut, "--resume"]) == 0
    assert (tmp_path / "b" / "weights.json").read_text() == (tmp_path / "a" / "weights.json").read_text()

    def load():
        return json.loads((tmp_path / "a" / "weights.json").read_text())

    check_finished_run_folder(app.main, argv, load, lambda x, y: x == y, ["--steps", "6"])
    with pytest.raises(AssertionError, match="was not refused"):
        check_finished_run_folder(app.main, argv, load, lambda x, y: x == y, ["--steps", "4"])


def test_stop_at_raises_at_its_step_only():
    cb = stop_at(3)
    cb(2, {})
    with pytest.raises(Stopped, match="step 3"):
        cb(3, {"loss": 1.0})


def test_fail_as_raises_one_failure_of_each_kind_and_else_returns():
    from iclr24.paperkit.cli import UsageError

    for how, kind, says in (("usage", UsageError, "bad --thing"), ("value", ValueError, "bad data"),
                            ("bug", RuntimeError, "a real bug"), ("interrupt", KeyboardInterrupt, "")):  # fmt: skip
        with pytest.raises(kind, match=says):
            fail_as(how)
    assert fail_as("") is None and fail_as("rc1") is None


def test_same_weights_needs_the_same_names_in_order_and_equal_tensors():
    import copy

    import torch

    a = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.Linear(2, 1))
    b = copy.deepcopy(a)
    assert same_weights(a, b)
    with torch.no_grad():
        b[1].bias += 1e-7
    assert not same_weights(a, b)
    assert not same_weights(a, torch.nn.Sequential(a[1], a[0]))  # the same tensors under other names
    assert not same_weights(a, torch.nn.Sequential(a[0]))  # fewer of them


def test_unlabelled_data_forms_check_passes_a_trainer_of_any_form_and_fails_one_that_differs():
    import torch

    from iclr24.paperkit.errors import InputError

    x = torch.arange(12.0).reshape(6, 2)

    def rows(data):  # every sample of a tensor, a dataset (first field) or a loader's batches, in order
        if isinstance(data, torch.Tensor):
            return data
        if isinstance(data, torch.utils.data.DataLoader):
            return torch.cat([batch[0] for batch in data])
        return torch.stack([data[i][0] for i in range(len(data))])

    def run(data, refuse=True):
        if refuse and isinstance(data, torch.utils.data.TensorDataset) and len(data.tensors) > 2:
            raise InputError("expected 1 or 2 fields (samples, labels), got 3")
        model = torch.nn.Linear(2, 1, bias=False)
        with torch.no_grad():
            model.weight.copy_(rows(data).mean(0, keepdim=True))
        return [float(rows(data).sum())], model

    check_unlabelled_data_forms(run, x, batch_size=4)

    def loader_drops_the_last_batch(data):
        losses, model = run(data)
        if isinstance(data, torch.utils.data.DataLoader):
            with torch.no_grad():
                model.weight.copy_(next(iter(data))[0].mean(0, keepdim=True))
        return losses, model

    with pytest.raises(AssertionError, match="DataLoader: other weights"):
        check_unlabelled_data_forms(loader_drops_the_last_batch, x, batch_size=4)
    with pytest.raises(AssertionError, match="three fields .* was not refused"):
        check_unlabelled_data_forms(lambda data: run(data, refuse=False), x, batch_size=4)
