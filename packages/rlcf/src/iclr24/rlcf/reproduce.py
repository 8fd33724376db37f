"""The paper's claims, checked at CPU scale on the offline digits demo: ``run(config) -> ClaimSet``.

Claims (rules fixed here, before any run; the same gates in every mode): with the image encoder tuned, RLCF
(CLIP reward of a stronger frozen CLIP) beats zero-shot by >= 5 points and TPT with 3 steps (the official
``tpt-tune.sh``) by >= 5 points of top-1 accuracy on the rotated + noisy test digits, decided by paired seeds
(paperkit's 95 % t-interval of the per-seed difference: holds / fails / inconclusive; quick: seeds 0-2 with 60 test
digits each and shorter CLIP training, about 70 CPU s (QUICK below); full: seeds 0-5 with 300 each). Each seed trains
its own CLIPs, so a pair shares the models, the test digits and the views. TPT with 1 step, distillation from the
same reward model and prompt-only RLCF (the last two in --full only) are measured on the same views and reported
beside, not gated. The precondition (the reward model is >= 20 points better than the policy zero-shot) is a fact.
Calibration used seeds 100-105 only (the lr: seed 100; the quick config: below).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from iclr24.paperkit import ClaimSet, Paper, RunConfig, atomic_write_json
from iclr24.paperkit import torch_threads as _torch_threads

from .experiment import DEMO_METHODS, DemoConfig, run_demo_seed
from .paper_scale import PAPER_SCALE, paper_scale  # noqa: F401 - PAPER_SCALE: the paper's headline run

NAME = "rlcf"


@dataclass(frozen=True)
class ReproConfig:
    demo: DemoConfig = field(default_factory=DemoConfig)
    seeds: tuple[int, ...] = (0, 1, 2)


SMOKE = ReproConfig(
    DemoConfig(n_test=3, policy_steps=3, reward_steps=3, reward_copies=1, n_views=20), seeds=(0,)
)
# --quick (about 70 CPU s in all, of which about 20 s are imports, figures and the report): the recipe of --full with
# shorter CLIP training and fewer digits, and only the methods its claims compare (zero-shot, TPT with 3 steps, RLCF;
# TPT with 1 step comes free, read off TPT's first step); KD and prompt-only RLCF are reported by --full only.
# Calibration (seeds 100-105, disjoint from the evaluated seeds; 2026-12-02, CPU s under load 7-10):
# - 80 + 240 training steps, 60 digits: precondition met on every seed (reward 82-93 %, policy 33-55 %);
#   RLCF - TPT-3 = +20.0 / +11.7 / +11.7 / +8.3 / +6.7 / +6.7 points (above the 5-point margin on all six);
#   RLCF - zero-shot = +5.0 / +15.0 / +6.7 / +5.0 / +5.0 / -5.0 (at the margin). About 11 s of training and 6 s of
#   test-time adaptation per seed; the whole quick run on seeds 100-102 took 68.4 CPU s (both claims inconclusive
#   there: the 3-seed t-interval is +-4.3 standard errors).
# - 100 + 200 steps: RLCF - TPT-3 = +13.3 / +5.0 / +8.3 (seeds 103-105, 60 digits), +26 / +22 / 0 (100-102, 50
#   digits): no better, and one seed without any gain; 150 + 250 or 150 + 300 steps (RLCF - TPT-3 +12 to +22) cost
#   4-6 s more per seed than the budget has.
# With 3 seeds neither claim is likely to be decided in quick (1 of the 20 triples of the six calibration seeds
# gives "holds" for the TPT claim); the effect shows in the per-seed numbers, and --full's 6 seeds x 300 digits
# decide it. Both claims keep their rule and stay gated (paired) in quick.
QUICK_METHODS = ("zero-shot", "tpt", "tpt-3", "rlcf")
QUICK = ReproConfig(
    DemoConfig(n_test=60, policy_steps=80, reward_steps=240, methods=QUICK_METHODS), seeds=(0, 1, 2)
)
FULL = ReproConfig(DemoConfig(n_test=300), seeds=(0, 1, 2, 3, 4, 5))
MARGIN = 5.0  # points: the rule is ours >= baseline + 5 on every claim, in every mode

LABELS = {
    "zero-shot": "zero-shot",
    "tpt": "TPT (1 step)",
    "tpt-3": "TPT (3 steps)",
    "kd": "KD from the reward model",
    "rlcf": "RLCF, image encoder",
    "rlcf-prompt": "RLCF, prompt context",
}


def _mean(xs) -> float:
    return sum(xs) / len(xs)


def _methods(results: list[dict]) -> list[str]:
    return [m for m in DEMO_METHODS if m in results[0]["methods"]]


def _steps_figure(results: list[dict]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(5.5, 3.6))
    for m in _methods(results):
        curves = [r["methods"][m]["accuracy_per_step"] for r in results]
        mean = [_mean(c) for c in zip(*curves)]
        ax.plot(range(len(mean)), mean, marker="o", label=LABELS[m])
    ax.axhline(_mean([r["reward_zero_shot"] for r in results]), ls="--", c="grey", lw=1,
               label="reward model, zero-shot")  # fmt: skip
    ax.set_xlabel("test-time steps per sample")
    ax.set_ylabel("top-1 accuracy (%)")
    ax.set_title(
        f"rotated + noisy digits, {len(results)} seed(s), {results[0]['methods']['rlcf']['n']} digits"
    )
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _bars_figure(results: list[dict]):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    methods = _methods(results)
    fig, ax = plt.subplots(figsize=(5.5, 3.4))
    w = 0.8 / len(results)
    for i, r in enumerate(results):
        ax.bar([j + i * w for j in range(len(methods))],
               [r["methods"][m]["accuracy"] for m in methods], w, label=f"seed {r['seed']}")  # fmt: skip
    ax.set_xticks([j + 0.4 - w / 2 for j in range(len(methods))], [LABELS[m] for m in methods],
                  rotation=20, fontsize=7)  # fmt: skip
    ax.set_ylabel("top-1 accuracy (%)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def _run_seeds(c: ReproConfig, cfg: RunConfig) -> list[dict]:
    """Every seed: its own two CLIPs, then every method of ``c.demo.methods`` on the same test digits and views."""
    from iclr24.paperkit import progress as _progress

    d = c.demo
    per_seed_work = d.policy_steps + d.reward_steps + d.n_test * len(d.methods)
    with _torch_threads(1), _progress(total=per_seed_work * len(c.seeds), desc="rlcf demo",
                                     disable=None if cfg.progress else True) as bar:  # fmt: skip
        return [run_demo_seed(d, s, progress=bar) for s in c.seeds]


def _details(c: ReproConfig, results: list[dict]) -> dict:
    methods = _methods(results)
    acc = {m: round(_mean([r["methods"][m]["accuracy"] for r in results]), 2) for m in methods}
    return {
        "per_seed": {m: [round(r["methods"][m]["accuracy"], 2) for r in results] for m in methods},
        "accuracy_per_step": {m: [round(_mean(v), 2) for v in zip(*[r["methods"][m]["accuracy_per_step"]
                                                                for r in results])] for m in methods},
        "policy_zero_shot": round(_mean([r["policy_zero_shot"] for r in results]), 2),
        "reward_zero_shot": round(_mean([r["reward_zero_shot"] for r in results]), 2),
        **{key: acc[m] for key, m in (("tpt_1_step", "tpt"), ("kd", "kd"), ("rlcf_prompt", "rlcf-prompt"))
           if m in acc},
        "n_test": results[0]["methods"]["rlcf"]["n"],
        "seeds": list(c.seeds),
        "methods": methods,
    }  # fmt: skip


def _facts(claims: ClaimSet, details: dict, seeds: str) -> None:
    pol, rew = details["policy_zero_shot"], details["reward_zero_shot"]
    claims.fact(
        "precondition: reward model zero-shot - policy zero-shot (points, shifted test digits)",
        value=round(rew - pol, 2),
        description=f"must be >= 20 for the set-up to be meaningful: {'met' if rew - pol >= 20 else 'NOT met'}"
        f" (reward {rew:.1f}%, policy {pol:.1f}%)",
    )
    zs = _mean(details["per_seed"]["zero-shot"])
    for m in ("tpt", "kd", "rlcf-prompt"):
        if m in details["per_seed"]:
            claims.fact(f"{LABELS[m]}: top-1 (%) beside zero-shot {zs:.1f} (reported, not gated)",
                        value=round(_mean(details["per_seed"][m]), 2), description=f"same views, seeds {seeds}")  # fmt: skip


def run(cfg: RunConfig) -> ClaimSet:
    c = cfg.pick(smoke=SMOKE, quick=QUICK, full=FULL)
    claims = ClaimSet(NAME, cfg)
    claims.fact("CLIPScore at cos = 0.3 (w = 2.5)", value=0.75, description="Eq. (4) closed form; tested")
    claims.fact("views kept by confidence selection of 64 views, rho = 0.1", value=int(64 * 0.1),
                description="floor(rho N), as the official select_confident_samples; tested")  # fmt: skip
    claims.fact("d L / d logits at logits [0, 0], y = 0, r~ = 1", value="[-0.5, 0.5]",
                description="Eq. (3) closed form (REINFORCE with a baseline); tested")  # fmt: skip
    seeds = ", ".join(map(str, c.seeds))
    with claims.timed(f"digits shift: RLCF vs zero-shot and TPT, seeds {seeds}"):
        results = _run_seeds(c, cfg)
        details = _details(c, results)
        _facts(claims, details, seeds)
        public = [{k: v for k, v in r.items() if k != "config"} for r in results]
        atomic_write_json(cfg.out / "demo_results.json", {"config": asdict(c.demo), "seeds": public})
        arts = [claims.figure(_steps_figure(results), "accuracy_vs_steps.png"),
                claims.figure(_bars_figure(results), "accuracy_per_method.png"),
                claims.artifact(cfg.out / "demo_results.json")]  # fmt: skip
        metric = f"top-1 (%) on {details['n_test']} rotated + noisy digits per seed, paired over {len(c.seeds)} seed(s)"
        per_seed = details["per_seed"]
        for base, name in (("zero-shot", "zero-shot CLIP policy"), ("tpt-3", "TPT (3 steps, same lr)")):
            claims.paired(
                claim=f"RLCF (image encoder, 3 steps) beats {name} by >= {MARGIN:g} points",
                metric=metric,
                ours=per_seed["rlcf"],
                baseline=per_seed[base],
                seeds=list(c.seeds),
                better="higher",
                margin=-MARGIN,
                baseline_name=name,
                details=details,
                artifacts=arts if base == "zero-shot" else [arts[1], arts[2]],
            )
    return claims


PAPER = Paper(
    name=NAME,
    title="Test-Time Adaptation with CLIP Reward for Zero-Shot Generalization in Vision-Language Models",
    summary="episodic TTA of a CLIP policy by REINFORCE with a frozen, stronger CLIP's CLIPScore as the reward",
    run=run,
    paper_scale=paper_scale,
)
