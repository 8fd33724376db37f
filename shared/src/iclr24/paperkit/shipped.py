"""Checkpoints a package ships, trained once by its own ``train`` command, and the claims that run on them.

A package that ships trained models keeps them inside its module, so the wheel carries them::

    src/iclr24/<module>/checkpoints/
        commands.json          {"baseline-s0": "lace train --steps 4000 --seed 0 --no-constraints", ...}
        baseline-s0/           a model folder (``save_pretrained``: model.safetensors, config.json, provenance.json)

``commands.json`` names each model and the package's own command that trains it (without ``--out``);
``tools/train_checkpoints.py <package>`` runs those commands and installs what they wrote. Each model's
``provenance.json`` records the command as it ran, its seed, steps, CPU seconds, machine, commit and the loss at fixed
steps (``losses``: ``{"<step>": loss}``). A claim evaluated on a shipped model gets it through :func:`model_folder`,
which checks the weights' sha256, or, under ``reproduce --from-scratch``, retrains the model now with its recorded
command (:func:`retrain`) and uses that instead. :func:`training_label` is the line a claim shows about what it was
evaluated on; :func:`loss_mismatches` compares a retrained run's losses with the recorded ones.
"""

from __future__ import annotations

import contextlib
import importlib
import json
import shlex
import shutil
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .errors import InputFileError
from .pretrained import CONFIG_FILE
from .pretrained import PROVENANCE_FILE
from .pretrained import read_model_folder

__all__ = [
    "COMMANDS_FILE",
    "checkpoints_dir",
    "install_model",
    "loss_mismatches",
    "model_folder",
    "retrain",
    "run_train_command",
    "shipped_commands",
    "training_label",
]

COMMANDS_FILE = "commands.json"


def checkpoints_dir(package: str) -> Path:
    """``<module>/checkpoints`` of the package with import name ``package`` (e.g. ``"iclr24.lace"``); it may not
    exist (a package that ships no models)."""
    mod = importlib.import_module(package)
    return Path(mod.__file__).resolve().parent / "checkpoints"


def shipped_commands(package: str) -> dict[str, str]:
    """``commands.json`` of the package: model name -> the train command (without ``--out``)."""
    path = checkpoints_dir(package) / COMMANDS_FILE
    if not path.is_file():
        raise InputFileError(f"{package} ships no checkpoints ({path} missing)", path)
    cmds = json.loads(path.read_text())
    if not isinstance(cmds, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in cmds.items()
    ):
        raise InputFileError(f"{path}: expected a JSON object of model name -> command string", path)
    return cmds


def _shipped(package: str, name: str) -> Path:
    folder = checkpoints_dir(package) / name
    if name not in shipped_commands(package) or not (folder / CONFIG_FILE).is_file():
        raise InputFileError(
            f"{package} ships no model {name!r} (expected the model folder {folder}; "
            f"shipped: {', '.join(shipped_commands(package)) or 'none'})",
            folder,
        )
    read_model_folder(folder)  # checks the weights' sha256 against provenance.json
    return folder


def model_folder(cfg: Any, package: str, name: str) -> Path:
    """The model folder a claim evaluates: the shipped one (sha256 checked), or, when ``cfg.from_scratch``, the
    same model retrained now by its recorded command into ``cfg.out/from-scratch/<name>`` (once per run)."""
    shipped = _shipped(package, name)
    if not getattr(cfg, "from_scratch", False):
        return shipped
    out = Path(cfg.out) / "from-scratch" / name
    for cand in (out / "model", out):
        if (cand / CONFIG_FILE).is_file():
            return cand
    return retrain(shipped, out)


def _provenance(folder: str | Path) -> dict:
    return read_model_folder(folder)[2]


def _replace_flags(argv: list[str], flags: Mapping[str, str | None]) -> list[str]:
    """``argv`` with each ``--flag value`` in ``flags`` set to the new value (appended when absent; a value of None
    makes it a bare switch, removed if present)."""
    argv = list(argv)
    for flag, value in flags.items():
        idx = [i for i, a in enumerate(argv) if a == flag or a.startswith(flag + "=")]
        for i in reversed(idx):
            takes_value = "=" not in argv[i] and i + 1 < len(argv) and not argv[i + 1].startswith("--")
            del argv[i : i + (2 if takes_value else 1)]
        if value is not None:
            argv += [flag, str(value)]
    return argv


def _console_main(prog: str):
    """The ``main(argv)`` of console script ``prog`` (an installed iclr24 package's CLI)."""
    from importlib.metadata import entry_points

    eps = [ep for ep in entry_points(group="console_scripts", name=prog) if ep.value.startswith("iclr24.")]
    if not eps:
        raise InputError(f"no installed iclr24 command {prog!r} to retrain with")
    return eps[0].load()


def run_train_command(
    command: str, out: str | Path, overrides: Mapping[str, str | None] | None = None
) -> Path:
    """Run ``command`` (``"<prog> train ..."``, a package's own CLI) in this process with ``--out out`` and the
    flags in ``overrides`` replaced; return the model folder it wrote (``out/model`` or ``out``)."""
    argv = shlex.split(command)
    if len(argv) < 2:
        raise InputError(f"expected a command like 'PROG train ...', got {command!r}")
    out = Path(out)
    argv = _replace_flags(argv[1:], {**dict(overrides or {}), "--out": str(out)})
    rc = _console_main(shlex.split(command)[0])(argv)
    if rc not in (0, None):
        raise RuntimeError(f"{command!r} exited {rc}")
    for cand in (out / "model", out):
        if (cand / CONFIG_FILE).is_file():
            return cand
    raise RuntimeError(f"{command!r} wrote no model folder into {out}")


def retrain(folder: str | Path, out: str | Path, overrides: Mapping[str, str | None] | None = None) -> Path:
    """Re-run the command recorded in ``folder``'s provenance (``--out out``; ``overrides`` replace flags, e.g.
    ``{"--steps": "40"}``); return the new model folder."""
    command = _provenance(folder).get("command")
    if not isinstance(command, str) or not command.strip():
        raise InputFileError(f"{folder}: provenance.json records no command to retrain with", Path(folder))
    return run_train_command(command, out, overrides)


def install_model(trained: str | Path, dest: str | Path) -> Path:
    """Copy a model folder to ``dest`` (replacing an earlier model there) after checking its sha256. The recorded
    command's ``--out`` becomes ``OUT``: a shipped file names no folder of the machine that trained it."""
    prov = read_model_folder(trained)[2]
    dest = Path(dest)
    if dest.exists() and not (dest / CONFIG_FILE).is_file():
        raise InputFileError(f"{dest} exists and holds no model; refusing to replace it", dest)
    tmp = Path(tempfile.mkdtemp(prefix=f".{dest.name}.", dir=dest.parent))
    try:
        for f in Path(trained).iterdir():
            if f.is_file():
                shutil.copy2(f, tmp / f.name)
        if isinstance(prov.get("command"), str):
            prov["command"] = shlex.join(_replace_flags(shlex.split(prov["command"]), {"--out": "OUT"}))
            (tmp / PROVENANCE_FILE).write_text(json.dumps(prov, indent=1) + "\n")
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(dest)
        tmp.rename(dest)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return dest


def _without_out(command: str) -> str:
    argv = shlex.split(command)
    return shlex.join(_replace_flags(argv, {"--out": None}))


def training_label(folder: str | Path) -> str:
    """What a model was trained by, for a claim's details: the command (without ``--out``), the steps, the CPU
    seconds, the machine and the commit, from its provenance."""
    p = _provenance(folder)
    parts = []
    if p.get("steps") is not None:
        parts.append(f"{int(p['steps']):,} {p.get('steps_unit', 'steps')}")
    if p.get("cpu_seconds") is not None:
        machine = (p.get("machine") or {}).get("gpu") or (p.get("machine") or {}).get("cpu_model") or "?"
        parts.append(f"{float(p['cpu_seconds']):,.0f} CPU s on {machine}")
    if p.get("commit"):
        parts.append(f"commit {p['commit']}")
    cmd = _without_out(p["command"]) if isinstance(p.get("command"), str) else "(no command recorded)"
    return f"`{cmd}`" + (f" ({', '.join(parts)})" if parts else "")


def loss_mismatches(
    recorded: Mapping[str, float], fresh: Mapping[str, float], *, rtol: float = 1e-3, atol: float = 1e-6
) -> list[str]:
    """Where two ``{"<step>": loss}`` maps differ at their common steps (empty: they agree). No common step is a
    mismatch too: a comparison that compared nothing proves nothing."""
    common = sorted(set(map(str, recorded)) & set(map(str, fresh)), key=lambda s: float(s))
    if not common:
        return [f"no common steps (recorded {sorted(recorded)[:5]}..., fresh {sorted(fresh)[:5]}...)"]
    bad = []
    for s in common:
        a, b = float(recorded[s]), float(fresh[s])
        if not abs(a - b) <= atol + rtol * abs(a):
            bad.append(f"step {s}: recorded {a:.6g}, retrained {b:.6g}")
    return bad
