"""The paper's main experiment, the input-label alignment sweep: students with different nonlinearities trained on
Walsh cube tasks of varying input-label alignment, and the geometry of their hidden layer."""

from __future__ import annotations

import os
import time
from collections import defaultdict
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe

from .measure import measure
from .metrics import CLASSIFIERS
from .students import TrainConfig
from .students import make_activation
from .students import train_students
from .tasks import MAX_BITS
from .tasks import alignment_of_a
from .tasks import walsh_cube

__all__ = ["SweepConfig", "run_sweep", "summarise"]

METRICS = ("cka_x", "cka_y", "ps", "ccgp", "sd", "sd_untrained", "pr", "acc_means")


@dataclass(frozen=True)
class SweepConfig:
    """A grid of Walsh cube cells ``(k, a)`` x nonlinearities x seeds, and how the geometry is measured.
    Defaults: a CPU-scale version of the paper's alignment sweep (P = 8, D = 100, sigma = 1, test sigma = 0.5)."""

    cells: tuple[tuple[int, float], ...] = ((1, 0.0), (1, 1.0), (1, 3.5), (3, 0.0), (3, 1.0), (3, 7 / 6))
    acts: tuple[str, ...] = ("tanh", "relu")
    seeds: tuple[int, ...] = (0, 1, 2)
    n_bits: int = 3
    dim: int = 100
    noise: float = 1.0
    n_samples: int = 5000
    train: TrainConfig = field(default_factory=TrainConfig)
    test_noise: float = 0.5
    trials_per_condition: int = 250
    classifier: str = "svc"
    rep_noise: float = 0.2

    def __post_init__(self) -> None:
        for name in ("cells", "acts", "seeds"):
            v = getattr(self, name)
            if isinstance(v, str) or not isinstance(v, tuple | list) or not v:
                raise InputError(f"a sweep needs a non-empty tuple of {name}, got {describe(v)}")
        for a in self.acts:
            make_activation(a)
        for s in self.seeds:
            check_int(s, "seed", minimum=0, maximum=2**63 - 1 - 1000)
        n_bits = check_int(self.n_bits, "n_bits", minimum=2, maximum=MAX_BITS)
        for cell in self.cells:
            if not isinstance(cell, tuple | list) or len(cell) != 2:
                raise InputError(f"each cell is a pair (k, a), got {cell!r}")
            alignment_of_a(cell[1], 2**n_bits, cell[0])  # checks k and a for this cube
        check_int(self.dim, "dim", minimum=2**n_bits - 1, maximum=10**6)
        check_int(self.n_samples, "n_samples", minimum=1, maximum=10**7)
        check_int(self.trials_per_condition, "trials_per_condition", minimum=2, maximum=10**6)
        for name in ("noise", "test_noise", "rep_noise"):
            check_float(getattr(self, name), name, minimum=0, maximum=1e12)
        if not isinstance(self.classifier, str) or self.classifier not in CLASSIFIERS:
            raise InputError(f"classifier must be one of {CLASSIFIERS}, got {self.classifier!r}")
        if not isinstance(self.train, TrainConfig):
            raise InputError(f"train must be a TrainConfig, got {describe(self.train)}")


def run_sweep(
    cfg: SweepConfig,
    *,
    show_progress: bool = True,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> list[dict]:
    """Train every student of the grid (one batched ensemble) and measure it. One row per (k, a, act, seed);
    keys starting with ``_`` hold arrays (hidden and input condition means, targets) and the trained
    :class:`~.students.Student` (``_student``). ``callbacks``, ``log_dir``, ``checkpoint``, ``resume``: as in
    :func:`~.students.train_students`."""
    if not isinstance(cfg, SweepConfig):
        raise InputError(f"cfg must be a SweepConfig, got {describe(cfg)}")
    members = []
    for k, a in cfg.cells:
        for seed in cfg.seeds:
            task = walsh_cube(
                cfg.n_bits, k, a, dim=cfg.dim, noise=cfg.noise, n_samples=cfg.n_samples, seed=seed
            )
            for act in cfg.acts:
                members.append((k, a, act, seed, task))
    t0 = time.perf_counter()
    students = train_students(
        [m[4] for m in members],
        [m[2] for m in members],
        [m[3] for m in members],
        cfg.train,
        show_progress=show_progress,
        callbacks=callbacks,
        log_dir=log_dir,
        checkpoint=checkpoint,
        resume=resume,
    )
    train_seconds = time.perf_counter() - t0
    rows = []
    for (k, a, act, seed, task), st in progress(
        list(zip(members, students, strict=True)),
        desc="measuring geometry",
        disable=None if show_progress else True,
    ):
        Xt, ct = task.trials(cfg.trials_per_condition, noise=cfg.test_noise, seed=1000 + seed)
        g = measure(
            st.representation(Xt),
            ct,
            targets=task.targets,
            means=st.representation(task.means),
            input_kernel=task.K_x,
            classifier=cfg.classifier,
            rep_noise=cfg.rep_noise,
            seed=seed,
        )
        rows.append(
            {
                "k": k,
                "a": float(a),
                "alignment": task.alignment,
                "act": act,
                "seed": seed,
                "cka_x": g.cka_input,
                "cka_y": g.cka_target,
                "ps": g.ps,
                "ccgp": g.ccgp,
                "sd": g.sd,
                "sd_untrained": g.sd_untrained,
                "pr": g.participation_ratio,
                "acc_means": st.accuracy(task.means, task.targets),
                "epochs": st.epochs_run,
                "final_loss": st.losses[-1],
                "train_seconds_all": train_seconds,
                "_hidden_means": st.representation(task.means),  # arrays: not for JSON
                "_input_means": task.means,
                "_targets": task.targets,
                "_student": st,
            }
        )
    return rows


def summarise(rows: list[dict]) -> dict[tuple[int, float, str], dict[str, float]]:
    """Mean (over seeds) of every metric per ``(k, a, act)``; also ``alignment`` and ``n_seeds``."""
    if isinstance(rows, dict) or not isinstance(rows, list | tuple) or not rows:
        raise InputError(f"rows must be a non-empty list of run_sweep's rows, got {describe(rows)}")
    need = {"k", "a", "act", "alignment", *METRICS}
    for r in rows:
        if not isinstance(r, dict) or not need <= set(r):
            missing = sorted(need - set(r)) if isinstance(r, dict) else need
            raise InputError(
                f"each row must be a dict of run_sweep with keys {sorted(need)}; missing {sorted(missing)}"
            )
    groups: dict[tuple[int, float, str], list[dict]] = defaultdict(list)
    for r in rows:
        groups[(r["k"], r["a"], r["act"])].append(r)
    out = {}
    for key, rs in groups.items():
        out[key] = {m: float(np.mean([r[m] for r in rs])) for m in METRICS}
        out[key]["alignment"] = rs[0]["alignment"]
        out[key]["n_seeds"] = len(rs)
    return out
