"""Paper scale: the paper's largest setting, MoCoDyna on CliffWalk control (Fig. 1, bottom), measured.

Nothing is trained by gradient descent here: the largest run of the paper is the sample-based MoCoDyna of Fig. 1
(bottom): CliffWalk 6x6 control, 150,000 samples per run, a plan (MoCo correction of every (x, a) row, then
policy iteration in the corrected model) every 2,000 samples, a value pushed into the basis queue every 10,000
samples (the official value for d = 3), beta by d as the official code, for d in {1, 2, 3}, lambda in {0.1, 0.5,
1} and 20 runs each. One paper step is one whole MoCoDyna run at the costliest setting (d = 3, lambda = 1); the
paper's figure is ``3 x 3 x 20`` of them (its baselines Q-learning, Dyna and OS-Dyna are not counted). The MDP
travels as this package's ``.npz`` file (``P``, ``R``, ``gamma``; :func:`~iclr24.maxent_moco.data.load_mdp`).
The code is numpy, so the FLOPs are counted by hand (:func:`dyna_run_flops`)."""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["PaperScaleConfig", "PAPER_SCALE", "paper_scale", "dyna_run_flops"]


@dataclass(frozen=True)
class PaperScaleConfig:
    env: str = "cliffwalk"  # 6x6, 4 actions, success 0.9, gamma 0.9
    n_steps: int = 150_000  # samples per run (the paper's control runs)
    planning_interval: int = 2000
    val_queue_interval: int = 10_000  # the official value for d = 1 and 3 (6,000 for d = 2)
    d: int = 3  # the costliest of d in {1, 2, 3}
    lam: float = 1.0  # LocallySmoothed model error
    ds: tuple[int, ...] = (1, 2, 3)
    lams: tuple[float, ...] = (0.1, 0.5, 1.0)
    n_runs: int = 20  # the paper's runs per curve
    newton_iters: int = 10  # assumed per correction, for the FLOP count only
    policy_iters: int = 5  # assumed per policy-iteration solve, for the FLOP count only


PAPER_SCALE = PaperScaleConfig()


def dyna_run_flops(
    n_steps: int,
    planning_interval: int,
    S: int,
    A: int,
    d: int,
    newton_iters: int = 10,
    policy_iters: int = 5,
) -> int:
    """Floating-point operations of one MoCoDyna control run, counted by hand from the numpy work: per plan, a
    batched Newton solve of the MoCo dual over the S·A rows (per row and iteration: the tilt, its normaliser and
    moments, S·(2d² + 4d + 12), and the eigendecomposition of the d x d Hessian, about 10 d³), then policy
    iteration (per sweep a dense S x S solve, 2/3 S³, and the Q-values, 2 S·A·S); per sample, the count model and
    the running means of the d + 2 queued bases, 2 (d + 2) + 4."""
    plans = math.ceil(n_steps / planning_interval)
    newton = newton_iters * S * A * (S * (2 * d * d + 4 * d + 12) + 10 * d**3)
    policy = policy_iters * (2 * S**3 // 3 + 2 * S * A * S)
    return int(plans * (newton + policy) + n_steps * (2 * (d + 2) + 4))


def paper_scale(device: str = "cpu", *, n_steps: int | None = None):
    """One MoCoDyna run of ``PAPER_SCALE`` (numpy, on the CPU whatever ``device``); ``n_steps`` shrinks it for
    tests."""
    from iclr24.paperkit.scale import ScaleRun

    from .data import load_env
    from .data import load_mdp
    from .data import save_mdp
    from .sample import MoCoDyna

    c = PAPER_SCALE
    steps = n_steps or c.n_steps
    run = ScaleRun(device, batch=steps)  # a micro-step: one run of all its samples
    mdp = load_mdp(save_mdp(load_env(c.env), run.folder / f"{c.env}.npz"))
    algo = MoCoDyna(c.d, alpha=c.lam, planning_interval=c.planning_interval,
                    val_queue_interval=c.val_queue_interval, eval_every=2500)  # fmt: skip
    state = {"seed": 0}

    def step() -> float:
        trace = algo.run(mdp, steps, seed=state["seed"])  # each run its own sample stream, as the paper's 20
        state["seed"] += 1
        return float(trace.errors[-1])

    S, A = mdp.n_states, mdp.n_actions
    return run.paper_scale(
        step,
        config=f"MoCoDyna(d={c.d}) control, CliffWalk {S} states x {A} actions, lambda={c.lam:g}, {steps:,} "
        f"samples, plan every {c.planning_interval:,}",
        paper_steps=len(c.ds) * len(c.lams) * c.n_runs,
        dataset="CliffWalk as an MDP .npz (P, R, gamma)",
        flops_per_micro_step=float(
            dyna_run_flops(steps, c.planning_interval, S, A, c.d, c.newton_iters, c.policy_iters)
        ),  # fmt: skip
        notes=[
            "no gradient training: one step = one whole MoCoDyna run (micro-batch = its samples); paper steps = "
            f"{len(c.ds)} d x {len(c.lams)} lambdas x {c.n_runs} runs of Fig. 1 (bottom), each timed at d = 3, "
            "lambda = 1 (the baselines Q-learning, Dyna, OS-Dyna not counted)",
            f"FLOPs counted by hand (numpy; dyna_run_flops, assuming {c.newton_iters} Newton iterations per "
            f"correction and {c.policy_iters} policy-iteration sweeps per plan); CPU only: --device is ignored, and the H200 column (bf16 "
            "matrix peak) does not apply to this small numpy work",
        ],
    )
