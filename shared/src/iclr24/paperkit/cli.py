"""The CLI scaffold every package uses, so all ``iclr24`` commands feel alike.

    from iclr24.paperkit.cli import App, arg
    app = App("srigl", "Structured sparse training (SRigL).")

    @app.command("train", "Train a sparse model.", arg("--sparsity", type=float, default=0.9, help="..."))
    def train(args):            # args.out, args.seed, args.mode, args.device, args.quiet are always there
        ...

    app.add_reproduce(lambda: PAPER)
    main = app.main

User errors (``UsageError``, ``ValueError``, ``FileNotFoundError``, ...) print one line and exit 2, no traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from .claims import MODES
from .progress import set_quiet

__all__ = [
    "App",
    "UsageError",
    "arg",
    "add_common_flags",
    "resolve_device",
    "positive_int",
    "probability",
    "nonneg_float",
    "positive_float",
]

USER_ERRORS = (ValueError, FileNotFoundError, NotADirectoryError, IsADirectoryError, FileExistsError)


class UsageError(Exception):
    """A user error: printed as one line, exit code 2."""


def arg(*flags: str, **kwargs: Any) -> tuple[tuple[str, ...], dict[str, Any]]:
    """An argument spec for :meth:`App.command` (same signature as ``add_argument``)."""
    return flags, kwargs


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


positive_int = _typed("positive_int", int, lambda v: v > 0, "a positive integer")
positive_float = _typed("positive_float", float, lambda v: v > 0 and v < float("inf"), "a positive number")
nonneg_float = _typed("nonneg_float", float, lambda v: 0 <= v < float("inf"), "a non-negative number")
probability = _typed("probability", float, lambda v: 0.0 <= v <= 1.0, "a number in [0, 1]")


def resolve_device(device: str) -> str:
    """``auto`` -> ``cuda`` when available else ``cpu``; ``cuda`` without a GPU is a clear error."""
    import torch

    d = (device or "auto").lower()
    if d == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if d.startswith("cuda") and not torch.cuda.is_available():
        raise UsageError(f"--device {device}: no CUDA device is available here; use --device cpu")
    if d != "cpu" and not d.startswith("cuda") and d != "mps":
        raise UsageError(f"--device must be cpu, cuda[:N], mps or auto, got {device!r}")
    return d


def add_common_flags(p: argparse.ArgumentParser, default_out: str = "results") -> None:
    """``--out DIR``, ``--seed``, ``--smoke/--quick/--full``, ``--device``, ``--quiet``."""
    g = p.add_argument_group("common options")
    g.add_argument("--out", type=Path, default=Path(default_out), help="output folder")
    g.add_argument(
        "--seed",
        type=_typed("seed", int, lambda v: 0 <= v < 2**32, "a seed in [0, 2**32)"),
        default=0,
        help="random seed",
    )
    m = g.add_mutually_exclusive_group()
    for mode in MODES:
        m.add_argument(
            f"--{mode}",
            dest="mode",
            action="store_const",
            const=mode,
            help=f"{mode} size ({'seconds, for tests' if mode == 'smoke' else 'about a minute' if mode == 'quick' else 'CPU-scale reproduction, up to ~10 min'})",
        )
    g.add_argument("--device", default="cpu", help="cpu, cuda[:N] or auto")
    g.add_argument("--quiet", action="store_true", help="no progress bars")
    p.set_defaults(mode="quick")


class App:
    """A tiny argparse application with subcommands and the common flags."""

    def __init__(
        self,
        prog: str,
        description: str,
        version: str | None = None,
        user_errors: tuple[type[BaseException], ...] = (),
    ) -> None:
        """``user_errors``: extra exception types of the package that are the user's doing (e.g. an unreachable
        endpoint); like ``ValueError`` they print one line and exit 2."""
        self.prog = prog
        self.user_errors = USER_ERRORS + tuple(user_errors)
        self.parser = argparse.ArgumentParser(
            prog=prog, description=description, formatter_class=argparse.ArgumentDefaultsHelpFormatter
        )
        if version:
            self.parser.add_argument("--version", action="version", version=f"%(prog)s {version}")
        self.sub = self.parser.add_subparsers(dest="command", metavar="COMMAND")
        self.sub.required = True

    def command(
        self,
        name: str,
        help: str,
        *args: tuple[tuple[str, ...], dict[str, Any]],
        common: bool = True,
        default_out: str = "results",
    ) -> Callable:
        """Register a subcommand; ``args`` are :func:`arg` specs. The function takes the parsed namespace and
        returns an exit code (or None for 0)."""

        def deco(fn: Callable[[argparse.Namespace], int | None]) -> Callable:
            p = self.sub.add_parser(
                name, help=help, description=help, formatter_class=argparse.ArgumentDefaultsHelpFormatter
            )
            for flags, kw in args:
                p.add_argument(*flags, **kw)
            if common:
                add_common_flags(p, default_out=default_out)
            p.set_defaults(_fn=fn)
            return fn

        return deco

    def add_reproduce(self, get_paper: Callable[[], Any]) -> None:
        """The standard ``reproduce`` subcommand: run this package's claim checks, write REPORT.md/claims.json."""

        @self.command(
            "reproduce",
            "Run this paper's claim checks and write REPORT.md and claims.json to --out.",
            arg("--strict", action="store_true", help="exit 1 when a claim does not hold"),
        )
        def _reproduce(args: argparse.Namespace) -> int:
            from .report import run_papers

            paper = get_paper()
            res = run_papers(
                {paper.name: paper},
                mode=args.mode,
                seed=args.seed,
                out=args.out,
                device=resolve_device(args.device),
                show_progress=not args.quiet,
            )
            return exit_code(res, strict=args.strict, out=args.out)

    def main(self, argv: Sequence[str] | None = None) -> int:
        args = self.parser.parse_args(argv)
        if getattr(args, "quiet", False):
            set_quiet(True)
        try:
            rc = args._fn(args)
        except UsageError as e:
            print(f"{self.prog} {args.command}: error: {e}", file=sys.stderr)
            return 2
        except self.user_errors as e:
            print(f"{self.prog} {args.command}: error: {e}", file=sys.stderr)
            return 2
        except KeyboardInterrupt:
            print(f"{self.prog}: interrupted", file=sys.stderr)
            return 130
        except BrokenPipeError:  # output piped into `head` and closed early: not an error
            sys.stderr.close()
            return 0
        return int(rc or 0)

    def __call__(self, argv: Sequence[str] | None = None) -> int:
        return self.main(argv)


def exit_code(results: list[dict], strict: bool, out: Path | str) -> int:
    """0 when every package ran; 1 when one crashed (or, with ``strict``, when a claim does not hold)."""
    from .claims import claims_to_markdown, Claim  # noqa: I001

    claims = [Claim.from_dict(c) for r in results for c in r["claims"]]
    if claims:
        print(claims_to_markdown(claims))
    print(f"wrote {Path(out) / 'REPORT.md'} and {Path(out) / 'claims.json'}")
    if any(r["status"] != "ok" for r in results):
        return 1
    if strict and not all(c.holds for c in claims):
        return 1
    return 0
