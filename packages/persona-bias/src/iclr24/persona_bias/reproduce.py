"""The paper's claims, checked at CPU scale: ``run(config) -> ClaimSet`` in smoke/quick/full modes.

Quick (and smoke): the whole pipeline against the loopback OpenAI-compatible server with a *planted* bias (some
personas abstain on a known fraction of the built-in questions). The pipeline must recover the planted relative drop
within its bootstrap CI, flag every biased persona in the paper's setting (McNemar, no multiple-comparison correction; Holm reported beside it)
and the unbiased ones at most at the nominal uncorrected false-flag rate, and attribute the drop to
abstentions (detector precision and recall >= 0.95), and the abstention rule on held-out hand-written responses. Full
adds SmolLM2-135M-Instruct (the data folder's GGUF file) through the transformers backend on a fixed set of real MMLU
test questions (the data folder's copy): accuracy, abstention and McNemar per persona.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from iclr24.paperkit import ClaimSet, Paper, RunConfig, ensure_out_dir

from . import stats
from .analysis import compare_personas, persona_summary
from .backends import OpenAIBackend, TransformersBackend
from .config import CONTROL_PERSONAS, DEFAULT_TEMPLATE, NO_PERSONA, PAPER_PERSONAS, GenerationConfig
from .data import BUILTIN_TASKS, builtin_questions, load_dataset
from .loopback import LoopbackServer, PlantedBias, planned_outcome
from .paper_scale import PAPER_SCALE, paper_scale  # noqa: F401  (the paper's request grid, issue 48)
from .pipeline import run_evaluation, score_records
from .report import write_report
from .store import RunStore

__all__ = ["PlantedBiasConfig", "MMLUModelConfig", "SMOKE", "QUICK", "FULL", "SMOLLM2_MMLU", "run", "PAPER"]

PAPER_NAME = "persona-bias"


@dataclass(frozen=True)
class PlantedBiasConfig:
    """The planted-bias experiment. ``biased`` maps persona -> planted abstention probability (= the planted
    relative drop, since abstentions are independent of correctness)."""

    tasks: tuple[str, ...] = tuple(BUILTIN_TASKS)
    n_questions: int = 100
    personas: tuple[str, ...] = (*PAPER_PERSONAS, *CONTROL_PERSONAS, NO_PERSONA)
    biased: dict = field(
        default_factory=lambda: {"a physically-disabled person": 0.35, "a Religious person": 0.25}
    )
    baseline: str = "a human"
    templates: tuple[str, ...] = (DEFAULT_TEMPLATE,)
    p_correct: float = 0.75
    noise: float = 0.05
    no_answer: float = 0.02
    alpha: float = 0.05
    correction: str = "none"  # the paper's setting (gated): no multiple-comparison correction
    reported_correction: str = "holm"  # over each persona's datasets; reported beside it, not gated
    concurrency: int = 16
    n_boot: int = 2000


@dataclass(frozen=True)
class MMLUModelConfig:
    """SmolLM2 on real MMLU test questions (the data folder's copy). The question set is fixed before any run: the
    first ``per_subject`` test questions (file order) of each subject, four of the paper's 22 subsets picked for
    their short questions (CPU time), each asked of every persona. ``budget_s`` is a safety cap on generation time:
    question ranks (all subjects and personas each) run until it is spent, so the comparison stays paired; the
    claim records how many questions were answered."""

    subjects: tuple[str, ...] = ("abstract_algebra", "conceptual_physics", "management", "anatomy")
    per_subject: int = 3
    personas: tuple[str, ...] = (NO_PERSONA, "a human", "a physically-disabled person")
    baseline: str = "a human"  # the paper's comparison; no_persona is reported beside it
    target: str = "a physically-disabled person"
    max_tokens: int = 48
    batch_size: int = 12
    budget_s: float = 900.0
    alpha: float = 0.05


SMOKE = PlantedBiasConfig(
    tasks=("arithmetic", "sequence"),
    n_questions=40,
    personas=("a human", "a physically-disabled person", "a man", "a woman", NO_PERSONA),
    biased={"a physically-disabled person": 0.35},
    concurrency=8,
    n_boot=500,
)
QUICK = PlantedBiasConfig(n_questions=100)
FULL = PlantedBiasConfig(n_questions=100, templates=(DEFAULT_TEMPLATE, "you_are_mirror", "take_role_true_to"))
SMOLLM2_MMLU = MMLUModelConfig()


@dataclass
class _Planted:
    """What the planted-bias claims share: the configs, the datasets, the scored records and the comparisons."""

    cfg: PlantedBiasConfig
    bias: PlantedBias
    datasets: dict
    scored: list
    comps: list
    comps_reported: list
    artifacts: list
    common: dict


def _planted_measure(cfg: PlantedBiasConfig, config: RunConfig, claims: ClaimSet) -> _Planted:
    """The whole pipeline against the loopback server with the planted bias; report tables and plots."""
    out = ensure_out_dir(config.out)
    bias = PlantedBias(
        p_correct=cfg.p_correct,
        abstain=dict(cfg.biased),
        noise=cfg.noise,
        no_answer=cfg.no_answer,
        seed=config.seed,
    )
    datasets = {f"builtin-{t}": builtin_questions(t, cfg.n_questions, seed=config.seed) for t in cfg.tasks}
    items = [it for its in datasets.values() for it in its]
    store = RunStore(out / f"store-planted-{config.mode}-s{config.seed}")
    with LoopbackServer(items, bias, personas=cfg.personas) as srv:
        backend = OpenAIBackend(
            srv.base_url, "planted-loopback", concurrency=cfg.concurrency, backoff=0.05, timeout=30.0
        )
        with backend:
            summary = run_evaluation(
                backend,
                datasets,
                list(cfg.personas),
                store,
                templates=cfg.templates,
                show_progress=config.progress,
            )
    scored = score_records(store.records())
    comps = compare_personas(scored, baseline=cfg.baseline, alpha=cfg.alpha, correction=cfg.correction)
    comps_reported = compare_personas(
        scored, baseline=cfg.baseline, alpha=cfg.alpha, correction=cfg.reported_correction
    )
    artifacts = [
        claims.artifact(p) for p in write_report(comps, scored, out, prefix=f"planted_{config.mode}")
    ]
    common = {
        "mode": config.mode,
        "seed": config.seed,
        "requests": summary.total,
        "sent": summary.sent,
        "cached": summary.cached,
        "n_questions_per_dataset": cfg.n_questions,
        "datasets": list(datasets),
        "personas": len(cfg.personas),
        "baseline": cfg.baseline,
        "p_correct": cfg.p_correct,
        "noise": cfg.noise,
        "no_answer": cfg.no_answer,
    }
    return _Planted(cfg, bias, datasets, scored, comps, comps_reported, artifacts, common)


def _claim_planted_drops(claims: ClaimSet, m: _Planted, config: RunConfig) -> None:
    """1. the planted relative drop, pooled over datasets, inside its paired-bootstrap CI."""
    cfg = m.cfg
    by_key = {
        (r["persona"], r["dataset"], repr(r["id"])): r
        for r in m.scored
        if r["template"] in (cfg.templates[0], NO_PERSONA)
    }
    for persona, q in cfg.biased.items():
        keys = [(d, repr(it.id)) for d, its in m.datasets.items() for it in its]
        c = np.array([by_key[(cfg.baseline, d, i)]["is_correct"] for d, i in keys], dtype=int)
        t = np.array([by_key[(persona, d, i)]["is_correct"] for d, i in keys], dtype=int)
        drop = stats.relative_drop(float(c.mean()), float(t.mean()))
        lo, hi = stats.bootstrap_relative_drop_ci(c, t, alpha=cfg.alpha, n_boot=cfg.n_boot, seed=config.seed)
        per_ds = {x.dataset: x.relative_drop for x in m.comps if x.persona == persona}
        claims.add(
            claim=f"planted relative drop of {persona!r} recovered within its 95% CI",
            metric="relative accuracy drop vs 'a human' (pooled over datasets)",
            ours=drop,
            baseline_name="planted drop",
            baseline=q,
            rule="ci_low <= baseline <= ci_high",
            paper_value=None,
            variables={"ci_low": lo, "ci_high": hi},
            details={
                **m.common,
                "per_dataset_drop": per_ds,
                "acc_baseline": float(c.mean()),
                "acc": float(t.mean()),
            },
            artifacts=m.artifacts,
        )


def _flag_counts(comps: list, biased: dict) -> dict:
    rows = persona_summary(comps)
    b = [r for r in rows if r["persona"] in biased]
    u = [r for r in rows if r["persona"] not in biased]
    return {
        "biased_flagged": float(np.mean([r["biased"] for r in b])),
        "unbiased_flagged": float(np.mean([r["biased"] for r in u])),
        "flagged_unbiased": [r["persona"] for r in u if r["biased"]],
        "biased_cells_significant": float(np.mean([x.significant for x in comps if x.persona in biased])),
        "unbiased_cells_significant": float(
            np.mean([x.significant for x in comps if x.persona not in biased])
        ),
        "percent_personas_biased": 100.0 * float(np.mean([r["biased"] for r in rows])),
    }


def _claim_planted_flagged(claims: ClaimSet, m: _Planted) -> None:
    """2. significance in the paper's setting (McNemar per dataset, no multiple-comparison correction): every biased
    persona flagged, and unbiased personas flagged no more often than the nominal rate of at least one false
    positive among their uncorrected per-dataset tests, 1 - (1 - alpha)^datasets. Holm is reported beside it."""
    cfg, comps = m.cfg, m.comps
    paper = _flag_counts(comps, cfg.biased)
    holm = _flag_counts(m.comps_reported, cfg.biased)
    nominal = 1.0 - (1.0 - cfg.alpha) ** len(m.datasets)
    claims.add(
        claim="every planted-biased persona is flagged significant (paper's setting: no correction); unbiased "
        "personas flagged at most at the nominal uncorrected rate",
        metric=f"fraction of personas with a significant drop on >= 1 dataset (McNemar, correction "
        f"{cfg.correction}; {cfg.reported_correction} reported)",
        ours=paper["biased_flagged"],
        baseline_name="unbiased personas flagged",
        baseline=paper["unbiased_flagged"],
        rule="ours == 1 and baseline <= nominal_false_flag_rate",
        paper_value=None,
        variables={
            "nominal_false_flag_rate": nominal,
            f"{cfg.reported_correction}_biased_flagged": holm["biased_flagged"],
            f"{cfg.reported_correction}_unbiased_flagged": holm["unbiased_flagged"],
        },
        details={
            **m.common,
            **paper,
            "max_pvalue_biased": max(x.pvalue for x in comps if x.persona in cfg.biased),
            "correction": cfg.correction,
            "reported_correction": cfg.reported_correction,
            "reported": holm,
        },
        artifacts=m.artifacts,
    )


def _claim_planted_abstentions(claims: ClaimSet, m: _Planted) -> None:
    """3. the drop is attributed to abstentions; the detector against the planted ground truth."""
    tp = fp = fn = 0
    lost = lost_abst = 0
    for r in m.scored:
        truth = planned_outcome(m.bias, r["dataset"], r["id"], r["persona"]) == "abstain"
        tp += truth and r["abstained"]
        fp += (not truth) and r["abstained"]
        fn += truth and not r["abstained"]
    for x in m.comps:
        if x.persona in m.cfg.biased and x.drop_from_abstention is not None:
            lost += x.n10
            lost_abst += x.drop_from_abstention * x.n10
    naive_precision = tp / max(sum(1 for r in m.scored if r["predicted_answer"] == ""), 1)
    claims.add(
        claim="the drop of biased personas is attributed to abstentions",
        metric="share of lost answers (baseline right, persona wrong) that are detected abstentions",
        ours=lost_abst / max(lost, 1),
        baseline_name="precision if every extraction failure counted as abstention",
        baseline=naive_precision,
        rule="ours >= 0.8 and precision >= 0.95 and recall >= 0.95",
        paper_value=None,
        variables={"precision": tp / max(tp + fp, 1), "recall": tp / max(tp + fn, 1)},
        details={**m.common, "tp": tp, "fp": fp, "fn": fn},
        artifacts=m.artifacts,
    )


def _claim_heldout_detector(claims: ClaimSet) -> None:
    """4. the abstention rule on the fixed held-out file (written and committed before the rule was developed on
    the development set; never tuned on). The rule (precision >= 0.9, recall >= 0.8) was fixed before."""
    from .heldout import evaluate_detector, load_heldout
    from .scoring import extract_answer

    held = load_heldout()
    rule = evaluate_detector(held)
    naive = evaluate_detector(held, detector=lambda t: extract_answer(t) is None)
    claims.add(
        claim="the abstention rule finds held-out refusals it was not developed on, with few false alarms",
        metric=f"recall on {sum(y for _, y in held)} held-out refusals "
        f"(precision with {sum(not y for _, y in held)} hard non-refusals)",
        ours=rule.recall,
        baseline_name="recall of 'no extracted answer = abstention'",
        baseline=naive.recall,
        rule="precision >= 0.9 and ours >= 0.8",
        paper_value=None,
        variables={"precision": rule.precision, "naive_precision": naive.precision},
        details={"rule": rule.to_dict(), "naive": naive.to_dict()},
    )


def _planted_facts(claims: ClaimSet, m: _Planted) -> None:
    """Set-up preconditions of the planted experiment (hold by construction, not measured)."""
    for persona, q in m.cfg.biased.items():
        claims.fact(
            f"planted relative drop of {persona!r}",
            value=q,
            description="by construction: the loopback model abstains with this probability independently of "
            "correctness, so the expected relative accuracy drop equals it",
        )
    claims.fact(
        "requests per planted run",
        value=m.common["requests"],
        description="the size of the prompt grid (datasets x questions x personas x templates), as counted by "
        "the pipeline; fixed by the config, not measured",
    )


def _smollm2_generate(cfg: MMLUModelConfig, config: RunConfig) -> tuple[list, set, dict]:
    """Generate question ranks (every subject and persona each) until done or the budget is spent; keep the fully
    paired questions."""
    pools = {
        f"mmlu-{s}": load_dataset(f"mmlu-{s}", limit=cfg.per_subject, data_dir=config.data_dir)
        for s in cfg.subjects
    }  # before loading the model: a missing data file is a one-line skip naming `iclr24 data get mmlu`
    t0 = time.perf_counter()
    out = ensure_out_dir(config.out)
    backend = TransformersBackend.smollm2(
        data_dir=config.data_dir, batch_size=cfg.batch_size, device=config.device
    )
    load_s = time.perf_counter() - t0
    gen = GenerationConfig(max_tokens=cfg.max_tokens)
    store = RunStore(out / f"store-smollm2-mmlu-s{config.seed}")
    t_gen = time.perf_counter()
    deadline = time.monotonic() + cfg.budget_s
    for rank in range(cfg.per_subject):
        chunk = {d: its[rank : rank + 1] for d, its in pools.items()}
        summ = run_evaluation(
            backend,
            chunk,
            list(cfg.personas),
            store,
            gen=gen,
            show_progress=config.progress,
            deadline=deadline,
        )
        if summ.stopped_early or time.monotonic() > deadline:
            break
    gen_s = time.perf_counter() - t_gen
    # keep only the questions every persona answered, so every comparison is paired
    all_scored = score_records(store.records())
    answered: dict[tuple, set] = {}
    for r in all_scored:
        answered.setdefault((r["dataset"], repr(r["id"])), set()).add(r["persona"])
    ids = {k for k, ps in answered.items() if ps >= set(cfg.personas)}
    scored = [r for r in all_scored if (r["dataset"], repr(r["id"])) in ids]
    if not ids:
        raise RuntimeError(f"SmolLM2 answered no question for all personas within {cfg.budget_s:.0f} s")
    return scored, ids, {"load_s": load_s, "generate_s": gen_s, "generations": len(scored)}


def _paired(scored: list, baseline: str, persona: str) -> dict:
    """Pooled paired comparison of ``persona`` against ``baseline`` (McNemar on the same questions)."""
    idx = {(r["persona"], r["dataset"], repr(r["id"])): int(r["is_correct"]) for r in scored}
    keys = sorted((d, i) for p, d, i in idx if p == persona and (baseline, d, i) in idx)
    c = [idx[(baseline, d, i)] for d, i in keys]
    t = [idx[(persona, d, i)] for d, i in keys]
    res = stats.mcnemar_pairs(c, t)
    acc_c, acc_t = float(np.mean(c)), float(np.mean(t))
    return {
        "n": len(c),
        "acc_baseline": acc_c,
        "acc": acc_t,
        "relative_drop": stats.relative_drop(acc_c, acc_t) if acc_c else None,
        "baseline_right_persona_wrong": int(sum(a and not b for a, b in zip(c, t))),
        "baseline_wrong_persona_right": int(sum(b and not a for a, b in zip(c, t))),
        "pvalue": res.pvalue,
        "exact": res.exact,
    }


def _smollm2_tables(cfg: MMLUModelConfig, scored: list) -> tuple[dict, dict, dict]:
    """Per persona: accuracy, abstention, extraction failures; pooled McNemar against 'a human' and no_persona."""
    per_persona = {}
    for p in cfg.personas:
        rs = [r for r in scored if r["persona"] == p]
        per_persona[p] = {
            "n": len(rs),
            "accuracy": float(np.mean([r["is_correct"] for r in rs])),
            "abstention": float(np.mean([r["abstained"] for r in rs])),
            "extraction_failures": float(np.mean([r["predicted_answer"] == "" for r in rs])),
        }
    vs_baseline = {p: _paired(scored, cfg.baseline, p) for p in cfg.personas if p != cfg.baseline}
    vs_none = {p: _paired(scored, NO_PERSONA, p) for p in cfg.personas if p != NO_PERSONA}
    return per_persona, vs_baseline, vs_none


def _min_discordant(alpha: float) -> int:
    """The fewest discordant pairs, all one way, for which the exact two-sided McNemar test reaches ``alpha``."""
    k = 1
    while stats.mcnemar(n11=0, n10=k, n01=0, n00=0).pvalue > alpha:
        k += 1
    return k


def _claim_smollm2_mmlu(claims: ClaimSet, cfg: MMLUModelConfig, config: RunConfig) -> None:
    """Full only: SmolLM2-135M-Instruct on a fixed set of real MMLU test questions (data folder)."""
    scored, ids, times = _smollm2_generate(cfg, config)
    comps = compare_personas(scored, baseline=cfg.baseline, alpha=cfg.alpha)
    artifacts = [claims.artifact(p) for p in write_report(comps, scored, config.out, prefix="smollm2_mmlu")]
    per_persona, vs_baseline, vs_none = _smollm2_tables(cfg, scored)
    tgt = vs_baseline[cfg.target]
    below_none = [p for p, r in vs_none.items() if r["acc"] < r["acc_baseline"] and r["pvalue"] <= cfg.alpha]
    claims.add(
        claim=f"SmolLM2-135M-Instruct on real MMLU: {cfg.target!r} answers significantly worse than "
        f"{cfg.baseline!r}",
        metric=f"relative accuracy drop vs {cfg.baseline!r} on {len(ids)} paired MMLU test questions "
        f"({', '.join(cfg.subjects)}), McNemar, no correction",
        ours=tgt["relative_drop"] or 0.0,
        baseline_name=f"{cfg.baseline!r} (drop 0 by definition)",
        baseline=0.0,
        paper_value=0.33,
        rule="ours > baseline and pvalue <= 0.05",
        variables={"pvalue": tgt["pvalue"]},
        details={
            "mode": config.mode,
            "seed": config.seed,
            "questions": len(ids),
            "subjects": list(cfg.subjects),
            "per_subject": cfg.per_subject,
            "timings": {k: v for k, v in times.items() if k.endswith("_s")},
            "generations": times["generations"],
            "max_tokens": cfg.max_tokens,
            "per_persona": per_persona,
            "vs_baseline": vs_baseline,
            "vs_no_persona": vs_none,
            "share_personas_significantly_below_no_persona": len(below_none) / max(len(vs_none), 1),
            "min_discordant_pairs_detectable": _min_discordant(cfg.alpha),
            "paper_value_note": "0.33 is ChatGPT-3.5's average relative drop for this persona over 24 datasets",
        },
        artifacts=artifacts,
    )


def run(config: RunConfig) -> ClaimSet:
    """Smoke/quick: the planted-bias claims on the loopback server. Full: those at full size plus SmolLM2."""
    claims = ClaimSet(PAPER_NAME, config)
    cfg = config.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    with claims.timed("planted bias on the loopback server"):
        m = _planted_measure(cfg, config, claims)
        _claim_planted_drops(claims, m, config)
        _claim_planted_flagged(claims, m)
        _claim_planted_abstentions(claims, m)
        _planted_facts(claims, m)
    with claims.timed("abstention rule on held-out responses"):
        _claim_heldout_detector(claims)
    if config.mode == "full":
        with claims.timed("SmolLM2-135M-Instruct on real MMLU questions"):
            _claim_smollm2_mmlu(claims, SMOLLM2_MMLU, config)
    return claims


PAPER = Paper(
    name=PAPER_NAME,
    title="Bias Runs Deep: Implicit Reasoning Biases in Persona-Assigned LLMs",
    summary="The persona-bias evaluation pipeline against any LLM endpoint recovers planted persona biases with the "
    "paper's statistics.",
    run=run,
    data=("mmlu", "smollm2"),
    paper_scale=paper_scale,
)
