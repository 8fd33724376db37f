"""The samplers compared by the claims, and the machinery that runs them per seed (used by ``reproduce.py`` and by
``scripts/calibrate.py``, so that the calibration measures exactly what the claims run).

A :class:`Row` is one sampler with its settings; an :class:`Experiment` runs rows on a target at one oracle budget
per sample, one seed at a time, and caches the per-seed records, so that claims sharing a row compute it once and a
claim that needs more seeds than another only adds the missing ones. Seeds: row ``i`` of an experiment on seed
``s`` draws the sampler stream ``1000·s + i`` (no two rows share initial points or noise); the reference draws of
seed ``s`` (shared by the rows of that seed, which makes the seeds paired) use the stream ``10 000 + s``.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from dataclasses import field
from dataclasses import replace
from typing import Any

import torch

from iclr24.paperkit import progress

from .langevin import mala
from .metrics import mmd2
from .metrics import mode_tv
from .metrics import sliced_w2
from .recipes import METHOD_NAMES
from .recipes import BudgetSettings
from .recipes import budget_settings
from .recipes import sample_with_budget

__all__ = [
    "Row",
    "ROWS_2D",
    "FunnelConfig",
    "LogRegConfig",
    "ComparisonConfig",
    "Experiment",
    "mixture_experiment",
    "funnel_experiment",
    "logreg_experiment",
    "summary",
    "sampler_seed",
]


@dataclass(frozen=True)
class Row:
    """One sampler of a comparison: a ``name`` for the tables, a method of :data:`METHOD_NAMES`, the
    :class:`BudgetSettings` fields it overrides, and optionally its own oracle ``budget`` per sample (``None``: the
    comparison's equal budget)."""

    name: str
    method: str
    overrides: tuple[tuple[str, object], ...] = ()
    budget: int | None = None

    def __post_init__(self) -> None:
        if self.method not in METHOD_NAMES:
            raise ValueError(f"Row {self.name!r}: method must be one of {METHOD_NAMES}, got {self.method!r}")
        b = self.budget
        if b is not None and (isinstance(b, bool) or not isinstance(b, int) or b < 1):
            raise ValueError(f"Row {self.name!r}: budget must be a positive int or None, got {b!r}")

    def settings(self, base: BudgetSettings) -> BudgetSettings:
        return replace(base, **dict(self.overrides))

    def budget_at(self, budget: int) -> int:
        """The oracle budget per sample this row runs at in a comparison at ``budget``."""
        return budget if self.budget is None else self.budget


ROWS_2D = (
    Row("rdmc-is", "rdmc-is", (("schedule", "constant"),)),
    Row("rdmc-is paper-schedule", "rdmc-is", (("schedule", "paper"),)),
    Row("rdmc-ula", "rdmc-ula", (("schedule", "constant"),)),
    Row("rdmc-is+ula hybrid", "rdmc-is+ula", (("schedule", "constant"),)),
    Row("ula", "ula"),
    Row("mala", "mala"),
    Row("ula broad-init", "ula", (("init_std", 5.0),)),
    # appended, so that the rows above keep their indices (hence their sampler seeds): the paper's variant with
    # inner chains 10x longer (200 ULA steps of 0.05 per chain, Langevin time 10, twenty relaxation times of one
    # mode of q_t), at 10x the budget: 20 outer steps x 10 chains x 200 steps = 40 000 gradient calls per sample
    Row("rdmc-ula long chains", "rdmc-ula", (("schedule", "constant"), ("inner_steps", 200)), budget=40_000),
)


@dataclass(frozen=True)
class FunnelConfig:
    """Neal's funnel (v ~ N(0, 9), x | v ~ N(0, e^v)); metric: W2 of the v-marginal against exact draws. The step
    sizes are the 2-D mixture's, not retuned."""

    dim: int = 2
    n: int = 1000
    n_ref: int = 2000
    budget: int = 4000
    K: int = 20
    rows: tuple[Row, ...] = (
        Row("rdmc-is", "rdmc-is", (("schedule", "constant"),)),
        Row("ula", "ula"),
        Row("mala", "mala"),
    )


@dataclass(frozen=True)
class LogRegConfig:
    """Bayesian logistic regression on breast_cancer (10 mean features + intercept, d = 11, prior N(0, I)).
    Reference: MALA, ``ref_chains`` chains × ``ref_steps`` steps (step 4/L, acceptance about 0.93) on its own seed.
    Metric: RMS over the coordinates of the posterior-mean error in posterior standard deviations. Steps are set
    from the smoothness bound L = λ_max(XᵀX)/4 + 1: ULA h = 1/L, MALA h = 4/L, rdMC's inner ULA τ = ½/L."""

    n: int = 100
    budget: int = 1000
    T: float = 1.0
    K: int = 10
    ref_chains: int = 200
    ref_steps: int = 1500
    ref_seed: int = 123
    ula_step_L: float = 1.0
    mala_step_L: float = 4.0
    rows: tuple[Row, ...] = (
        Row("rdmc-ula", "rdmc-ula", (("schedule", "paper"),)),
        Row("ula", "ula"),
        Row("mala", "mala"),
    )


@dataclass(frozen=True)
class ComparisonConfig:
    """One mode's sizes: the 2-D comparison (``target``, ``n`` samples per sampler against ``n_ref`` exact draws,
    ``budget`` oracle calls per sample, the ``rows``), and in full the error-vs-budget curve, the 10-D mixture, the
    funnel and the logistic regression. The seeds of every claim are in the claims table (``reproduce.CLAIMS``)."""

    target: str = "gmm2d"
    n: int = 1000
    n_ref: int = 2000
    budget: int = 4000
    settings: BudgetSettings = field(default_factory=BudgetSettings)
    rows: tuple[Row, ...] = ROWS_2D
    curve_budgets: tuple[int, ...] = ()
    curve_rows: tuple[str, ...] = ("rdmc-is", "rdmc-is paper-schedule", "ula", "mala")
    high_dim_target: str | None = None
    high_dim_rows: tuple[str, ...] = (
        "rdmc-is",
        "ula",
    )  # fixed before the run: rdMC-IS is the claims' variant
    funnel: FunnelConfig | None = None
    logreg: LogRegConfig | None = None

    def __post_init__(self) -> None:
        names = [r.name for r in self.rows]
        if len(set(names)) != len(names):
            raise ValueError(f"row names must be unique, got {names}")
        for r in (*self.curve_rows, *self.high_dim_rows):
            if r not in names:
                raise ValueError(f"row {r!r} is not one of {names}")


def sampler_seed(seed: int, row_index: int) -> int:
    return 1000 * seed + row_index


@dataclass
class Experiment:
    """Rows of one comparison on one target at one oracle ``budget`` per sample (a row's own budget wins), run one
    (row, seed) at a time on demand and cached. ``evaluate(x, seed) -> dict`` scores the samples; each record adds
    the seed, the sampler seed, the oracle calls per sample counted by the sampler and the CPU seconds of the
    sampler and its evaluation (``time.process_time``). ``first[row]``: the samples of the row's first seed."""

    target: Any
    rows: tuple[Row, ...]
    base: BudgetSettings
    n: int
    budget: int
    evaluate: Callable[[torch.Tensor, int], dict]
    label: str = ""
    sampler_kwargs: dict = field(default_factory=dict)
    show_progress: bool = False
    records: dict = field(default_factory=dict)
    first: dict = field(default_factory=dict)
    extras: dict = field(default_factory=dict)  # what the experiment's figures and records need besides

    def row(self, name: str) -> tuple[int, Row]:
        for i, r in enumerate(self.rows):
            if r.name == name:
                return i, r
        raise ValueError(f"row {name!r} is not one of {[r.name for r in self.rows]}")

    def get(self, name: str, seeds: list[int]) -> list[dict]:
        """The per-seed records of row ``name`` on ``seeds`` (computing the missing ones)."""
        i, row = self.row(name)
        todo = [s for s in seeds if (name, s) not in self.records]
        desc = f"{self.label or 'comparison'}: {name}"
        for s in progress(todo, desc=desc, disable=not self.show_progress or len(todo) < 2):
            c0 = time.process_time()
            kw = self.sampler_kwargs if row.method.startswith("rdmc") else {}
            x, info = sample_with_budget(
                self.target, row.method, self.n, row.budget_at(self.budget), seed=sampler_seed(s, i),
                settings=row.settings(self.base), **kw,
            )  # fmt: skip
            rec = {"seed": s, "sampler_seed": sampler_seed(s, i), **self.evaluate(x, s)}
            rec["grad_calls_per_sample"] = info.grad_calls_per_sample
            rec["logp_calls_per_sample"] = info.logp_calls_per_sample
            if "acceptance_rate" in info.extras:
                rec["acceptance_rate"] = info.extras["acceptance_rate"]
            rec["cpu_seconds"] = time.process_time() - c0
            self.records[(name, s)] = rec
            self.first.setdefault(name, x)
        return [self.records[(name, s)] for s in seeds]

    def run_rows(self) -> list[str]:
        """The rows that have at least one record, in row order."""
        done = {n for n, _ in self.records}
        return [r.name for r in self.rows if r.name in done]

    def results(self) -> dict[str, list[dict]]:
        """Every record computed so far, per row (in seed order)."""
        out: dict[str, list[dict]] = {}
        for (name, _s), rec in sorted(self.records.items(), key=lambda kv: (self.row(kv[0][0])[0], kv[0][1])):
            out.setdefault(name, []).append(rec)
        return out

    def settings(self) -> dict:
        """The sampler keyword arguments of every row run, at its budget."""
        return {
            r.name: budget_settings(r.method, r.budget_at(self.budget), r.settings(self.base))
            for r in self.rows
            if r.name in self.run_rows()
        }


def _refs(target, n_ref: int) -> Callable[[int], torch.Tensor]:
    cache: dict[int, torch.Tensor] = {}

    def ref(s: int) -> torch.Tensor:
        if s not in cache:
            cache[s] = target.sample(n_ref, generator=torch.Generator().manual_seed(10_000 + s))
        return cache[s]

    return ref


def mixture_experiment(
    target, cfg: ComparisonConfig, budget: int | None = None, label: str = "", show_progress: bool = False
) -> Experiment:
    """``cfg.rows`` on a Gaussian mixture at ``budget`` (default ``cfg.budget``); metrics mode-TV, MMD², sliced W2
    against ``cfg.n_ref`` exact draws of the seed."""
    ref = _refs(target, cfg.n_ref)

    def evaluate(x: torch.Tensor, s: int) -> dict:
        r = ref(s)
        return {
            "mode_tv": mode_tv(x, target.means, target.weights),
            "mmd2": mmd2(x, r),
            "sliced_w2": sliced_w2(x, r),
        }

    return Experiment(
        target, cfg.rows, cfg.settings, cfg.n, cfg.budget if budget is None else budget, evaluate,
        label=label or "mixture", show_progress=show_progress,
    )  # fmt: skip


def funnel_experiment(cfg: ComparisonConfig, show_progress: bool = False) -> Experiment:
    """Neal's funnel: W2 of the v-marginal (and its sd) against exact draws of the seed."""
    from .data import funnel

    fc = cfg.funnel
    target = funnel(fc.dim)
    ref = _refs(target, fc.n_ref)

    def evaluate(x: torch.Tensor, s: int) -> dict:
        return {"w2_v": sliced_w2(x[:, :1], ref(s)[:, :1]), "v_std": float(x[:, 0].std())}

    exp = Experiment(
        target, fc.rows, replace(cfg.settings, K=fc.K), fc.n, fc.budget, evaluate, label="funnel",
        show_progress=show_progress,
    )  # fmt: skip
    exp.extras["ref"] = ref
    return exp


def logreg_experiment(cfg: ComparisonConfig, show_progress: bool = False) -> Experiment:
    """Bayesian logistic regression on breast_cancer: the posterior-mean error (in posterior sds) against a long
    MALA reference on its own seed; also the sd ratio, sliced W2 and the posterior predictive's train accuracy."""
    from .data import breast_cancer_logreg

    lc = cfg.logreg
    target = breast_cancer_logreg()
    L = target.lipschitz
    ref, rinfo = mala(target, lc.ref_chains, lc.ref_steps, 4.0 / L, seed=lc.ref_seed)
    mu, sd = ref.mean(0), ref.std(0)

    def evaluate(x: torch.Tensor, s: int) -> dict:
        z = (x.mean(0) - mu) / sd
        return {
            "mean_err": float(z.pow(2).mean().sqrt()),
            "sd_ratio": float((x.std(0) / sd).median()),
            "sliced_w2": sliced_w2(x, ref),
            "train_accuracy": target.accuracy(x),
        }

    base = replace(
        cfg.settings, T=lc.T, K=lc.K, ula_step=lc.ula_step_L / L, mala_step=lc.mala_step_L / L,
        inner_step=1.0,  # clipped to ½/L by the lipschitz bound
        lipschitz=L,
    )  # fmt: skip
    exp = Experiment(
        target, lc.rows, base, lc.n, lc.budget, evaluate, label="logistic regression",
        sampler_kwargs={"max_floats": 2**16}, show_progress=show_progress,
    )  # fmt: skip
    exp.extras["reference"] = {
        "lipschitz": L,
        "acceptance_rate": rinfo.extras["acceptance_rate"],
        "train_accuracy": target.accuracy(ref),
    }
    return exp


def _mean(recs: list[dict], key: str) -> float:
    return statistics.fmean(r[key] for r in recs)


def _std(recs: list[dict], key: str) -> float:
    return statistics.pstdev(r[key] for r in recs) if len(recs) > 1 else 0.0


def summary(results: dict[str, list[dict]]) -> dict:
    """Per row: the mean over its seeds of every number in its records, and the sd of the metrics."""
    out = {}
    for m, recs in results.items():
        keys = [k for k in recs[0] if k not in ("seed", "sampler_seed")]
        out[m] = {k: _mean(recs, k) for k in keys}
        out[m] |= {f"{k}_std": _std(recs, k) for k in keys if k in ("mode_tv", "mmd2", "w2_v", "mean_err")}
        out[m]["seeds"] = len(recs)
    return out
