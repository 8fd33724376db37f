"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Data: the synthetic family KG (or, in ``--full``, a real DRUM/FaithfulRE/pykeen-style folder given by the
``DRUM_RULES_DATA`` environment variable). Models: DRUM, SMDRUM, MMDRUM trained with the same data, budget and
seed; beta by validation F1; extraction and faithfulness checks on 30 datasets (the test KB, subsamples, rewirings,
random KGs).
"""

from __future__ import annotations

import os
import time
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from iclr24.paperkit import ClaimSet, Paper, RunConfig, progress, seed_everything

from . import synthetic
from .check import check_faithfulness
from .data import REAL_KGS, load_dataset, perturbed_datasets
from .extract import explanation_program, faithful_rules, path_rules
from .model import DRUM
from .paper_scale import PAPER_SCALE, paper_scale  # noqa: F401  (PAPER_SCALE: the named config)
from .rules import format_rule
from .synthetic import GROUND_TRUTH_RULES as GT
from .train import TrainConfig, link_prediction, select_beta, train

NAME = "drum-rules"


@dataclass(frozen=True)
class ReproConfig:
    """Paper (FaithfulRE ``config.ini`` / ``experiment.py``) defaults: rank 3, num_step 3 (T = 2), embedding and
    hidden 128, batch 64, Adam 1e-3, <= 10 epochs, CrossEntropy over the score vector, trained *with* L1
    normalisation; every model is then analysed in both semantics (no normalisation for extraction and the
    faithfulness checks, normalisation for the unsoundness claim). CPU-scale changes (QUICK/FULL): embedding and
    hidden 32 and batch 8, so that a few hundred training queries give enough optimiser steps in 10 epochs."""

    n_families: int = 40
    rank: int = 3
    steps: int = 2
    embed_dim: int = 128
    hidden_dim: int = 128
    epochs: int = 10
    batch_size: int = 64
    lr: float = 1e-3
    loss: str = "ce"
    train_normalize: bool = True
    n_subsample: int = 10
    n_rewire: int = 10
    n_random: int = 9
    explain_sources: int = 3
    drum_max_rules: int = 2000
    drum_max_nodes: int = 100_000
    max_rules: int = 50_000
    data_dir: str | None = None
    real_kgs: tuple[str, ...] = ()  # "umls", "kinships", "nations": one real-KG block each (full mode)
    real_epochs: int = 5
    real_datasets: int = 4  # perturbed copies checked on the real KG for MMDRUM (plus the KG itself)
    accuracy_seeds: int = 1  # paired seeds of the accuracy claim (the run's seed, then seed + 1, ...)
    accuracy_gated: bool = True  # False: the accuracy claim is recorded as skipped, with the run's own MRRs


PAPER_DEFAULTS = ReproConfig()
SMOKE = ReproConfig(
    n_families=3,
    rank=2,
    embed_dim=8,
    hidden_dim=8,
    epochs=2,
    batch_size=8,
    lr=1e-2,
    n_subsample=1,
    n_rewire=1,
    n_random=1,
    explain_sources=1,
    drum_max_rules=100,
    drum_max_nodes=5000,
    max_rules=500,
)
# Quick: rank 2 (SMDRUM conjunctions of at most two chains) and 14 datasets, so the run takes about a minute of
# CPU; chosen on calibration seeds 101 and 102, never on the evaluated seed 0.
# The accuracy claim is gated in --full only (accuracy_gated=False): quick records it as skipped with the MRRs of the
# run's own three models. Decided on calibration seeds 101-105 (disjoint from the evaluated seed 0), this code,
# 2026-12-02: the per-seed slack min(MRR_MM, MRR_SM) - MRR_DRUM + 0.1 was 0.024, -0.001, 0.083, -0.038, 0.005 (mean
# 0.015, sd 0.045), so a paired 95 % interval would need dozens of seeds to leave zero, and each seed trains the three
# models again (17-23 CPU s; the rest of the quick run takes about 45 CPU s in all, 3 seeds took 160).
QUICK = ReproConfig(
    n_families=20,
    rank=2,
    embed_dim=32,
    hidden_dim=32,
    epochs=10,
    batch_size=8,
    n_subsample=2,
    n_rewire=2,
    n_random=9,
    explain_sources=1,
    drum_max_rules=500,
    drum_max_nodes=30_000,
    accuracy_seeds=1,
    accuracy_gated=False,
)
# The accuracy claim sits near its 0.1 margin (it held on seed 0 and failed on calibration seed 102), so it is decided
# over 3 paired seeds in full (95 % t-interval of the per-seed slack): each further seed trains the three models once
# more, fixed before the run.
FULL = ReproConfig(
    n_families=40,
    embed_dim=32,
    hidden_dim=32,
    epochs=10,
    batch_size=8,
    data_dir=os.environ.get("DRUM_RULES_DATA"),
    real_kgs=REAL_KGS,
    accuracy_seeds=3,
)
# A named extra, not run by `reproduce`: train in the analysed semantics (no normalisation, DRUM's -log-score loss,
# lr 1e-2), as an earlier version of this package did. Run it with `run_config(NO_NORM_TRAINED, RunConfig(...))`.
NO_NORM_TRAINED = replace(QUICK, train_normalize=False, loss="nll", lr=1e-2, epochs=5)


def _texts(prog) -> list[str]:
    return [format_rule(r, prog.relations) for r in prog.rules]


def _top_rule_truth(prog, data) -> dict:
    """Per head: the highest-weight rule and the fraction of its consequences on the KB that are true facts
    (KB, train, valid or test): a sanity check that the model learned sensible rules, not a faithfulness check."""
    import numpy as np

    from .datalog import consequences
    from .kg import encode_facts

    allf = np.concatenate([data.kg.facts, data.train, data.valid, data.test])
    true = set(encode_facts(allf[:, 0], allf[:, 1], allf[:, 2], data.kg.n_entities).tolist())
    out = {}
    for q in prog.heads:
        top = prog.top(1, head=q)
        if top:
            c = consequences(top, data.kg).tolist()
            out[format_rule(top[0], prog.relations)] = sum(x in true for x in c) / len(c) if c else None
    return out


def _min_pr(rep) -> float:
    return min(rep.precision, rep.recall)


@dataclass
class _Run:
    """What the claim checks of one run share: data, the perturbed datasets, the trained models and caches."""

    cfg: ReproConfig
    data: Any
    datasets: list
    names: list[str]
    base: dict
    models: dict = field(default_factory=dict)  # aggregation -> (model, beta)
    info: dict = field(default_factory=dict)  # aggregation -> training/selection record
    tm: dict = field(default_factory=dict)  # T_M(D) cache shared by the checks of one model
    programs: dict = field(default_factory=dict)  # aggregation -> faithful program
    source_recall: float | None = None
    path_report: Any = None
    global_report: Any = None
    reports: dict = field(default_factory=dict)  # for the figure
    progress: bool = False


def _load_data(cfg: ReproConfig, seed: int):
    """The data folder of ``cfg.data_dir`` (split by ``seed``), else the synthetic family KG of ``seed``."""
    return (
        load_dataset(cfg.data_dir, seed=seed) if cfg.data_dir else synthetic.family(cfg.n_families, seed=seed)
    )


def _setup(cfg: ReproConfig, config: RunConfig) -> _Run:
    seed_everything(config.seed)
    data = _load_data(cfg, config.seed)
    datasets = perturbed_datasets(
        data.eval_kg, cfg.n_subsample, cfg.n_rewire, cfg.n_random, seed=config.seed + 7
    )
    base = {
        "data": data.name,
        "entities": data.kg.n_entities,
        "kb_facts": len(data.kg),
        "datasets": len(datasets),
        "config": asdict(cfg),
        "seed": config.seed,
    }
    return _Run(cfg=cfg, data=data, datasets=datasets, names=list(data.kg.relations), base=base)


def _train_config(cfg: ReproConfig, seed: int) -> TrainConfig:
    return TrainConfig(
        epochs=cfg.epochs,
        batch_size=cfg.batch_size,
        lr=cfg.lr,
        loss=cfg.loss,
        seed=33 + seed,
        min_epochs=min(5, cfg.epochs),
        normalize=cfg.train_normalize,
    )


def _train_models(r: _Run, config: RunConfig) -> None:
    """DRUM, SMDRUM and MMDRUM with the same data, budget and seed; beta by validation F1."""
    r.models, r.info = _train_three(r.cfg, r.data, config.seed, config.progress)


def _train_three(cfg: ReproConfig, data, seed: int, show_progress: bool) -> tuple[dict, dict]:
    """DRUM, SMDRUM and MMDRUM trained alike on ``data`` (model and data-order seed ``33 + seed``); beta by
    validation F1. Returns ``({agg: (model, beta)}, {agg: training/selection record})``."""
    tcfg = _train_config(cfg, seed)
    models, info = {}, {}
    for agg in progress(
        ["sum", "sm", "mm"], desc=f"drum-rules: train (seed {seed})", disable=not show_progress
    ):
        t0 = time.perf_counter()
        m = DRUM(
            data.kg.n_relations,
            rank=cfg.rank,
            steps=cfg.steps,
            aggregation=agg,
            normalize=False,
            embed_dim=cfg.embed_dim,
            hidden_dim=cfg.hidden_dim,
            seed=33 + seed,
        )
        hist = train(m, data, tcfg)
        beta, cls = select_beta(m, data)
        models[agg] = (m, beta)
        info[agg] = {
            "beta": beta,
            "timings": {"train_seconds": time.perf_counter() - t0},
            "epochs": hist["epochs_run"],
            "link_prediction": link_prediction(m, data),
            "classification": cls,
        }
    return models, info


def _claim_faithful(claims: ClaimSet, r: _Run, agg: str, label: str) -> None:
    """Theorem (MM/SM): the faithful program is sound and complete for the model on every dataset."""
    m, beta = r.models[agg]
    prog = faithful_rules(m, beta, relations=r.names, max_rules=r.cfg.max_rules)
    rep = check_faithfulness(m, prog, r.datasets, cache=r.tm)
    base_prog = path_rules(m, beta, relations=r.names)
    brep = check_faithfulness(m, base_prog, r.datasets, cache=r.tm)
    r.programs[agg] = prog
    r.reports[agg] = rep
    claims.add(
        claim=f"faithful {label} extraction is sound and complete on {len(r.datasets)} datasets",
        metric="min(precision, recall)",
        ours=_min_pr(rep),
        baseline_name="path-based extraction (Neural-LP/DRUM style) at the same beta",
        baseline=_min_pr(brep),
        rule="ours >= 1.0 and program_complete == 1",
        paper_value=1.0,
        variables={"program_complete": float(prog.complete)},
        details={
            **r.base,
            "rules": len(prog),
            "timings": {"extraction_seconds": prog.seconds},
            "ours": rep.summary(),
            "baseline": brep.summary(),
            "baseline_rules": len(base_prog),
            "model": r.info[agg],
            "top_rules": [str(x) for x in prog.format(n=8, weights=True).splitlines()],
            "ground_truth_rules_found": sorted(set(_texts(prog)) & set(GT)),
            "top_rule_truth_precision": _top_rule_truth(prog, r.data),
        },
    )


def _claim_drum_explanations(claims: ClaimSet, r: _Run) -> None:
    """DRUM (sum), no normalisation: global multipath extraction with a budget + exact per-fact explanations.

    The explanation rules are collected on the first ``explain_sources`` datasets, so they are complete there by
    construction (a fact, recorded apart); whether they are *sound* on all datasets, and in particular on the
    datasets they were not collected on, is the claim."""
    m, beta = r.models["sum"]
    glob = faithful_rules(
        m, beta, relations=r.names, max_rules=r.cfg.drum_max_rules, max_nodes=r.cfg.drum_max_nodes
    )
    grep_ = check_faithfulness(m, glob, r.datasets, cache=r.tm)
    r.global_report = grep_
    n_src = r.cfg.explain_sources
    expl = explanation_program(m, beta, r.datasets[:n_src], relations=r.names, show_progress=r.progress)
    erep = check_faithfulness(m, expl, r.datasets, cache=r.tm)
    src, other = erep.per_dataset[:n_src], erep.per_dataset[n_src:]
    r.source_recall = min(d["recall"] for d in src)
    base_prog = path_rules(m, beta, relations=r.names)
    r.path_report = check_faithfulness(m, base_prog, r.datasets, cache=r.tm)
    claims.fact(
        "DRUM explanation rules: recall on the datasets they were collected on",
        value=r.source_recall,
        description=f"complete by construction on the {n_src} source dataset(s) (one rule per predicted fact)",
    )
    claims.add(
        claim=f"DRUM multipath rules (per-fact explanations) are sound on all {len(r.datasets)} datasets, "
        f"including the {len(other)} they were not collected on",
        metric="min precision over datasets",
        ours=erep.precision,
        baseline_name="path-based extraction at the same beta (min precision)",
        baseline=r.path_report.precision,
        rule="ours >= 1.0 and global_precision >= 1.0",
        paper_value=1.0,
        variables={"global_precision": grep_.precision, "global_complete": float(glob.complete)},
        details={
            **r.base,
            "explanation_rules": len(expl),
            "explanations": erep.summary(),
            "precision_min_unseen_datasets": min((d["precision"] for d in other), default=None),
            "recall_min_unseen_datasets": min((d["recall"] for d in other), default=None),
            "explanations_per_dataset": erep.per_dataset,
            "global_rules": len(glob),
            "global_complete": glob.complete,
            "timings": {"global_seconds": glob.seconds},
            "global": grep_.summary(),
            "model": r.info["sum"],
            "note": "the exact global program is exponential (the paper's 'inefficient in practice'); with a "
            "rule budget it is sound but incomplete, so it is reported, never called faithful",
        },
    )


def _claim_path_incomplete(claims: ClaimSet, r: _Run) -> None:
    m, beta = r.models["sum"]
    brep = r.path_report
    r.info["path_precision"] = brep.precision
    claims.add(
        claim="path-based extraction is incomplete for no-norm DRUM (recall < 1) while staying sound",
        metric="min recall over datasets (path baseline)",
        ours=brep.recall,
        baseline_name="exact DRUM program under its rule budget (min recall; sound, marked incomplete)",
        baseline=r.global_report.recall,
        rule="ours < 1.0 and baseline_precision >= 1.0",
        variables={"baseline_precision": brep.precision},
        details={
            **r.base,
            "baseline": brep.summary(),
            "per_dataset": brep.per_dataset,
        },
    )


def _claim_path_unsound_normalised(claims: ClaimSet, r: _Run) -> None:
    """Normalised DRUM: the path rules fire while the normalised score drops below beta."""
    m, _ = r.models["sum"]
    mn = m.copy_with(normalize=True)
    beta_n, cls_n = select_beta(mn, r.data)
    prog_n = path_rules(mn, beta_n, relations=r.names)
    rep_n = check_faithfulness(mn, prog_n, r.datasets)
    r.reports["norm"] = rep_n
    claims.add(
        claim="path-based extraction is unsound for normalised DRUM (precision < 1)",
        metric="min precision over datasets (path rules vs normalised DRUM)",
        ours=rep_n.precision,
        baseline_name="path rules vs no-norm DRUM (min precision)",
        baseline=r.info["path_precision"],
        rule="ours < 1.0",
        details={
            **r.base,
            "model_trained_with_normalisation": r.cfg.train_normalize,
            "beta_normalised": beta_n,
            "classification": cls_n,
            "report": rep_n.summary(),
            "per_dataset": rep_n.per_dataset,
            "rules": len(prog_n),
        },
    )


def _claim_extraction_time(claims: ClaimSet, r: _Run) -> None:
    """Exact DRUM extraction given the time MM + SM needed (and a generous rule budget): does it finish?"""
    m, beta = r.models["sum"]
    t_mm, t_sm = r.programs["mm"].seconds, r.programs["sm"].seconds
    timed = faithful_rules(
        m, beta, relations=r.names, max_rules=10**9, max_nodes=10**12, max_seconds=max(t_mm + t_sm, 1.0)
    )
    claims.add(
        claim="MM/SM extraction finishes (complete) while exact DRUM extraction does not in the same time",
        metric="extraction seconds (MM + SM)",
        ours=t_mm + t_sm,
        baseline_name="exact DRUM multipath extraction given the same time",
        baseline=timed.seconds,
        rule="mm_sm_complete == 1 and drum_complete == 0",
        variables={
            "mm_sm_complete": float(r.programs["mm"].complete and r.programs["sm"].complete),
            "drum_complete": float(timed.complete),
        },
        timing=True,  # the seconds, and what exact DRUM extraction reaches in them, depend on the machine
        details={
            "mm_seconds": t_mm,
            "sm_seconds": t_sm,
            "drum_seconds": timed.seconds,
            "drum_complete": timed.complete,
            "mm_rules": len(r.programs["mm"]),
            "sm_rules": len(r.programs["sm"]),
            "drum_rules_found_in_time": len(timed),
        },
    )


def _claim_accuracy(claims: ClaimSet, r: _Run, config: RunConfig) -> None:
    """MM/SM against DRUM in MRR, decided over paired seeds: the run's own models on ``config.seed``, then the three
    models trained alike on the data of each further seed (``cfg.accuracy_seeds`` in all). With
    ``cfg.accuracy_gated`` False (quick) it is recorded as skipped, with the MRRs of the run's own models."""
    aggs = ("sum", "sm", "mm")
    seeds = [config.seed + i for i in range(r.cfg.accuracy_seeds)]
    info = {seeds[0]: r.info}
    for s in seeds[1:]:
        info[s] = _train_three(r.cfg, _load_data(r.cfg, s), s, config.progress)[1]
    mrr = {s: {a: info[s][a]["link_prediction"]["mrr"] for a in aggs} for s in seeds}
    ours, base = [min(mrr[s]["mm"], mrr[s]["sm"]) for s in seeds], [mrr[s]["sum"] for s in seeds]
    kw = dict(
        claim="MM/SM trade little accuracy for faithful, fast extraction (MRR within 0.1 of DRUM)",
        metric="min MRR (MM, SM) per seed (each seed: its own KG split, the three models trained alike)",
        baseline_name="DRUM (sum) MRR",
        details={
            **r.base,
            "mrr_per_seed": {str(s): mrr[s] for s in seeds},
            "link_prediction": {a: r.info[a]["link_prediction"] for a in aggs},
            "classification_test": {a: r.info[a]["classification"].get("test") for a in aggs},
            "beta": {a: r.info[a]["beta"] for a in aggs},
        },
    )
    if r.cfg.accuracy_gated:
        claims.paired(ours=ours, baseline=base, seeds=seeds, better="higher", margin=0.1, **kw)
        return
    claims.add(
        status="skipped",
        message=f"gated in --full only (accuracy_gated=False in QUICK, reproduce.py, decided on calibration seeds "
        f"101-105: the per-seed slack spreads more than its mean, so a quick-sized number of seeds cannot decide "
        f"it); "
        f"measured here on seed {seeds[0]}: MRR MM {mrr[seeds[0]]['mm']:.3f}, SM {mrr[seeds[0]]['sm']:.3f}, "
        f"DRUM {mrr[seeds[0]]['sum']:.3f} (rule: min(MM, SM) >= DRUM - 0.1 over paired seeds)",
        ours=ours[0],
        baseline=base[0],
        rule="ours >= baseline - 0.1 (paired over seeds, 95 % t-interval)",
        **kw,
    )


def _train_real(cfg: ReproConfig, config: RunConfig, data) -> dict:
    """DRUM and MMDRUM trained on a real KG the paper's way (``cfg.real_epochs``); beta by validation F1."""
    tcfg = replace(
        _train_config(cfg, config.seed), epochs=cfg.real_epochs, min_epochs=min(5, cfg.real_epochs)
    )
    res = {}
    for agg in ("sum", "mm"):
        m = DRUM(
            data.kg.n_relations,
            rank=cfg.rank,
            steps=cfg.steps,
            aggregation=agg,
            embed_dim=cfg.embed_dim,
            hidden_dim=cfg.hidden_dim,
            seed=33 + config.seed,
        )
        hist = train(m, data, tcfg, show_progress=config.progress)
        beta, cls = select_beta(m, data)
        res[agg] = {
            "model": m,
            "beta": beta,
            "cls": cls,
            "lp": link_prediction(m, data),
            "epochs": hist["epochs_run"],
        }
    return res


def _claim_real_kg(claims: ClaimSet, r: _Run, config: RunConfig, name: str) -> None:
    """A real KG from paperkit's data folder: DRUM and MMDRUM trained the paper's way; filtered MRR/Hits@10 and
    test AUC-PR; the faithful MM program and the path baseline checked against the trained models."""
    from .data import load_real_kg

    cfg = r.cfg
    data = load_real_kg(name, data_dir=config.data_dir, seed=config.seed)
    n = cfg.real_datasets
    datasets = perturbed_datasets(data.eval_kg, n - n // 2, n // 2, 0, seed=config.seed + 7)
    rels = list(data.kg.relations)
    res = _train_real(cfg, config, data)
    mm, beta_mm = res["mm"]["model"], res["mm"]["beta"]
    prog = faithful_rules(mm, beta_mm, relations=rels, max_rules=cfg.max_rules)
    rep = check_faithfulness(mm, prog, datasets)
    dm, beta_d = res["sum"]["model"], res["sum"]["beta"]
    # the path program at a small beta has tens of thousands of rules: check it on the KG itself only
    prep = check_faithfulness(dm, path_rules(dm, beta_d, relations=rels), [data.eval_kg])
    info = {
        a: {
            "beta": v["beta"],
            "epochs": v["epochs"],
            "link_prediction": v["lp"],
            "test": v["cls"].get("test"),
            "degenerate_beta": bool(v["cls"].get("degenerate", False)),
        }
        for a, v in res.items()
    }
    claims.add(
        claim=f"faithful MMDRUM extraction is sound and complete on real {name} ({len(datasets)} datasets)",
        metric="min(precision, recall)",
        ours=_min_pr(rep),
        baseline_name="path-based extraction on DRUM at its beta: recall on the KG",
        baseline=prep.recall,
        rule="ours >= 1.0 and program_complete == 1",
        paper_value=1.0,
        variables={"program_complete": float(prog.complete)},
        details={
            "data": name,
            "entities": data.kg.n_entities,
            "relations": data.kg.n_relations,
            "kb_facts": len(data.kg),
            "rules": len(prog),
            "ours": rep.summary(),
            "path_baseline_on_drum": prep.summary(),
            "models": info,
            "top_rules": prog.format(n=8, weights=True).splitlines(),
        },
    )


def _figure(claims: ClaimSet, r: _Run) -> None:
    """Per-dataset precision and recall of each extraction against its model (one point per dataset)."""
    from iclr24.paperkit.plots import pyplot

    plt = pyplot()
    fig, ax = plt.subplots(1, 2, figsize=(10, 3.6), sharey=True)
    series = {
        "MM faithful": r.reports.get("mm"),
        "SM faithful": r.reports.get("sm"),
        "path (no-norm DRUM)": r.path_report,
        "path (normalised DRUM)": r.reports.get("norm"),
    }
    for label, rep in series.items():
        if rep is None:
            continue
        x = range(len(rep.per_dataset))
        ax[0].plot(x, [d["precision"] for d in rep.per_dataset], marker="o", ms=3, label=label)
        ax[1].plot(x, [d["recall"] for d in rep.per_dataset], marker="o", ms=3, label=label)
    for a, t in zip(ax, ("precision (soundness)", "recall (completeness)")):
        a.set_title(t)
        a.set_xlabel("dataset (0 = test KB, then subsamples, rewirings, random KGs)")
    ax[0].set_ylabel("vs the model's T_M(D)")
    ax[1].legend(fontsize=7)
    fig.tight_layout()
    claims.figure(fig, "faithfulness.png")


def run_config(cfg: ReproConfig, config: RunConfig) -> ClaimSet:
    """The claims for an explicit :class:`ReproConfig` (``run`` picks SMOKE/QUICK/FULL by mode)."""
    claims = ClaimSet(NAME, config)
    r = _setup(cfg, config)
    r.progress = config.progress
    _train_models(r, config)
    claims.fact(
        "datasets checked", value=len(r.datasets), description="test KB + subsamples + rewirings + random KGs"
    )
    for agg, label in (("mm", "MMDRUM"), ("sm", "SMDRUM")):
        with claims.timed(f"faithful {label} extraction"):
            _claim_faithful(claims, r, agg, label)
    with claims.timed("DRUM per-fact explanations"):
        _claim_drum_explanations(claims, r)
    with claims.timed("path rules on no-norm DRUM"):
        _claim_path_incomplete(claims, r)
    with claims.timed("path rules on normalised DRUM"):
        _claim_path_unsound_normalised(claims, r)
    with claims.timed("extraction time"):
        _claim_extraction_time(claims, r)
    with claims.timed("link-prediction accuracy"):
        _claim_accuracy(claims, r, config)
    if r.path_report is not None:
        _figure(claims, r)
    for name in cfg.real_kgs:
        with claims.timed(f"real KG {name}"):
            _claim_real_kg(claims, r, config, name)
    return claims


def run(config: RunConfig) -> ClaimSet:
    """Measure (data, three models trained alike) -> the claims, each timed in its own block."""
    cfg: ReproConfig = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    if config.mode == "full" and os.environ.get("DRUM_RULES_DATA"):
        cfg = replace(cfg, data_dir=os.environ["DRUM_RULES_DATA"])
    return run_config(cfg, config)


PAPER = Paper(
    name=NAME,
    title="Faithful Rule Extraction for Differentiable Rule Learning Models",
    summary="Faithful extraction from DRUM gives rules that are sound and complete for the model; path-based "
    "extraction is not.",
    run=run,
    data=REAL_KGS,
    paper_scale=paper_scale,
)
