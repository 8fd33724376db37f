"""The CLI scaffold every package uses, so all ``iclr24`` commands feel alike.

    from iclr24.paperkit.cli import App, arg
    app = App("srigl", "Structured sparse training (SRigL).")

    @app.command("train", "Train a sparse model.", arg("--sparsity", type=float, default=0.9, help="..."),
                 device=True)
    def train(args):   # args.out (a folder, default results/srigl/train), args.seed, args.quiet; + args.device
        ...

    app.add_reproduce(lambda: PAPER)      # reproduce [--smoke|--quick|--full] [--data-dir DIR] [--device D]
    app.add_bench(bench.run_benchmarks)   # bench [--smoke|--quick|--full]
    main = app.main

Each command declares the common flags it has: ``modes=True`` (``--smoke/--quick/--full``, ``args.mode``),
``device=True`` (``--device``, resolved before the call), ``data=True`` (``--data-dir``), ``seed=False`` for a
command that draws no random number (no ``--seed`` flag that would change nothing; ``bench`` has none). ``--out`` is
always a folder, checked (a writable folder, not a file) before the command runs, and it holds one run
(:mod:`iclr24.paperkit.runfolder`): a marker ``.iclr24-run.json`` names the command that wrote it; an ``--out`` that
holds an earlier run is refused unless ``--overwrite`` (every command with ``--out`` has it: the earlier folder is
replaced, and only once the new run returned), a non-empty folder of other files is refused, and a lock beside the
folder refuses a second run into it while one runs. ``resume=`` marks a command that continues its own run in
``--out`` (a training resuming from its checkpoint), ``adds_to=`` one that writes its files into the run folder of
another command (plots of a run), ``parts=`` one whose ``--out`` is shared with other runs (``iclr24 reproduce``).
User errors (``UsageError``, ``ValueError``, ``FileNotFoundError``, ``PermissionError``, ...) and bad flags print
one line and exit 2, and a failed command leaves nothing behind in an ``--out`` folder it created itself: the
folder (with any parents it created) is removed; a folder that existed before is never removed (an empty one is
emptied again).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from collections.abc import Sequence
from operator import attrgetter
from pathlib import Path
from typing import Any

from .claims import MODES
from .progress import set_quiet
from .runfolder import RunFolder
from .runfolder import RunFolderError
from .runfolder import is_secondary_rank

__all__ = [
    "App",
    "UsageError",
    "arg",
    "config_from_args",
    "exit_code",
    "field_arg",
    "int_list",
    "resolve_device",
    "resume_arg",
    "nonneg_int",
    "positive_int",
    "probability",
    "nonneg_float",
    "positive_float",
    "parse_with_write",
    "read_json_object",
    "seed_list",
]

USER_ERRORS = (
    ValueError,
    FileNotFoundError,
    NotADirectoryError,
    IsADirectoryError,
    FileExistsError,
    PermissionError,
)


class UsageError(Exception):
    """A user error: printed as one line, exit code 2."""


def arg(*flags: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An argument spec for :meth:`App.command` (same signature as ``add_argument``)."""
    return flags, kwargs


def _default_of(source: Any, name: str) -> Any:
    """The default of ``source``'s ``name``: a dataclass field (its default or default factory), the field's value
    in a dataclass instance (a named preset such as ``VISDA = Config(...)``) or a parameter of a function's
    signature; a ``TypeError`` when there is none."""
    import dataclasses
    import inspect

    what = getattr(source, "__qualname__", type(source).__qualname__)
    if dataclasses.is_dataclass(source) and not isinstance(source, type):
        if name not in {f.name for f in dataclasses.fields(source)}:
            raise TypeError(f"{what} has no field {name!r}")
        return getattr(source, name)
    if dataclasses.is_dataclass(source):
        fields = {f.name: f for f in dataclasses.fields(source)}
        if name not in fields:
            raise TypeError(f"{what} has no field {name!r}")
        f = fields[name]
        if f.default is not dataclasses.MISSING:
            return f.default
        if f.default_factory is not dataclasses.MISSING:
            return f.default_factory()
        raise TypeError(f"{what}.{name} has no default to read")
    params = inspect.signature(source).parameters
    if name not in params:
        raise TypeError(f"{what} has no parameter {name!r}")
    if params[name].default is inspect.Parameter.empty:
        raise TypeError(f"{what}'s parameter {name!r} has no default to read")
    return params[name].default


def field_arg(config: Any, name: str, *flags: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An argument whose default is the dataclass ``config``'s field ``name`` (or, when ``config`` is a function,
    its parameter ``name``'s default): the default is declared once, in the config, and the CLI reads it (as
    nanoGPT's scripts read their config). The flag is ``--<name with dashes>`` unless ``flags`` are given; a bool
    default of False becomes a ``store_true`` switch; without ``type=``, an int or float default gives that type.
    ``dest`` is the field's name, so :func:`config_from_args` builds the config back from the parsed arguments;
    :func:`.testing.check_cli_defaults` checks that no CLI default drifted from its field."""
    default = _default_of(config, name)
    if default is False and "action" not in kwargs:
        kwargs["action"] = "store_true"
    else:
        kwargs["default"] = default
        if "type" not in kwargs and "action" not in kwargs and type(default) in (int, float):
            kwargs["type"] = type(default)
    return flags or (f"--{name.replace('_', '-')}",), {"dest": kwargs.pop("dest", name), **kwargs}


def config_from_args(config: Any, args: argparse.Namespace, **overrides: Any) -> Any:
    """``config(**...)`` from the parsed ``args``: each field of the dataclass ``config`` that ``args`` has (a
    :func:`field_arg` flag's ``dest``) is taken from it, ``overrides`` win, the other fields keep their defaults
    (or, when ``config`` is an instance, a named preset, its values: ``dataclasses.replace``)."""
    import dataclasses

    cls = config if isinstance(config, type) else type(config)
    names = {f.name for f in dataclasses.fields(cls) if f.init}
    kw = {n: getattr(args, n) for n in names if hasattr(args, n)}
    unknown = set(overrides) - names
    if unknown:
        raise TypeError(f"{cls.__name__} has no field(s) {sorted(unknown)}")
    kw.update(overrides)
    return cls(**kw) if isinstance(config, type) else dataclasses.replace(config, **kw)


def resume_arg(state: str = "OUT/train_state.pt", written: str | None = None) -> tuple[tuple[str, ...], dict]:
    """The ``--resume`` switch of a trainer that continues its own interrupted run in ``--out`` from ``state``
    (``written``: when it is saved, e.g. ``"after every epoch"``): give it as :meth:`App.command`'s ``resume=``."""
    when = f" (written {written})" if written else ""
    return arg(
        "--resume",
        action="store_true",
        help=f"continue the interrupted run in --out from {state}{when}, exactly as the uninterrupted run; give "
        "the run's own flags",
    )


def _typed(
    name: str, conv: Callable[[str], Any], ok: Callable[[Any], bool], what: str
) -> Callable[[str], Any]:
    def parse(s: str) -> Any:
        try:
            v = conv(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}") from None
        if not ok(v):
            raise argparse.ArgumentTypeError(f"expected {what}, got {s!r}")
        return v

    parse.__name__ = name
    return parse


# argparse types: a bad value is one line, ``expected <what>, got <value>``, exit 2 (no traceback)
positive_int = _typed("positive_int", int, lambda v: v > 0, "a positive integer")
nonneg_int = _typed("nonneg_int", int, lambda v: v >= 0, "a non-negative integer")
positive_float = _typed("positive_float", float, lambda v: v > 0 and v < float("inf"), "a positive number")
nonneg_float = _typed("nonneg_float", float, lambda v: 0 <= v < float("inf"), "a non-negative number")
probability = _typed("probability", float, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")


def int_list(what: str, example: str, *, increasing: bool = False) -> Callable[[str], tuple[int, ...]]:
    """An argparse type for comma-separated positive integers (``"4,8,16"`` -> ``(4, 8, 16)``; empty items are
    skipped), ``increasing`` ones with ``increasing``. A bad value is one line naming ``what`` (``"layer
    widths"``) and showing ``example`` (``"like 4,8,16"``), exit 2."""

    def parse(s: str) -> tuple[int, ...]:
        try:
            v = tuple(int(p) for p in s.split(",") if p.strip())
        except ValueError:
            raise argparse.ArgumentTypeError(
                f"expected comma-separated {what} {example}, got {s!r}"
            ) from None
        if increasing and (not v or min(v) < 1 or list(v) != sorted(v)):
            raise argparse.ArgumentTypeError(f"expected increasing positive {what} {example}, got {s!r}")
        if not v or min(v) < 1:
            raise argparse.ArgumentTypeError(f"expected positive {what}, got {s!r}")
        return v

    parse.__name__ = "int_list"
    return parse


def seed_list(text: str) -> list[int]:
    """An argparse type for a list of seeds written as comma-separated seeds and inclusive ranges
    (``"200-215,220"`` -> ``[200, 201, ..., 215, 220]``; ``"7"`` -> ``[7]``), in the order written, as the
    calibration scripts take them. A bad value raises ``ValueError`` (argparse: "invalid seed_list value")."""
    out: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        out += list(range(int(lo), int(hi or lo) + 1))
    return out


def parse_with_write(
    parser: argparse.ArgumentParser,
    argv: Sequence[str] | None = None,
    *,
    what: str | dict[str, str] = "what this run measured",
    commands: dict[str, argparse.ArgumentParser] | None = None,
) -> argparse.Namespace:
    """Parse a calibration script's arguments with its ``--write`` (merge ``what`` into the package's
    calibration.json) and ``--measured TEXT`` (the file's new provenance line) added last; ``--write`` without a
    ``--measured`` is a usage error (exit 2), before anything runs. A script with subcommands passes ``commands``
    (name -> the subcommand's parser, which gets the two flags) and ``what`` as a dict by the same names."""
    from .power import CALIBRATION_FILE

    targets = commands or {"": parser}
    for name, target in targets.items():
        text = what[name] if isinstance(what, dict) else what
        target.add_argument("--write", action="store_true", help=f"merge {text} into {CALIBRATION_FILE}")
        target.add_argument(
            "--measured",
            help="with --write: the file's new provenance line (when, commit, threads, load of its runs)",
        )
    args = parser.parse_args(argv)
    if getattr(args, "write", False) and not (args.measured or "").strip():
        parser.error("--write needs --measured 'date, commit, threads, load' (the file's provenance line)")
    return args


def read_json_object(path: str | Path, what: str) -> dict:
    """The JSON object in the file ``path`` that a command was given (a results.json, a meta file); one
    :class:`.errors.InputError` line ``PATH is not WHAT (why)`` when it is not JSON or not an object."""
    import json

    from .errors import InputError

    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as e:
        raise InputError(f"{path} is not {what} ({e})") from None
    if not isinstance(doc, dict):
        raise InputError(f"{path} is not {what} (not a JSON object)")
    return doc


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when available else ``cpu``; ``cuda`` without a GPU is a clear error. ``cpu`` needs no
    torch (light packages)."""
    d = (device or "auto").lower()
    if d == "cpu":
        return d
    if d != "auto" and not d.startswith("cuda") and d != "mps":
        raise UsageError(f"--device must be cpu, cuda[:N], mps or auto, got {device!r}")
    try:
        import torch
    except ImportError:
        if d == "auto":
            return "cpu"
        raise UsageError(f"--device {device}: torch is not installed here; use --device cpu") from None
    if d == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if d.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: no CUDA device is available here; use --device cpu")
    return d


MODE_HELP = {
    "smoke": "seconds: the pipeline only, claims carry no verdict",
    "quick": "about a minute: the smallest config that shows the effect (the default)",
    "full": "the CPU-scale reproduction, up to ~10 minutes, real data where present",
}

FROM_SCRATCH_HELP = (
    "retrain the checkpoints the paper ships with their recorded training commands, and evaluate those "
    "(slow: the whole training, outside the mode's budget)"
)


def ships_checkpoints(paper: Any) -> bool:
    """Whether the package behind ``paper`` ships trained models (``<module>/checkpoints/commands.json``)."""
    from .shipped import COMMANDS_FILE
    from .shipped import checkpoints_dir

    mod = getattr(getattr(paper, "run", None), "__module__", "") or ""
    if not mod.startswith("iclr24."):
        return False
    return (checkpoints_dir(".".join(mod.split(".")[:2])) / COMMANDS_FILE).is_file()


_seed_type = _typed("seed", int, lambda v: 0 <= v < 2**32, "a seed in [0, 2**32)")


def _add_common_flags(
    p: argparse.ArgumentParser,
    default_out: str | None = "results",
    *,
    modes: bool = True,
    device: bool = True,
    data: bool = False,
    seed: bool = True,
    overwrite: bool = False,
    log_dir: bool = False,
) -> None:
    """The common flags: ``--out DIR``, ``--quiet``; ``--seed`` with ``seed``; ``--smoke/--quick/--full`` with
    ``modes``, ``--device`` with ``device``, ``--data-dir`` with ``data``, ``--overwrite`` with ``overwrite`` (and
    an ``--out``), ``--log-dir`` with ``log_dir`` (a trainer's per-step metrics: :class:`.tracking.StepLog`)."""
    g = p.add_argument_group("common options")
    if default_out is not None:
        g.add_argument("--out", type=Path, default=Path(default_out), metavar="DIR", help="output folder")
        if overwrite:
            g.add_argument(
                "--overwrite",
                action="store_true",
                help="replace the earlier run in --out (removed only once this run has returned; "
                "put back if it fails)",
            )
    if seed:
        g.add_argument("--seed", type=_seed_type, default=0, help="random seed")
    if modes:
        m = g.add_mutually_exclusive_group()
        for mode in MODES:
            m.add_argument(
                f"--{mode}",
                dest="mode",
                action="store_const",
                const=mode,
                default=argparse.SUPPRESS,
                help=MODE_HELP[mode],
            )
    if device:
        g.add_argument("--device", default="cpu", help="cpu, cuda[:N], mps or auto")
    if log_dir:
        g.add_argument(
            "--log-dir",
            type=Path,
            default=None,
            metavar="DIR",
            help="write per-step metrics to DIR/metrics.jsonl, and TensorBoard event files when tensorboard is "
            "installed (view with: tensorboard --logdir DIR)",
        )
    if data:
        g.add_argument(
            "--data-dir",
            type=Path,
            default=None,
            metavar="DIR",
            help="folder of the real datasets fetched with `iclr24 data get` "
            "(default: $ICLR24_DATA, else ~/.cache/iclr24/data)",
        )
    g.add_argument("--quiet", action="store_true", help="no progress bars")


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (``prog: error: ... (see --help)``) and exit 2."""

    def error(self, message: str):  # type: ignore[override]
        print(f"{self.prog}: error: {message} (see {self.prog} --help)", file=sys.stderr)
        sys.exit(2)


class App:
    """A tiny argparse application with subcommands and the common flags.

    ``user_errors``: extra exception types of the package that are the user's doing (e.g. an unreachable endpoint);
    like ``ValueError`` they print one line and exit 2."""

    def __init__(
        self,
        prog: str,
        description: str,
        version: str | None = None,
        user_errors: tuple[type[BaseException], ...] = (),
    ) -> None:
        self.prog = prog
        self.user_errors = USER_ERRORS + tuple(user_errors)
        self.parser = _Parser(
            prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
        )
        if version:
            self.parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
        self.sub = self.parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
        self.sub.required = True
        self._get_paper: Callable[[], Any] | None = None  # set by add_reproduce; bench --paper-scale reads it

    def command(
        self,
        name: str,
        help: str,
        *args: tuple[tuple[str, ...], dict[str, Any]],
        modes: bool = False,
        device: bool = False,
        data: bool = False,
        out: bool = True,
        common: bool = True,
        default_out: str | None = None,
        seed: bool = True,
        resume: bool | Callable[[argparse.Namespace], bool] | tuple[tuple[str, ...], dict[str, Any]] = False,
        adds_to: Sequence[str] = (),
        parts: Callable[[argparse.Namespace], Sequence[str]] | None = None,
        log_dir: bool = False,
    ) -> Callable:
        """Register a subcommand; ``args`` are :func:`arg` specs. The function takes the parsed namespace and
        returns an exit code (or None for 0). ``out=False`` for a command that writes nothing (no ``--out``);
        ``default_out`` defaults to ``results/<prog>/<name>``; ``seed=False`` for a command whose result no seed
        changes (no ``--seed``, no ``args.seed``); ``common=False`` adds no common flag at all.

        The ``--out`` folder holds one run (see the module docstring). ``resume``: the command continues its own
        earlier run in ``--out`` (``True``, or a function of the parsed arguments), or does when the switch given
        as ``resume`` is (an :func:`arg` spec such as :func:`resume_arg`: the command's last flag).
        ``adds_to``: names of this app's commands into whose run
        folders this command writes its own files. ``parts``: a function of the parsed arguments giving the entries
        of a shared ``--out`` the command owns (folders end with ``/``). ``log_dir``: a trainer's ``--log-dir``
        (per-step metrics as JSONL, TensorBoard when installed; ``args.log_dir``, None when not given)."""

        def deco(fn: Callable[[argparse.Namespace], int | None]) -> Callable:
            p = self.sub.add_parser(
                name, help=help, description=help, formatter_class=argparse.ArgumentDefaultsHelpFormatter
            )
            for flags, kw in args:
                p.add_argument(*flags, **kw)
            continues = resume
            if isinstance(resume, tuple):  # the switch that asks for it: continue when it is given
                continues = attrgetter(p.add_argument(*resume[0], **resume[1]).dest)
            has_modes = bool(modes)
            if common:
                folder = default_out if default_out is not None else f"results/{self.prog}/{name}"
                _add_common_flags(
                    p,
                    default_out=folder if out else None,
                    modes=has_modes,
                    device=bool(device),
                    data=data,
                    seed=seed,
                    overwrite=True,
                    log_dir=log_dir,
                )
            p.set_defaults(
                _fn=fn,
                _has_modes=has_modes and common,
                _check_out=common and out,
                _device=bool(device),
                _run=(name, continues, tuple(f"{self.prog} {c}" for c in adds_to), parts),
            )
            return fn

        return deco

    def add_reproduce(self, get_paper: Callable[[], Any], device: bool = True) -> None:
        """The standard ``reproduce`` subcommand: run this package's claim checks, write REPORT.md/claims.json and
        the plots into ``--out`` (default ``results/<prog>/reproduce``). ``device=False`` for a package whose claims
        run on the CPU only (no ``--device`` flag then)."""
        self._get_paper = get_paper

        @self.command(
            "reproduce",
            "Run this paper's claim checks and write REPORT.md, claims.json and plots to --out.",
            arg(
                "--strict",
                action="store_true",
                help="exit 1 when a claim does not hold or a measurement failed",
            ),
            arg("--from-scratch", action="store_true", help=FROM_SCRATCH_HELP),
            modes=True,
            device=device,
            data=True,
        )
        def _reproduce(args: argparse.Namespace) -> int:
            from .runner.report import run_isolated

            paper = get_paper()
            if args.from_scratch and not ships_checkpoints(paper):
                raise UsageError(
                    f"--from-scratch: {self.prog} ships no checkpoints; its reproduce always trains from scratch"
                )
            rec = run_isolated(
                paper,
                name=getattr(paper, "name", None) or self.prog,
                mode=args.mode,
                seed=args.seed,
                out=args.out,
                device=getattr(args, "device", "cpu"),
                show_progress=not args.quiet,
                data_dir=args.data_dir,
                from_scratch=args.from_scratch,
            )
            return exit_code([rec], strict=args.strict, out=args.out)

    def add_bench(self, run_benchmarks: Callable[[str], Any], device: bool = False) -> None:
        """The standard ``bench`` subcommand: ``run_benchmarks(mode) -> BenchReport``, printed as a table with its
        notes and written to ``--out`` as bench.json and bench.md. A ``run_benchmarks(mode, out)`` that takes an
        ``out`` parameter also gets the (checked, existing) out folder for its plots and tables; it lists what it
        wrote there in ``BenchReport.artifacts``.

        After :meth:`add_reproduce`, ``bench --paper-scale [--device D]`` instead runs a few steps of the paper's
        own configuration (``Paper.paper_scale``) and writes paper_scale.json and paper_scale.md (one row)."""
        import inspect

        from .bench import BenchReport

        wants_out = "out" in inspect.signature(run_benchmarks).parameters
        scale = self._get_paper is not None
        extra = []
        if scale:
            extra.append(
                arg(
                    "--paper-scale",
                    action="store_true",
                    help="instead of the benchmarks: time a few steps of the paper's own configuration "
                    "(PAPER_SCALE), its peak memory and FLOPs, and extrapolate the paper's whole run",
                )
            )

        @self.command(
            "bench",
            "Benchmark ours against the baseline in one run (interleaved medians, ratios); writes bench.json/md."
            + (
                " With --paper-scale: the paper's own configuration instead (paper_scale.json/md)."
                if scale
                else ""
            ),
            *extra,
            modes=True,
            device=device or scale,
            seed=False,  # run_benchmarks(mode) takes no seed: a --seed flag would change nothing
        )
        def _bench(args: argparse.Namespace) -> int:
            from .io import atomic_write_json
            from .io import atomic_write_text

            if getattr(args, "paper_scale", False):
                return self._paper_scale(args)
            if not device and getattr(args, "device", "cpu") != "cpu":
                raise UsageError(
                    f"--device {args.device}: this package's benchmarks run on the CPU; --device is for --paper-scale"
                )
            rep = run_benchmarks(args.mode, out=Path(args.out)) if wants_out else run_benchmarks(args.mode)
            if not isinstance(rep, BenchReport):
                raise TypeError(
                    f"{self.prog}: run_benchmarks(mode) must return a BenchReport, got {type(rep).__name__}"
                )
            text = rep.to_markdown()
            print(text, end="")
            atomic_write_json(Path(args.out) / "bench.json", {"mode": args.mode, **rep.to_dict()})
            atomic_write_text(Path(args.out) / "bench.md", f"# {self.prog} bench ({args.mode})\n\n{text}")
            print(f"wrote {Path(args.out) / 'bench.json'} and {Path(args.out) / 'bench.md'}")
            return 0

    def _paper_scale(self, args: argparse.Namespace) -> int:
        """``bench --paper-scale``: this paper's row of ``iclr24 bench --paper-scale`` (in this process)."""
        from .io import atomic_write_json
        from .io import atomic_write_text
        from .scale import measure_paper_scale
        from .scale import paper_scale_markdown
        from .threads import pinned_threads

        if getattr(args, "_mode_given", False):
            raise UsageError(
                "--paper-scale runs the paper's own configuration; --smoke/--quick/--full do not apply"
            )
        paper = self._get_paper()
        if getattr(paper, "paper_scale", None) is None:
            raise UsageError(f"{self.prog} has no PAPER_SCALE configuration yet")
        with pinned_threads(paper.threads):
            row = {"package": paper.name, "threads": paper.threads, "error": None}
            row.update(measure_paper_scale(paper.paper_scale(args.device), device=args.device))
        text = paper_scale_markdown([row])
        if row.get("notes"):
            text += "\n" + "\n".join(f"- {n}" for n in row["notes"]) + "\n"
        print(text, end="")
        out = Path(args.out)
        atomic_write_json(out / "paper_scale.json", {"device": args.device, "rows": [row]})
        atomic_write_text(out / "paper_scale.md", f"# {self.prog} paper scale ({args.device})\n\n{text}")
        print(f"wrote {out / 'paper_scale.json'} and {out / 'paper_scale.md'}")
        return 0

    def main(self, argv: Sequence[str] | None = None) -> int:
        raw = list(sys.argv[1:] if argv is None else argv)
        args = self.parser.parse_args(raw)
        args._argv = raw  # the arguments as given: a trainer records `prog ...` in its provenance.json
        args._mode_given = hasattr(args, "mode")
        if getattr(args, "_has_modes", False) and not hasattr(args, "mode"):
            args.mode = "quick"
        if getattr(args, "quiet", False):
            set_quiet(True)
        where = f"{self.prog} {args.command}"
        out = getattr(args, "out", None) if getattr(args, "_check_out", False) else None
        run: RunFolder | None = None
        try:
            if getattr(args, "_device", False):
                args.device = resolve_device(args.device)
            if out is not None and not is_secondary_rank():  # under torchrun, rank 0 alone manages --out
                run = self._run_folder(args, raw)
                run.open()
            rc = args._fn(args)
        except (UsageError, RunFolderError, *self.user_errors) as e:
            if run is not None:
                run.fail("user")
            print(f"{where}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            if run is not None:
                run.fail("interrupted")
            print(f"{self.prog}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # output piped into `head` and closed early: not an error
            if run is not None:
                run.fail("interrupted")
            sys.stderr.close()
            return 0
        except BaseException:
            if run is not None:
                run.fail("failed")
            raise
        else:
            if run is not None:
                run.done(rc)
        finally:
            if run is not None:
                run.close()
        return int(rc or 0)

    def _run_folder(self, args: argparse.Namespace, argv: list[str]) -> RunFolder:
        name, resume, adds_to, parts = args._run
        return RunFolder(
            args.out,
            command=f"{self.prog} {name}",
            argv=argv,
            overwrite=getattr(args, "overwrite", False),
            resume=bool(resume(args) if callable(resume) else resume),
            adds_to=adds_to,
            parts=None if parts is None else list(parts(args)),
        )

    def command_line(self, args: argparse.Namespace) -> str:
        """This run's command line, ``prog command --flag ...``, as the run marker in its ``--out`` records it: the
        ``command`` a trainer writes into its model folder's provenance.json. ``prog command`` alone when ``--out``
        holds no marker (a command function called without :meth:`main`)."""
        import shlex

        from .runfolder import read_marker

        runs = (read_marker(args.out) or {}).get("runs") or [{}]
        return shlex.join([self.prog, *runs[-1].get("argv", [args.command])])

    def __call__(self, argv: Sequence[str] | None = None) -> int:
        return self.main(argv)


def exit_code(results: list[dict], strict: bool, out: Path | str) -> int:
    """Print the claims; 0 when every package ran; 1 when one crashed (or, with ``strict``, when a claim fails or a
    measurement raised)."""
    from .claims import Claim
    from .summary import claims_to_markdown

    claims = [Claim.from_dict(c) for r in results for c in r["claims"]]
    if claims:
        print(claims_to_markdown(claims))
    print(f"wrote {Path(out) / 'REPORT.md'} and {Path(out) / 'claims.json'}")
    if any(r["status"] == "failed" for r in results):
        return 1
    if strict and (
        any(c.status in ("fails", "error") for c in claims) or any(r["status"] != "ok" for r in results)
    ):
        return 1
    return 0
