"""``resume.check_checkpoint_arg``: the checkpoint= / resume= check every trainer makes before any work."""

import pytest

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.resume import check_checkpoint_arg


def test_a_file_path_or_no_checkpoint_passes(tmp_path):
    check_checkpoint_arg(None, False)
    check_checkpoint_arg(tmp_path / "state.pt", True)


def test_resume_without_checkpoint_says_what_the_file_is():
    with pytest.raises(
        InputError, match=r"^resume=True needs checkpoint= \(the file written after every epoch\)$"
    ):
        check_checkpoint_arg(None, True)
    with pytest.raises(InputError, match=r"\(the training-state file\)"):
        check_checkpoint_arg(None, True, written="the training-state file")


def test_a_folder_is_refused_with_an_example(tmp_path):
    with pytest.raises(InputFolderError, match="is a folder; give a file path such as DIR/train_state.pt"):
        check_checkpoint_arg(tmp_path, False)
    with pytest.raises(IsADirectoryError, match="such as model.train_state.pt"):
        check_checkpoint_arg(tmp_path, True, example="model.train_state.pt")
