"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

A. Accuracy (sklearn digits, MLP 64-256-256-10): SRigL vs RigL at equal sparsity, budget and seeds, with the dense,
   static-unstructured, static-constant-fan-in and SRigL(gamma_sal=0) baselines.
B. Speed: the condensed 3072->768 constant fan-in layer at batch 1 (online inference) vs dense and vs CSR, one
   variant and thread count fixed in the config (:class:`SpeedClaimConfig`), both ratios from that one.
C. (full mode) MNIST, a small CNN at 90/95% sparsity, the same methods: SRigL vs RigL on real images.
"""

from __future__ import annotations

import statistics
from dataclasses import asdict, dataclass, field, replace

from iclr24.paperkit import ClaimSet, Paper, RunConfig, atomic_write_json, progress

from .bench import SpeedClaimConfig, _threads, time_fixed_variant
from .data import digits_split, mnist_split
from .masks import layer_budget
from .paper_scale import PAPER_SCALE, paper_scale
from .train import TrainConfig, train

NAME = "srigl"

__all__ = [
    "NAME",
    "AccuracyConfig",
    "MnistConfig",
    "ReproduceConfig",
    "SMOKE",
    "QUICK",
    "FULL",
    "PAPER",
    "PAPER_SCALE",
    "paper_scale",
    "run",
    "accuracy_table",
]

# (label, method, gamma_sal)
METHOD_ROWS = (
    ("dense", "dense", 0.0),
    ("static-uns", "static", 0.0),
    ("static-CFI", "static-cfi", 0.0),
    ("RigL", "rigl", 0.0),
    ("SRigL g=0", "srigl", 0.0),
    ("SRigL g=0.3", "srigl", 0.3),
)


@dataclass(frozen=True)
class AccuracyConfig:
    """Digits accuracy experiment; ``train`` holds the per-run recipe (see :class:`TrainConfig`)."""

    sparsities: tuple[float, ...] = (0.9, 0.95)
    n_seeds: int = 5
    train: TrainConfig = field(default_factory=TrainConfig)


@dataclass(frozen=True)
class MnistConfig:
    """MNIST (paperkit's data folder), :func:`~iclr24.srigl.models.small_cnn`, ERK layer densities; the first
    ``n_train`` training images, the 10k test split. Every method runs on the first seed; the further seeds of
    ``n_seeds`` (the paired claims' seeds) run only the two methods those claims compare, RigL and SRigL.
    ``None``: not run."""

    sparsities: tuple[float, ...] = (0.9, 0.95)
    n_seeds: int = 1
    n_train: int = 10_000
    train: TrainConfig = field(
        default_factory=lambda: TrainConfig(
            model="cnn", distribution="erk", epochs=3, batch_size=128, lr=0.05, delta_t=20
        )
    )


@dataclass(frozen=True)
class ReproduceConfig:
    """Everything a mode runs. ``gate_floor``: whether the ">= 94% at 95%" floor is gated (quick mode's 12 epochs
    do not reach it: it is gated in full only)."""

    accuracy: AccuracyConfig = field(default_factory=AccuracyConfig)
    speed: SpeedClaimConfig = field(default_factory=SpeedClaimConfig)
    mnist: MnistConfig | None = None
    gate_floor: bool = True
    srigl_margin_pp: float = 1.5  # SRigL >= RigL - margin (pp)
    # sparsities whose SRigL-vs-RigL claim this mode records as skipped, with its numbers (gated in --full)
    skip_parity_at: tuple[float, ...] = ()


SMOKE = ReproduceConfig(
    AccuracyConfig(n_seeds=1, train=TrainConfig(epochs=2, hidden=(64, 64), delta_t=5)),
    SpeedClaimConfig(
        variant="gather", out_features=96, in_features=384, rounds=1, repeats=5, compiled_dense=False
    ),
    gate_floor=False,
)
# The speed claim's variant and thread count are fixed here, before any run: the fused C++ kernel with int16
# indices as condense(variant="auto") runs it at batch 1 (SpeedClaimConfig.variant = "fused_auto_int16": the row
# loop of kernels.row_mode(), AVX-512 gathers or AVX2 scalar loads, bit-identical outputs; it was
# "fused_avx2_int16" until issue 47's last change) (the paper's condensed kernel also uses int16 indices) on one thread (on this shared 2-core machine the
# two-thread medians measured other jobs' time slices). Quick mode compares against eager F.linear and CSR only
# (torch.compile of the baseline takes ~40 s cold here); full mode adds the compiled dense baseline. Both speed
# ratios are decided over the interleaved rounds (the rounds are the paired "seeds", 95 % t-interval of the mean
# per-round log speed-up): 7 rounds in quick, 9 in full (a round of 200 calls per case takes under a second).
# The accuracy claims are decided over paired seeds (95 % t-interval of the per-seed slack), so quick trains 3 seeds
# (was 2; one seed of all 11 runs costs ~17 s of CPU). Calibrated on seeds 100-104, disjoint from the evaluated
# seeds 0-2 (and 0-4 in full), before the evaluated run: at 12 epochs SRigL trailed RigL at 95% by 2.17 pp on
# average (5 seeds; the slack's interval [-1.79, 0.46] pp), and at 25 epochs (twice the cost) by 1.06 pp (interval
# [-0.17, 1.06]: still inconclusive), so no quick-sized config decides the 95% parity row: it is gated in --full
# only (60 epochs) and recorded here as skipped with its numbers. RigL vs static at 95% held at 12 epochs on those
# seeds ([1.62, 3.05] pp over 5 seeds, [1.16, 4.03] over the first 3).
QUICK = ReproduceConfig(
    AccuracyConfig(n_seeds=3, train=TrainConfig(epochs=12, delta_t=10)),
    SpeedClaimConfig(rounds=7, repeats=200, compiled_dense=False),
    gate_floor=False,
    skip_parity_at=(0.95,),
)
FULL = ReproduceConfig(
    AccuracyConfig(n_seeds=5, train=TrainConfig(epochs=60, delta_t=20)),
    SpeedClaimConfig(rounds=9, repeats=300, compiled_dense=True, compile_mode="max-autotune"),
    mnist=MnistConfig(n_seeds=3),
)

PAPER_SPEEDUP_DENSE = 3.4  # abstract: 3.4x vs dense at 90% sparsity, CPU, batch 1 (4 threads)
PAPER_SPEEDUP_CSR = 2.5  # abstract: 2.5x vs CSR


def _mean_sd(v: list[float]) -> tuple[float, float]:
    return statistics.fmean(v), (statistics.stdev(v) if len(v) > 1 else 0.0)


def run_accuracy(
    cfg: AccuracyConfig | MnistConfig,
    seed: int = 0,
    show_progress: bool = False,
    data=None,
    rows=METHOD_ROWS,
) -> dict:
    """Train every method at every sparsity for ``n_seeds`` seeds (``seed``, ``seed+1``, ...); the data split is
    fixed (digits: seed 0). Returns ``{label: {sparsity: {"acc": [...], "ablated": [...], "invariants": [...],
    "itop": [...]}}}``."""
    data = digits_split(0) if data is None else data
    res: dict = {}
    runs = [(lab, m, g, s) for lab, m, g in rows for s in ((0.0,) if m == "dense" else cfg.sparsities)]
    bar = progress(total=len(runs) * cfg.n_seeds, desc=f"{data.name} accuracy", disable=not show_progress)
    for lab, m, g, s in runs:
        rec = {"acc": [], "ablated": [], "invariants": [], "itop": []}
        for i in range(cfg.n_seeds):
            with _threads(1):  # a tiny MLP trains fastest on one thread (more threads only spin)
                r = train(cfg.train.with_(method=m, sparsity=s, gamma_sal=g, seed=seed + i), data)
            rec["acc"].append(100.0 * r.accuracy)
            rec["ablated"].append(r.n_ablated)
            rec["invariants"].append(r.invariants_ok)
            rec["itop"].append(r.sparsifier.itop_rate())
            bar.update(1)
        res.setdefault(lab, {})[s] = rec
    bar.close()
    return res


def accuracy_table(res: dict, sparsities, rows=METHOD_ROWS) -> str:
    """Markdown: mean +- sd of test accuracy (%) per method and sparsity; ablated hidden neurons for SRigL."""
    head = "| S | " + " | ".join(lab for lab, _, _ in rows) + " |"
    lines = [head, "|" + "---|" * (len(rows) + 1)]
    for s in sparsities:
        cells = []
        for lab, m, _ in rows:
            rec = res[lab].get(0.0 if m == "dense" else s)
            if rec is None:
                cells.append("-")
                continue
            mu, sd = _mean_sd(rec["acc"])
            extra = f" ({statistics.fmean(rec['ablated']):.1f} abl.)" if lab == "SRigL g=0.3" else ""
            cells.append(f"{mu:.2f} +- {sd:.2f}{extra}")
        lines.append(f"| {s} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _accuracy_figure(res: dict, sparsities, rows=METHOD_ROWS, title: str = "digits MLP 64-256-256-10"):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(7, 3.8))
    width = 0.8 / len(rows)
    for j, (lab, m, _) in enumerate(rows):
        xs, mus, sds = [], [], []
        for i, s in enumerate(sparsities):
            rec = res[lab].get(0.0 if m == "dense" else s)
            mu, sd = _mean_sd(rec["acc"])
            xs.append(i + (j - len(rows) / 2 + 0.5) * width)
            mus.append(mu)
            sds.append(sd)
        ax.bar(xs, mus, width, yerr=sds, label=lab, capsize=2)
    ax.set_xticks(range(len(sparsities)), [f"S={s}" for s in sparsities])
    lo = min(statistics.fmean(r["acc"]) for v in res.values() for r in v.values())
    ax.set_ylim(max(0.0, lo - 5), 100)
    ax.set_ylabel("test accuracy (%)")
    ax.set_title(title)
    ax.legend(fontsize=7, ncol=3, loc="lower right")
    fig.tight_layout()
    return fig


def _accuracy_claims(
    claims: ClaimSet,
    res: dict,
    acc_cfg,
    art: list[str],
    margin: float,
    seed: int,
    data_name: str = "digits MLP",
    static_claim: bool = True,
    skip_parity_at: tuple[float, ...] = (),
) -> None:
    """SRigL vs RigL at every sparsity (no worse by ``margin`` pp, the rule fixed in the config) and RigL vs a
    static unstructured mask at the highest, each decided over paired seeds (same split, init and data order per
    seed). A sparsity in ``skip_parity_at`` is recorded as skipped with its numbers (gated in --full only)."""
    sps = acc_cfg.sparsities
    seeds = [seed + i for i in range(acc_cfg.n_seeds)]
    table = accuracy_table(res, sps, [r for r in METHOD_ROWS if r[0] in res])
    common = {"table": table, "n_seeds": acc_cfg.n_seeds, "train_config": asdict(acc_cfg.train)}
    acc = lambda lab, s: res[lab][s]["acc"]
    for s in sps:
        claim = (
            f"SRigL (gamma_sal 0.3) matches RigL's accuracy at {s:.0%} sparsity on {data_name} "
            f"(within {margin} pp)"
        )
        if s in skip_parity_at:
            gap = statistics.fmean(acc("SRigL g=0.3", s)) - statistics.fmean(acc("RigL", s))
            why = "gated in --full only (see QUICK in reproduce.py)"
            claims.skip(
                claim, f"{why}; measured here: SRigL - RigL = {gap:+.2f} pp, mean of {len(seeds)} seeds"
            )
            continue
        claims.paired(
            claim=claim,
            metric=f"test accuracy (%), {data_name}, per seed",
            ours=acc("SRigL g=0.3", s),
            baseline=acc("RigL", s),
            seeds=seeds,
            baseline_name="RigL",
            better="higher",
            margin=margin,
            details={
                **common,
                "dense": statistics.fmean(acc("dense", 0.0)),
                "itop_srigl": statistics.fmean(res["SRigL g=0.3"][s]["itop"]),
                "itop_rigl": statistics.fmean(res["RigL"][s]["itop"]),
            },
            artifacts=art,
        )
    if static_claim:
        _static_claim(claims, res, max(sps), seeds, table, art, data_name)


def _static_claim(
    claims: ClaimSet, res: dict, s_hi: float, seeds: list[int], table: str, art, data_name: str
):
    """RigL against a static random unstructured mask at the highest sparsity, paired over seeds."""
    claims.paired(
        claim=f"RigL beats a static random unstructured mask at {s_hi:.0%} sparsity on {data_name}",
        metric="test accuracy (%), per seed",
        ours=res["RigL"][s_hi]["acc"],
        baseline=res["static-uns"][s_hi]["acc"],
        seeds=seeds,
        baseline_name="static unstructured",
        better="higher",
        margin=0.0,
        details={"table": table},
        artifacts=art,
    )


def _ablation_claims(claims: ClaimSet, res: dict, sps, art: list[str], gate_floor: bool) -> None:
    """Every sparse method's floor at the highest sparsity (gated in full mode only); SRigL's neuron ablation with
    constant fan-in."""
    s_hi = max(sps)
    sparse_means = {lab: statistics.fmean(res[lab][s_hi]["acc"]) for lab, m, _ in METHOD_ROWS if m != "dense"}
    worst = min(sparse_means, key=sparse_means.get)
    floor_claim = f"every sparse method keeps >= 94% test accuracy at {s_hi:.0%} sparsity"
    if gate_floor:
        claims.add(
            claim=floor_claim,
            metric="lowest mean test accuracy (%) over sparse methods",
            ours=sparse_means[worst],
            baseline_name="dense",
            baseline=statistics.fmean(res["dense"][0.0]["acc"]),
            rule="ours >= 94.0",
            details={"per_method": sparse_means, "worst": worst},
            artifacts=art,
        )
    else:
        claims.skip(
            floor_claim,
            f"gated in --full only (60 epochs); this mode trains too briefly to reach the floor (measured here: "
            f"lowest {sparse_means[worst]:.2f}, {worst})",
        )
    rec = res["SRigL g=0.3"][s_hi]
    inv = float(all(all(v["invariants"]) for lab in res for v in res[lab].values()))
    claims.add(
        claim=f"SRigL ablates hidden neurons at {s_hi:.0%} sparsity and keeps constant fan-in",
        metric="ablated hidden neurons (mean over seeds)",
        ours=statistics.fmean(rec["ablated"]),
        baseline_name="SRigL gamma_sal=0",
        baseline=statistics.fmean(res["SRigL g=0"][s_hi]["ablated"]),
        rule="ours >= 1 and invariants_ok == 1",
        variables={"invariants_ok": inv},
        details={"per_seed": rec["ablated"], "invariants_all_runs": bool(inv)},
        artifacts=art,
    )


def _speed_figure(m: dict):
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(figsize=(6, 3.6))
    names = list(m["us"])
    ax.bar(range(len(names)), [m["us"][n] for n in names], color=["C0"] + ["C7"] * (len(names) - 1))
    label = {"ours": f"condensed\n{m['variant']}", "dense": "dense\nF.linear", "csr": "CSR\nF.linear"}
    label["dense_compiled"] = "dense\ncompiled"
    ax.set_xticks(range(len(names)), [label.get(n, n) for n in names], fontsize=8)
    ax.set_ylabel("median time per call (us)")
    ax.set_title(
        f"{m['layer']} at {m['sparsity']:.0%}, batch {m['batch']}, {m['threads']} thread(s): "
        f"x{m['x_dense']:.2f} dense, x{m['x_csr']:.2f} CSR",
        fontsize=9,
    )
    fig.tight_layout()
    return fig


def _speed_claims(claims: ClaimSet, m: dict, cfg: SpeedClaimConfig, art: list[str]) -> None:
    """Both ratios of the one variant and thread count fixed in ``cfg``, each decided over the interleaved rounds
    (the rounds are the paired "seeds"; ratio form: the per-round speed-up against the paper's factor)."""
    where = f"{cfg.sparsity:.0%} sparsity, batch {cfg.batch}, {cfg.variant}, {cfg.threads} thread(s)"
    compiled = m["compiled_dense_measured"]
    dense_name = (
        "dense F.linear (faster of eager and torch.compile)" if compiled else "dense F.linear (eager)"
    )
    common = {
        "variant": cfg.variant,
        "threads": cfg.threads,
        "layer": m["layer"],
        "k": m["k"],
        "max_abs_err": m["max_abs_err"],
        "paper_setting": "4 threads, inductor max-autotune, Intel CPU",
        "timings": {
            "median_us": m["us"],
            "rounds": m["rounds"],
            "x_dense_median": m["x_dense"],
            "x_dense_eager": m["x_dense_eager"],
            "x_dense_compiled": m["x_dense_compiled"],
            "x_csr_median": m["x_csr"],
        },
    }
    rounds = list(range(len(m["rounds"])))
    for key, paper, base in (
        ("x_dense", PAPER_SPEEDUP_DENSE, dense_name),
        ("x_csr", PAPER_SPEEDUP_CSR, None),
    ):
        base = base or "torch CSR F.linear"
        claims.paired(
            claim=f"condensed layer is >= {paper}x faster than {'dense' if key == 'x_dense' else 'CSR'} at {where}",
            metric=f"speed-up over {base} per round (ratio of medians of {cfg.repeats} interleaved calls; "
            f"{len(rounds)} rounds are the paired seeds)",
            ours=[r[key] for r in m["rounds"]],
            baseline=[1.0] * len(rounds),
            seeds=rounds,
            baseline_name=base,
            better="higher",
            factor=paper,
            paper_value=paper,
            timing=True,
            details=common,
            artifacts=art,
        )


MNIST_ROWS = tuple(r for r in METHOD_ROWS if r[0] != "SRigL g=0")  # the five methods


PAIR_ROWS = tuple(r for r in METHOD_ROWS if r[0] in ("RigL", "SRigL g=0.3"))  # what the parity claims compare


def run_mnist(cfg: MnistConfig, seed: int = 0, show_progress: bool = False, data=None, data_dir=None) -> dict:
    """The MNIST rows on :func:`mnist_split` (or ``data``): every method of ``MNIST_ROWS`` at every sparsity on
    ``seed``; RigL and SRigL also on ``seed + 1`` ... ``seed + n_seeds - 1`` (appended to their per-seed lists)."""
    data = mnist_split(cfg.n_train, data_dir) if data is None else data
    res = run_accuracy(
        replace(cfg, n_seeds=1), seed=seed, show_progress=show_progress, data=data, rows=MNIST_ROWS
    )
    if cfg.n_seeds > 1:
        more = replace(cfg, n_seeds=cfg.n_seeds - 1)
        extra = run_accuracy(more, seed=seed + 1, show_progress=show_progress, data=data, rows=PAIR_ROWS)
        for lab, by_s in extra.items():
            for s, rec in by_s.items():
                for k, v in rec.items():
                    res[lab][s][k] += v
    return res


def _digits_block(claims: ClaimSet, cfg: ReproduceConfig, config: RunConfig) -> None:
    """A. digits accuracy: every method, every sparsity, ``n_seeds`` seeds; the accuracy and ablation claims."""
    acc_cfg = cfg.accuracy
    res = run_accuracy(acc_cfg, seed=config.seed, show_progress=config.progress)
    art = [claims.figure(_accuracy_figure(res, acc_cfg.sparsities), "accuracy.png")]
    serial = {lab: {str(s): rec for s, rec in v.items()} for lab, v in res.items()}
    table = accuracy_table(res, acc_cfg.sparsities)
    claims.artifact(atomic_write_json(config.out / "accuracy.json", {"per_seed": serial, "table": table}))
    _accuracy_claims(
        claims, res, acc_cfg, art, cfg.srigl_margin_pp, config.seed, skip_parity_at=cfg.skip_parity_at
    )
    _ablation_claims(claims, res, acc_cfg.sparsities, art, cfg.gate_floor)


def _speed_block(claims: ClaimSet, sc: SpeedClaimConfig, config: RunConfig) -> None:
    """B. the condensed layer's speed against dense and CSR, interleaved rounds."""
    m = time_fixed_variant(sc, show_progress=config.progress)
    art = [claims.figure(_speed_figure(m), "speedup.png")]
    claims.artifact(atomic_write_json(config.out / "speed.json", m))
    _speed_claims(claims, m, sc, art)


def _mnist_block(claims: ClaimSet, cfg: ReproduceConfig, config: RunConfig) -> None:
    """C. MNIST small CNN (--full): SRigL vs RigL on real images."""
    mn = cfg.mnist
    res_m = run_mnist(mn, seed=config.seed, show_progress=config.progress, data_dir=config.data_dir)
    art = [
        claims.figure(
            _accuracy_figure(res_m, mn.sparsities, MNIST_ROWS, "MNIST small CNN (ERK)"), "mnist.png"
        )
    ]
    serial = {lab: {str(s): rec for s, rec in v.items()} for lab, v in res_m.items()}
    table = accuracy_table(res_m, mn.sparsities, MNIST_ROWS)
    claims.artifact(atomic_write_json(config.out / "mnist.json", {"per_seed": serial, "table": table}))
    _accuracy_claims(
        claims,
        res_m,
        mn,
        art,
        cfg.srigl_margin_pp,
        config.seed,
        data_name="MNIST small CNN",
        static_claim=False,
    )


def run(config: RunConfig) -> ClaimSet:
    cfg: ReproduceConfig = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, config)
    with claims.timed(f"A. digits accuracy, {len(METHOD_ROWS)} methods x {cfg.accuracy.n_seeds} seed(s)"):
        _digits_block(claims, cfg, config)
    sc = cfg.speed
    with claims.timed(f"B. condensed layer speed, {sc.variant}, {sc.threads} thread(s), batch {sc.batch}"):
        _speed_block(claims, sc, config)
    if cfg.mnist is None:
        claims.skip(
            "SRigL (gamma_sal 0.3) matches RigL's accuracy on MNIST, small CNN",
            "run in --full only (MNIST from the data folder, ~3 min of CPU)",
        )
    else:
        with claims.timed(f"C. MNIST small CNN, {len(MNIST_ROWS)} methods x {cfg.mnist.n_seeds} seed(s)"):
            _mnist_block(claims, cfg, config)
    claims.fact(
        "constant fan-in k of the timed condensed layer",
        value=layer_budget(sc.out_features * sc.in_features, 1.0 - sc.sparsity) // sc.out_features,
        description=f"closed form: k = floor(floor({sc.out_features} * {sc.in_features} * (1 - {sc.sparsity})) / "
        f"{sc.out_features})",
    )
    return claims


PAPER = Paper(
    name="srigl",
    title="Dynamic Sparse Training with Structured Sparsity (SRigL)",
    summary="Constant fan-in structured sparse training with neuron ablation matches RigL's accuracy and condenses "
    "into fast small dense layers.",
    run=run,
    data=("mnist",),  # section C (--full) reads MNIST from paperkit's data folder
    paper_scale=paper_scale,  # SRigL's ImageNet ResNet-50 run (paper_scale.py)
)
