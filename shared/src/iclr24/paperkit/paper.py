"""``Paper``: what a package registers under the ``iclr24.papers`` entry point (its claims run, data, threads,
budgets and paper-scale configuration), and ``run_claims``, which executes a package's claims table."""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Mapping
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .claims import BUDGETS
from .claims import KINDS
from .claims import Claim
from .claims import ClaimSet
from .claims import ClaimSpec
from .claims import RunConfig
from .claims import _mode_map

__all__ = ["Paper", "run_claims"]


@dataclass(frozen=True)
class Paper:
    """What a paper package registers under the ``iclr24.papers`` entry-point group. ``data``: the names of the
    real datasets (``iclr24 data list``) its ``--full`` run uses. ``threads``: the torch intra-op and BLAS/OpenMP
    thread count its claims run with, pinned by paperkit around every run whatever the machine's core count (1 by
    default; declare more only where the speed-up was measured: the pin is what keeps the numbers the same on every
    machine). ``paper_scale``: optional ``paper_scale(device) -> dict``, a few steps of the paper's own configuration
    (``iclr24 bench --paper-scale``).

    ``claims``: the paper's claims table (:class:`ClaimSpec` rows). A paper that declares one is held to it: every
    claim its run returns has a kind, is a row of the table (or an ``error``), and is ``skipped`` only when its data
    is absent (``ClaimSet.skip(..., data=...)``, or a ``DataMissing`` inside ``timed``). ``budgets``: CPU seconds of a
    whole run per mode, over :data:`BUDGETS` (30 minutes of full for the three papers that need it).
    ``pin_dispatch``: run the claims with the CPU kernels pinned to one instruction-set level
    (:func:`.threads.pin_process_dispatch`), so one CPU computes the same numbers at any ISA level; ``False`` for a
    paper whose claims are timings against the machine's native kernels (say why in its README)."""

    name: str
    title: str
    summary: str
    run: Callable[[RunConfig], ClaimSet | list[Claim]]
    data: tuple[str, ...] = ()
    threads: int = 1
    paper_scale: Callable[..., Any] | None = None
    claims: tuple[ClaimSpec, ...] = ()
    budgets: Mapping[str, float] | None = None
    pin_dispatch: bool = True

    def __post_init__(self) -> None:
        for n in ("name", "title", "summary"):
            if not isinstance(getattr(self, n), str) or not getattr(self, n).strip():
                raise ValueError(f"Paper.{n} must be a non-empty string")
        if not callable(self.run):
            raise ValueError("Paper.run must be callable: run(config: RunConfig) -> ClaimSet")
        if isinstance(self.data, str) or not all(isinstance(d, str) and d for d in self.data):
            raise ValueError(f"Paper.data must be a tuple of data names, got {self.data!r}")
        object.__setattr__(self, "data", tuple(self.data))
        if isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1:
            raise ValueError(f"Paper.threads must be a positive int, got {self.threads!r}")
        if self.paper_scale is not None and not callable(self.paper_scale):
            raise ValueError("Paper.paper_scale must be callable or None")
        if isinstance(self.claims, ClaimSpec) or not all(isinstance(c, ClaimSpec) for c in self.claims):
            raise ValueError("Paper.claims must be a tuple of ClaimSpec rows")
        object.__setattr__(self, "claims", tuple(self.claims))
        ids = [c.id for c in self.claims]
        if len(set(ids)) != len(ids):
            raise ValueError(f"Paper.claims: ids must be unique, got {ids}")
        budgets = {**BUDGETS, **_mode_map("Paper", "budgets", self.budgets, float)}
        object.__setattr__(self, "budgets", budgets)
        if not isinstance(self.pin_dispatch, bool):
            raise ValueError(f"Paper.pin_dispatch must be a bool, got {self.pin_dispatch!r}")

    def validate(self, cs: ClaimSet) -> None:
        """The claims-table contract (for a paper that declares ``claims``): kinds, rows, and what skipped means."""
        if not self.claims:
            return
        words = {c.claim for c in self.claims}
        for c in cs.claims:
            if c.status == "error":
                continue
            if c.claim not in words:
                raise TypeError(f"{self.name}: claim {c.claim!r} is not a row of the paper's claims table")
            if c.kind not in KINDS:
                raise TypeError(f"{self.name}: claim {c.claim!r} has no kind (one of {KINDS})")
            if (
                c.status == "skipped"
                and "missing_data" not in c.details
                and "real data missing" not in c.message
            ):
                raise TypeError(
                    f"{self.name}: claim {c.claim!r} is skipped for a reason other than absent data "
                    f"({c.message!r}); decide it in this mode, or leave it out of this mode"
                )

    def check(self, config: RunConfig) -> ClaimSet:
        """Run the claim checks, with torch and BLAS pinned to ``threads``, and validate what came back (a
        ``ClaimSet``, or a list of ``Claim``)."""
        from .threads import pinned_threads

        with pinned_threads(self.threads):
            res = self.run(config)
        if isinstance(res, ClaimSet):
            if res.paper != self.name:
                raise TypeError(f"{self.name}: run() returned the claims of paper {res.paper!r}")
            self.validate(res)
            return res
        if isinstance(res, list | tuple) and all(isinstance(c, Claim) for c in res):
            return ClaimSet.from_claims(self.name, config, list(res))
        raise TypeError(f"{self.name}: run() must return a ClaimSet, got {type(res).__name__}")


def run_claims(
    claims: ClaimSet,
    table: Sequence[ClaimSpec],
    measures: Mapping[str, Callable[[ClaimSpec, list[int]], Any]],
) -> ClaimSet:
    """Execute a claims table: for each row decided in this mode, ``measures[row.id](row, seeds)`` runs inside
    ``claims.timed(row.claim)`` with the row's evaluated seeds and adds the row's claim (``claims.add(spec=row,
    ...)`` / ``claims.paired(spec=row, ...)``); a row whose power plan is undecidable is recorded as such and not
    run. Measurements shared by several rows belong in the package (computed once, e.g. ``functools.cache``)."""
    ids = [s.id for s in table]
    missing = [i for i in ids if i not in measures]
    if missing:
        raise ValueError(f"{claims.paper}: no measurement for claims {missing}")
    base = claims.config.seed
    for spec in table:
        if not spec.in_mode(claims.mode):
            continue
        plan = spec.plan(claims.mode)
        if plan is not None and not plan.decidable and claims.mode != "smoke":
            claims.undecidable(spec, plan)
            continue
        with claims.timed(spec.claim, spec):
            measures[spec.id](spec, spec.evaluated_seeds(claims.mode, base))
    return claims
