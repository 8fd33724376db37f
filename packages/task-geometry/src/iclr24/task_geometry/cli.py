"""The ``task-geometry`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import nonneg_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability
from iclr24.paperkit.cli import resume_arg

from . import bench
from .experiments import SweepConfig
from .measure import measure
from .reproduce import PAPER
from .students import ACTIVATIONS
from .students import TrainConfig

app = App("task-geometry", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)  # every claim runs on the CPU
app.add_bench(bench.run_benchmarks)


def _save_students(args: argparse.Namespace, named: list[tuple[str, object, dict]], cpu: float) -> Path:
    """Each trained student as a model folder OUT/models/<name> (model.safetensors, config.json, provenance.json)."""
    folder = Path(args.out) / "models"
    steps_per_epoch = math.ceil(args.n_samples / 64)
    for name, st, task in named:
        st.save_pretrained(
            folder / name,
            provenance={
                "command": app.command_line(args),
                "steps": st.epochs_run * steps_per_epoch,
                "cpu_seconds_ensemble": round(cpu, 2),  # the whole batched ensemble, trained at once
                "task": task,
            },
        )
    return folder


@app.command(
    "run",
    "Train students of each nonlinearity on a task, save them as model folders OUT/models/<name> and print their "
    "hidden-layer geometry.",
    arg(
        "--task",
        choices=("cube", "random"),
        default="cube",
        help="Walsh cube or random kernel classification",
    ),
    arg("--P", type=positive_int, default=8, help="number of conditions (a power of two for the cube)"),
    arg("--k", type=positive_int, default=1, help="number of binary targets"),
    arg(
        "--a", type=nonneg_float, default=1.0, help="cube: variance on the target directions (1 = isotropic)"
    ),
    arg("--alignment", type=probability, default=None, help="input-label alignment c (overrides --a)"),
    field_arg(
        SweepConfig,
        "acts",
        "--act",
        dest="act",
        nargs="+",
        choices=sorted(ACTIVATIONS),
        help="nonlinearities",
    ),
    arg(
        "--seeds",
        type=positive_int,
        default=3,
        help="initialisations per nonlinearity: seeds SEED..SEED+N-1 (--seed), each with its own data draw",
    ),
    field_arg(TrainConfig, "epochs", type=positive_int, help="training epochs (Adam lr 1e-2, batch 64)"),
    field_arg(SweepConfig, "n_samples", type=positive_int, help="training samples"),
    field_arg(TrainConfig, "width", type=positive_int, help="hidden units"),
    field_arg(SweepConfig, "noise", type=nonneg_float, help="input noise std during training"),
    field_arg(
        SweepConfig,
        "classifier",
        choices=("svc", "ridge"),
        help="linear classifier of CCGP and SD (ridge: far faster on a CPU)",
    ),
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _run(args: argparse.Namespace) -> int:
    from .experiments import run_sweep
    from .experiments import summarise
    from .plots import plot_alignment_sweep
    from .tasks import a_of_alignment

    if args.task == "random":
        return _run_random(args)
    if args.P & (args.P - 1) or args.P < 4:
        raise UsageError(f"--P must be a power of two >= 4 for the cube task, got {args.P}")
    n_bits = args.P.bit_length() - 1
    a = a_of_alignment(args.alignment, args.P, args.k) if args.alignment is not None else args.a
    cfg = SweepConfig(
        cells=((args.k, a),),
        acts=tuple(args.act),
        seeds=tuple(range(args.seed, args.seed + args.seeds)),
        n_bits=n_bits,
        n_samples=args.n_samples,
        noise=args.noise,
        train=TrainConfig(width=args.width, epochs=args.epochs),
        classifier=args.classifier,
    )
    cpu0 = time.process_time()
    rows = run_sweep(
        cfg, show_progress=not args.quiet, log_dir=args.log_dir, checkpoint=Path(args.out) / "train_state.pt",
        resume=args.resume,
    )  # fmt: skip
    cpu = time.process_time() - cpu0  # training and measuring
    _save_students(
        args,
        [(f"k{r['k']}-a{r['a']:g}-{r['act']}-seed{r['seed']}", r["_student"],
          {"kind": "walsh_cube", "n_bits": n_bits, "k": r["k"], "a": r["a"], "n_samples": args.n_samples,
           "noise": args.noise, "seed": r["seed"]}) for r in rows],
        cpu,
    )  # fmt: skip
    summary = summarise(rows)
    _print_summary(summary)
    from iclr24.paperkit.plots import save_figure

    save_figure(plot_alignment_sweep(summary), Path(args.out) / "geometry.png")
    public = [{k: v for k, v in r.items() if not k.startswith("_")} for r in rows]
    atomic_write_json(Path(args.out) / "results.json", {"rows": public})
    print(f"wrote {Path(args.out) / 'results.json'} and the students in {Path(args.out) / 'models'}")
    return 0


def _run_random(args: argparse.Namespace) -> int:
    import numpy as np

    from .students import train_students
    from .tasks import random_kernel

    c = 0.5 if args.alignment is None else args.alignment
    seeds = list(range(args.seed, args.seed + args.seeds))
    tasks = [
        random_kernel(args.P, args.k, c, n_samples=args.n_samples, noise=args.noise, seed=s) for s in seeds
    ]
    acts = [a for a in args.act for _ in tasks]
    cpu0 = time.process_time()
    students = train_students(
        tasks * len(args.act), acts, seeds * len(args.act),
        TrainConfig(width=args.width, epochs=args.epochs), show_progress=not args.quiet,
        log_dir=args.log_dir, checkpoint=Path(args.out) / "train_state.pt", resume=args.resume,
    )  # fmt: skip
    _save_students(
        args,
        [(f"{st.act}-seed{st.seed}", st, {"kind": "random_kernel", "P": args.P, "k": args.k, "alignment": c,
          "n_samples": args.n_samples, "noise": args.noise, "seed": st.seed}) for st in students],
        time.process_time() - cpu0,
    )  # fmt: skip
    rows = []
    for st, task in zip(students, tasks * len(args.act), strict=True):
        Xt, ct = task.trials(50, noise=0.5, seed=1000 + st.seed)
        g = measure(
            st.representation(Xt), ct, targets=task.targets, means=st.representation(task.means),
            input_kernel=task.K_x, classifier=args.classifier, max_splits=36, max_dichotomies=64, seed=st.seed,
        )  # fmt: skip
        rows.append({"act": st.act, "seed": st.seed, "alignment": task.alignment, **g.as_dict()})
    for act in args.act:
        rs = [r for r in rows if r["act"] == act]
        print(
            f"{act:>10}  c={rs[0]['alignment']:.3f}  CKA_y={np.mean([r['cka_target'] for r in rs]):.3f}  "
            f"CKA_x={np.mean([r['cka_input'] for r in rs]):.3f}  PS={np.mean([r['ps'] for r in rs]):.3f}  "
            f"CCGP={np.mean([r['ccgp'] for r in rs]):.3f}"
        )
    atomic_write_json(Path(args.out) / "results.json", {"rows": rows})
    print(f"wrote {Path(args.out) / 'results.json'} and the students in {Path(args.out) / 'models'}")
    return 0


def _print_summary(summary: dict) -> None:
    cols = ("cka_y", "cka_x", "ps", "ccgp", "sd_untrained", "acc_means")
    print(f"{'k':>2} {'a':>6} {'c':>6} {'act':>10} " + " ".join(f"{c:>12}" for c in cols))
    for (k, a, act), v in summary.items():
        print(
            f"{k:>2} {a:>6.3g} {v['alignment']:>6.3f} {act:>10} " + " ".join(f"{v[c]:>12.3f}" for c in cols)
        )


@app.command(
    "measure",
    "Geometry metrics of your own activations (a .npz with activations, conditions, targets).",
    arg("activations", type=Path, help=".npz with 'activations' (n, N), 'conditions' (n,), 'targets' (P, k)"),
    field_arg(measure, "classifier", choices=("svc", "ridge"), help="linear classifier of CCGP and SD"),
    field_arg(measure, "rep_noise", type=nonneg_float, help="noise std added to the activations for SD"),
)
def _measure(args: argparse.Namespace) -> int:
    from iclr24.paperkit.data.readers import load_npz

    d = load_npz(args.activations, keys=("activations", "conditions", "targets"))
    g = measure(
        d["activations"],
        d["conditions"],
        targets=d["targets"],
        input_kernel=d.get("input_kernel"),
        classifier=args.classifier,
        rep_noise=args.rep_noise,
        seed=args.seed,
    )
    print(json.dumps(g.as_dict(), indent=2))
    atomic_write_json(Path(args.out) / "geometry.json", g.as_dict())
    print(f"wrote {Path(args.out) / 'geometry.json'}")
    return 0


main = app.main
