"""Trained models as folders: ``save_pretrained(dir)`` / ``from_pretrained(dir)``, like Hugging Face and timm.

A model folder holds three files::

    model.safetensors   the weights (safetensors: tensors only, nothing is unpickled on load)
    config.json         what rebuilds the model: {"format": "iclr24-pretrained/1", "class": "iclr24.pkg.Model",
                        "config": {the constructor's keyword arguments}}
    provenance.json     how the weights were made: commit, command, seed, steps, CPU seconds, machine, the loss at
                        fixed steps, and the weights' sha256

Loading checks the weights' sha256 against ``provenance.json`` and refuses a mismatch, a missing file or a foreign
folder with one clear :class:`~.errors.InputFileError` naming the file. A model class opts in with the mixin::

    class Denoiser(PretrainedMixin, nn.Module):
        def __init__(self, *, width: int = 64, depth: int = 3): ...

    model.save_pretrained("runs/denoiser", provenance={"command": "lpn train ...", "steps": 4000})
    model = Denoiser.from_pretrained("runs/denoiser")
    model = load_pretrained("runs/denoiser")        # the class named in config.json (registered mixin classes only)

The constructor's keyword arguments are recorded when the model is built (JSON values only: numbers, strings,
bools, lists, dicts, None); a class whose arguments are not JSON overrides :meth:`PretrainedMixin.pretrained_config`.
A class built by a factory (its constructor takes modules) also defines the classmethod
``from_pretrained_config(**config)``, which rebuilds the model from what ``pretrained_config()`` returned.
``huggingface_hub``'s ``PyTorchModelHubMixin`` does the same on local folders, but brings the hub client and its
dependencies into every light install; this needs only ``safetensors``.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import inspect
import json
import os
import platform
import shutil
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .errors import InputFileError

__all__ = [
    "CONFIG_FILE",
    "FORMAT",
    "PROVENANCE_FILE",
    "WEIGHTS_FILE",
    "PretrainedMixin",
    "file_sha256",
    "load_pretrained",
    "make_provenance",
    "read_model_folder",
]

FORMAT = "iclr24-pretrained/1"
WEIGHTS_FILE, CONFIG_FILE, PROVENANCE_FILE = "model.safetensors", "config.json", "provenance.json"
_REGISTRY: dict[str, type] = {}


def file_sha256(path: str | os.PathLike) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def _json_ready(name: str, value: Any) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as e:
        raise InputError(
            f"{name} must hold JSON values only (numbers, strings, bools, lists, dicts, None) to be saved in "
            f"{CONFIG_FILE}: {e}"
        ) from None


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short=10", "HEAD"], capture_output=True, text=True, timeout=5, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() or None


def make_provenance(**fields: Any) -> dict:
    """A provenance record: the given fields (``command``, ``seed``, ``steps``, ``cpu_seconds``, ``losses`` ...)
    plus the date, the machine and the git commit when run inside a checkout."""
    from .threads import cpu_model

    rec = {
        "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "commit": _git_commit(),
        "machine": {"cpu_model": cpu_model(), "python": platform.python_version()},
    }
    try:
        import torch

        rec["machine"]["torch"] = torch.__version__
        if torch.cuda.is_available():
            rec["machine"]["gpu"] = torch.cuda.get_device_name(0)
    except ImportError:  # pragma: no cover - the torch extra
        pass
    rec.update(fields)
    return _json_ready("provenance", rec)


def _class_name(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


class PretrainedMixin:
    """Adds ``save_pretrained`` / ``from_pretrained`` to an ``nn.Module`` subclass (put the mixin first)."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        _REGISTRY[_class_name(cls)] = cls
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        sig = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self, *args: Any, **kw: Any) -> None:
            if not hasattr(self, "_pretrained_init"):  # the outermost __init__ of the class chain wins
                bound = sig.bind(self, *args, **kw)
                bound.apply_defaults()
                params = dict(bound.arguments)
                params.pop(next(iter(sig.parameters)))  # self
                for p in sig.parameters.values():
                    if p.kind is p.VAR_KEYWORD and p.name in params:
                        params.update(params.pop(p.name))
                    elif p.kind is p.VAR_POSITIONAL and p.name in params:
                        params[p.name] = list(params[p.name])
                object.__setattr__(self, "_pretrained_init", params)
            init(self, *args, **kw)

        cls.__init__ = recording_init

    def pretrained_config(self) -> dict:
        """The keyword arguments that rebuild this model (``cls(**config)``); JSON values only."""
        params = dict(getattr(self, "_pretrained_init", {}))
        return _json_ready(f"{type(self).__name__}'s constructor arguments", params)

    def save_pretrained(
        self, folder: str | os.PathLike, *, provenance: Mapping[str, Any] | None = None
    ) -> Path:
        """Write ``model.safetensors``, ``config.json`` and ``provenance.json`` into ``folder`` (created; an
        existing model folder there is replaced whole, atomically; any other non-empty folder is refused)."""
        from safetensors.torch import save_file

        folder = Path(folder)
        if folder.exists() and not folder.is_dir():
            raise InputFileError(f"model folder {folder} is a file; give a folder path", folder)
        if folder.is_dir() and any(folder.iterdir()) and not (folder / CONFIG_FILE).is_file():
            raise InputFileError(
                f"{folder} is a non-empty folder that holds no model ({CONFIG_FILE} missing); give a new or empty "
                "folder, or a model folder to replace",
                folder,
            )
        config = {"format": FORMAT, "class": _class_name(type(self)), "config": self.pretrained_config()}
        state = {k: v.detach().cpu().contiguous() for k, v in self.state_dict().items()}
        seen: dict[int, str] = {}
        for k, v in list(state.items()):  # tied weights: safetensors refuses shared storage
            ptr = v.data_ptr()
            if ptr in seen and v.numel():
                state[k] = v.clone()
            seen[ptr] = k
        folder.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(prefix=f".{folder.name}.", dir=folder.parent))
        try:
            save_file(state, str(tmp / WEIGHTS_FILE), metadata={"format": FORMAT})
            prov = make_provenance(**dict(provenance or {}))
            prov["weights_sha256"] = file_sha256(tmp / WEIGHTS_FILE)
            (tmp / CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n")
            (tmp / PROVENANCE_FILE).write_text(json.dumps(prov, indent=1) + "\n")
            if folder.exists():
                old = folder.with_name(f".{folder.name}.old")
                shutil.rmtree(old, ignore_errors=True)
                os.replace(folder, old)
                os.replace(tmp, folder)
                shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, folder)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return folder

    @classmethod
    def from_pretrained(cls, folder: str | os.PathLike, *, strict: bool = True, **overrides: Any) -> Any:
        """Rebuild the model from a folder :meth:`save_pretrained` wrote (weights on the CPU; ``.to(device)``
        after). ``overrides`` replace constructor arguments that do not change the weights' shapes."""
        config, state, _ = read_model_folder(folder)
        name = config["class"]
        target = _REGISTRY.get(name)
        if target is None or not issubclass(target, cls):
            raise InputFileError(
                f"{Path(folder) / CONFIG_FILE} holds a {name}, not a {_class_name(cls)}; load it with "
                f"{name.rsplit('.', 1)[-1]}.from_pretrained or paperkit's load_pretrained",
                Path(folder) / CONFIG_FILE,
            )
        return _build(target, config, state, folder, strict, overrides)


def _build(target: type, config: dict, state: dict, folder: Any, strict: bool, overrides: dict) -> Any:
    kwargs = {**config["config"], **overrides}
    # a factory-built class (its constructor takes modules) rebuilds itself from its config
    make = getattr(target, "from_pretrained_config", None)
    try:
        model = make(**kwargs) if callable(make) else target(**kwargs)
    except (TypeError, ValueError) as e:  # ValueError: the constructor's own check of a config value
        raise InputFileError(
            f"{Path(folder) / CONFIG_FILE}: its config does not build a {target.__name__}: {e}",
            Path(folder) / CONFIG_FILE,
        ) from None
    try:
        missing, unexpected = model.load_state_dict(state, strict=strict)
    except RuntimeError as e:
        first = " ".join(str(e).split())[:300]
        raise InputFileError(
            f"{Path(folder) / WEIGHTS_FILE} does not fit the {target.__name__} its config builds: {first}",
            Path(folder) / WEIGHTS_FILE,
        ) from None
    return model


def read_model_folder(folder: str | os.PathLike) -> tuple[dict, dict, dict]:
    """Read and check a model folder: ``(config, state_dict, provenance)``; every fault is one
    :class:`InputFileError` naming the file."""
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    folder = Path(folder)
    if not folder.is_dir():
        what = "is a file, not a model folder" if folder.exists() else "does not exist"
        raise InputFileError(
            f"model folder {folder} {what} (a model folder holds {WEIGHTS_FILE}, {CONFIG_FILE} and "
            f"{PROVENANCE_FILE}, as save_pretrained writes it)",
            folder,
        )
    files = {}
    for name in (CONFIG_FILE, PROVENANCE_FILE):
        path = folder / name
        if not path.is_file():
            raise InputFileError(f"{path} is missing: {folder} is not a complete model folder", path)
        try:
            files[name] = json.loads(path.read_text(encoding="utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            raise InputFileError(
                f"{path} is not valid JSON ({type(e).__name__}): the folder is corrupt", path
            ) from None
    config, prov = files[CONFIG_FILE], files[PROVENANCE_FILE]
    if (
        not isinstance(config, dict)
        or config.get("format") != FORMAT
        or not isinstance(config.get("config"), dict)
    ):
        raise InputFileError(
            f"{folder / CONFIG_FILE} is not an iclr24 model config (expected format {FORMAT!r} with a 'class' and "
            f"a 'config'), got {str(config)[:80]}",
            folder / CONFIG_FILE,
        )
    weights = folder / WEIGHTS_FILE
    if not weights.is_file():
        raise InputFileError(f"{weights} is missing: {folder} is not a complete model folder", weights)
    digest = file_sha256(weights)
    if not isinstance(prov, dict) or prov.get("weights_sha256") != digest:
        raise InputFileError(
            f"{weights} does not match its provenance: sha256 {digest[:16]}... against "
            f"{str(prov.get('weights_sha256') if isinstance(prov, dict) else None)[:16]}... recorded in "
            f"{PROVENANCE_FILE} (the weights were changed or damaged after they were saved)",
            weights,
        )
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, ValueError) as e:
        raise InputFileError(
            f"{weights} is not a readable safetensors file: {' '.join(str(e).split())[:200]}", weights
        ) from None
    return config, state, prov


def load_pretrained(folder: str | os.PathLike, *, strict: bool = True, **overrides: Any) -> Any:
    """Rebuild whatever model a folder holds: the class named in its ``config.json``, which must be a registered
    :class:`PretrainedMixin` class of an installed iclr24 package (its module is imported; no other code runs)."""
    config, state, _ = read_model_folder(folder)
    name = config.get("class", "")
    if name not in _REGISTRY and isinstance(name, str) and name.startswith("iclr24."):
        import importlib

        try:
            importlib.import_module(name.rsplit(".", 1)[0])
        except ImportError:
            pass
    target = _REGISTRY.get(name)
    if target is None:
        raise InputFileError(
            f"{Path(folder) / CONFIG_FILE} names the class {name!r}, which no installed iclr24 package provides",
            Path(folder) / CONFIG_FILE,
        )
    return _build(target, config, state, folder, strict, overrides)
