"""The ``maxent-moco`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import re

import numpy as np

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability

from . import bench
from .algorithms import OSVI
from .algorithms import MoCoVI
from .algorithms import ModelBasedPlanning
from .algorithms import ValueIteration
from .data import ENVIRONMENTS
from .data import load_env
from .data import load_mdp
from .envs import MODEL_KINDS
from .envs import make_model
from .planning import evaluate_policy
from .planning import solve_control
from .reproduce import PAPER
from .sample import OS_DYNA_VARIANTS
from .sample import Dyna
from .sample import MoCoDyna
from .sample import OSDyna
from .sample import QLearning
from .sample import TDLearning

app = App("maxent-moco", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # numpy only: the claims run on the CPU
app.add_bench(bench.run_benchmarks)

EXACT = ("mocovi", "vi", "mbrl", "osvi")
SAMPLE = ("mocodyna", "dyna", "osdyna", "qlearning", "td")


def _build(name: str, args, P_hat):
    mode = args.mode_rl
    if name == "mocovi":
        return MoCoVI(P_hat, args.d, mode=mode, beta=args.beta)
    if name == "vi":
        return ValueIteration(mode=mode)
    if name == "mbrl":
        return ModelBasedPlanning(P_hat, mode=mode)
    if name == "osvi":
        return OSVI(P_hat, mode=mode)
    common = dict(
        planning_interval=args.planning_interval, eval_every=args.eval_every, mode=mode, model=args.model
    )
    if name == "mocodyna":
        return MoCoDyna(
            args.d,
            alpha=args.lam,
            beta=args.beta,
            val_queue_interval=args.queue_interval,
            wait_for_values=args.wait_for_values,
            **common,
        )
    if name == "dyna":
        return Dyna(alpha=args.lam, **common)
    if name == "osdyna":
        return OSDyna(alpha=args.lam, variant=args.osdyna_variant, **common)
    if name == "qlearning":
        if mode != "control":
            raise UsageError("--algo qlearning is a control method; use --algo td with --mode pe")
        return QLearning(eval_every=args.eval_every)
    if mode != "pe":
        raise UsageError("--algo td evaluates a policy; use it with --mode pe")
    return TDLearning(eval_every=args.eval_every)


@app.command(
    "run",
    "Run MoCoVI/MoCoDyna or a baseline on an environment with a given model error; print and save the errors.",
    arg(
        "--env", choices=ENVIRONMENTS, default="cliffwalk", help="built-in environment (maze33: the 3x3 maze)"
    ),
    arg("--mdp", default=None, help="your own MDP as .npz (P (S,A,S), R (S,A), gamma); overrides --env"),
    field_arg(
        MoCoDyna,
        "alpha",
        "--lam",
        dest="lam",
        type=probability,
        help="model error level lambda in [0, 1] (the count model's smoothing weight for the sample-based ones)",
    ),
    field_arg(
        MoCoDyna,
        "model",
        choices=MODEL_KINDS,
        help="model error: (1-lam) P + lam * {uniform over P's successors | stay | every action moves like action 0}"
        " (for the sample-based ones the same smoothing of the count model)",
    ),
    arg(
        "--algo",
        choices=(*EXACT, *SAMPLE, "all"),
        default="mocovi",
        help="algorithm; 'all' runs every exact-query algorithm",
    ),
    field_arg(
        MoCoVI,
        "mode",
        dest="mode_rl",
        choices=("pe", "control"),
        help="policy evaluation (of the optimal policy) or control",
    ),
    field_arg(MoCoDyna, "d", "--d", type=positive_int, help="basis size (number of past values)"),
    field_arg(
        MoCoVI.run,
        "K",
        "--iters",
        dest="iters",
        type=positive_int,
        help="iterations K (exact-query algorithms)",
    ),
    arg("--steps", type=positive_int, default=150_000, help="samples (sample-based algorithms)"),
    arg(
        "--beta",
        type=nonneg_float,
        default=None,
        help="MoCo regularisation (code convention); default: exact for MoCoVI, the paper's value for MoCoDyna",
    ),
    field_arg(MoCoDyna, "planning_interval", type=positive_int, help="samples between plans (sample-based)"),
    field_arg(
        MoCoDyna,
        "val_queue_interval",
        "--queue-interval",
        dest="queue_interval",
        type=positive_int,
        help="samples between basis pushes (MoCoDyna)",
    ),
    field_arg(MoCoDyna, "eval_every", type=positive_int, help="samples between evaluations (sample-based)"),
    field_arg(
        MoCoDyna,
        "wait_for_values",
        help="MoCoDyna variant: plan on the uncorrected model until d+2 values were pushed (the official code "
        "corrects from the first plan on, with its initial random basis)",
    ),
    field_arg(
        OSDyna,
        "variant",
        "--osdyna-variant",
        dest="osdyna_variant",
        choices=OS_DYNA_VARIANTS,
        help="OS-Dyna: re-solve after every sample (official) or re-plan every --planning-interval samples",
    ),
    field_arg(load_env, "seed", "--garnet-seed", dest="garnet_seed", help="seed of the Garnet MDP"),
    arg(
        "--samples",
        default=None,
        help="your own transitions for a sample-based algorithm: .npz with int arrays 's', 'a', 's_next' (n,) "
        "(replaces the generated stream; --steps is then their number)",
    ),
    log_dir=True,
)
def _run(args: argparse.Namespace) -> int:
    from iclr24.paperkit.data.readers import load_npz

    mdp = load_mdp(args.mdp) if args.mdp else load_env(args.env, seed=args.garnet_seed)
    P_hat = make_model(mdp, args.model, args.lam)
    names = list(EXACT) if args.algo == "all" else [args.algo]
    samples = None
    if args.samples is not None:
        if any(name not in SAMPLE for name in names):
            raise UsageError(f"--samples is for the sample-based algorithms ({', '.join(SAMPLE)})")
        z = load_npz(args.samples, keys=("s", "a", "s_next"))
        samples = (z["s"], z["a"], z["s_next"])
    results = {}
    for name in names:
        algo = _build(name, args, P_hat)
        log = {}
        if (
            args.log_dir is not None
        ):  # one folder per algorithm: tensorboard --logdir LOG_DIR shows them side by side
            log["log_dir"] = args.log_dir / (re.sub(r"[^A-Za-z0-9._]+", "-", algo.name).strip("-") or name)
        if name in SAMPLE:
            if samples is not None:
                tr = algo.run(mdp, seed=args.seed, samples=samples, **log)
            else:
                tr = algo.run(mdp, args.steps, seed=args.seed, **log)
            results[algo.name] = {"steps": tr.steps.tolist(), "errors": tr.errors.tolist()}
        else:
            tr = algo.run(mdp, args.iters, **log)
            results[algo.name] = {"iteration": list(range(args.iters + 1)), "errors": tr.errors.tolist()}
    payload = {
        "env": mdp.name,
        "lam": args.lam,
        "model": args.model,
        "mode": args.mode_rl,
        "d": args.d,
        "seed": args.seed,
        "samples": args.samples,
        "results": results,
    }
    V_star, pi_star = solve_control(mdp.P, mdp.R, mdp.gamma)
    V_ref = V_star if args.mode_rl == "control" else evaluate_policy(mdp.P, mdp.R, mdp.gamma, pi_star)
    absolute = (
        not np.abs(V_ref).sum() > 0
    )  # e.g. no reward: the true value is 0, the error is reported absolute
    payload["error"] = "absolute (the true value is 0)" if absolute else "normalised by ||V_true||_1"
    path = atomic_write_json(args.out / "run.json", payload)
    kind = "absolute" if absolute else "normalised"
    metric = f"{kind} policy error" if args.mode_rl == "control" else f"{kind} value error"
    print(f"{mdp.name}, lambda={args.lam}, {args.mode_rl}: {metric}")
    for name, r in results.items():
        xs = r.get("iteration", r.get("steps"))
        shown = [(x, e) for x, e in zip(xs, r["errors"])][:: max(1, len(xs) // 8)] + [
            (xs[-1], r["errors"][-1])
        ]
        print(f"  {name:>14}: " + "  ".join(f"{x}:{e:.3g}" for x, e in dict(shown).items()))
    print(f"wrote {path}")
    return 0


main = app.main
