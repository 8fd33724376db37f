"""The ``drum-rules`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from iclr24.paperkit import atomic_write_json
from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import config_from_args
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import resume_arg

from . import bench
from .check import check_faithfulness
from .checkpoint import load_model
from .checkpoint import load_official_checkpoint
from .checkpoint import resolve_data
from .checkpoint import save_model
from .data import perturbed_datasets
from .extract import explain
from .extract import faithful_rules
from .extract import path_rules
from .kg import KGData
from .model import DRUM
from .reproduce import PAPER
from .rules import RuleProgram
from .train import TrainConfig
from .train import link_prediction
from .train import select_beta
from .train import train

app = App("drum-rules", PAPER.title)
app.add_reproduce(lambda: PAPER, device=False)
app.add_bench(bench.run_benchmarks)

_MODEL = arg(
    "--model",
    type=Path,
    default=Path("results/drum-rules/train/model"),
    help="model folder written by train or convert (OUT/model), its run folder OUT, or an older model.pt",
)


def _load(args: argparse.Namespace, data: str | None = None) -> tuple[DRUM, float, KGData]:
    """``(model, beta, dataset)`` of ``--model``: the dataset it was trained on, or ``data`` when given."""
    m, beta, spec = load_model(args.model)
    if beta is None or spec is None:
        raise ValueError(
            f"{args.model} records no beta or data in its provenance.json (saved by DRUM.save_pretrained alone); "
            "save it with iclr24.drum_rules.save_model(folder, model, beta, data_spec)"
        )
    return m, beta, resolve_data(data or spec, seed=args.seed, data_dir=args.data_dir)


@app.command(
    "train",
    "Train DRUM / SMDRUM / MMDRUM on a dataset folder (or 'family[:N]', the synthetic KG), "
    "choose beta by validation F1, save the model folder OUT/model (model.safetensors, config.json, "
    "provenance.json) and OUT/train.json.",
    arg(
        "data",
        help="family[:N] (synthetic), kinships|umls|nations (paperkit's data folder), or a "
        "DRUM/FaithfulRE/train-valid-test dataset folder",
    ),
    field_arg(DRUM, "aggregation", choices=["sum", "sm", "mm"], help="DRUM, SMDRUM or MMDRUM"),
    field_arg(DRUM, "rank", type=positive_int, help="rank L: rule bodies per head"),
    field_arg(DRUM, "steps", type=positive_int, help="T (the reference's num_step - 1)"),
    field_arg(DRUM, "embed_dim", type=positive_int, help="relation embedding size"),
    field_arg(DRUM, "hidden_dim", type=positive_int, help="BiLSTM hidden size"),
    field_arg(TrainConfig, "epochs", type=positive_int, help="training epochs (at most)"),
    field_arg(TrainConfig, "batch_size", type=positive_int, help="queries per batch"),
    field_arg(TrainConfig, "lr", type=positive_float, help="Adam learning rate"),
    field_arg(TrainConfig, "loss", choices=["ce", "nll"], help="cross-entropy (the reference) or -log score"),
    field_arg(
        TrainConfig,
        "normalize",
        "--train-norm",
        action=argparse.BooleanOptionalAction,
        help="L1-normalise during training (the reference); --no-train-norm trains in the analysed semantics",
    ),
    data=True,
    log_dir=True,
    resume=resume_arg(written="after every epoch"),
)
def _train(args: argparse.Namespace) -> int:
    data = resolve_data(args.data, seed=args.seed, data_dir=args.data_dir)
    m = DRUM(
        data.kg.n_relations,
        rank=args.rank,
        steps=args.steps,
        aggregation=args.aggregation,
        embed_dim=args.embed_dim,
        hidden_dim=args.hidden_dim,
        seed=33 + args.seed,
    )
    out = args.out
    cpu0 = time.process_time()
    hist = train(
        m,
        data,
        config_from_args(TrainConfig, args, seed=33 + args.seed),
        show_progress=not args.quiet,
        log_dir=args.log_dir,
        checkpoint=out / "train_state.pt",
        resume=args.resume,
    )
    cpu = time.process_time() - cpu0
    beta, cls = select_beta(m, data)
    lp = link_prediction(m, data)
    save_model(
        out / "model",
        m,
        beta,
        args.data,
        provenance={
            "command": app.command_line(args),
            "seed": args.seed,
            "steps": hist["steps"],
            "epochs": hist["epochs_run"],
            "cpu_seconds": round(cpu, 2),
            "losses": {"train": hist["train_loss"], "valid": hist["valid_loss"]},
            "test_mrr": lp["mrr"],
        },
    )
    atomic_write_json(out / "train.json", {"history": hist, "link_prediction": lp, **cls})
    print(f"{data!r}\ntrained {args.aggregation} ({hist['epochs_run']} epochs), beta = {beta:.6g}")
    print(
        f"test MRR {lp['mrr']:.4f}  Hits@1 {lp['hits@1']:.4f}  Hits@10 {lp['hits@10']:.4f} (ties broken at random)"
    )
    if "test" in cls:
        t = cls["test"]
        print(
            f"test F1 {t['f1']:.4f} (precision {t['precision']:.4f}, recall {t['recall']:.4f}), "
            f"AUC-PR {t['auc_pr']:.4f} (official grid), {t['auc_pr_all_thresholds']:.4f} (all thresholds)"
        )
    print(f"saved {out / 'model'}")
    return 0


@app.command(
    "eval",
    "Link prediction (filtered MRR/Hits) and classification at beta of a trained model.",
    _MODEL,
    arg("--data", default=None, help="dataset (default: the one the model was trained on)"),
    arg(
        "--ties",
        choices=["random", "mean", "optimistic", "pessimistic"],
        default="random",
        help="how score ties with the answer rank (DRUM's rand_break / expected / its default / adv_rank)",
    ),
    out=False,
    data=True,
)
def _eval(args: argparse.Namespace) -> int:
    m, beta, data = _load(args, args.data)
    lp = link_prediction(m, data, ties=args.ties, seed=args.seed)
    _, cls = select_beta(m, data) if data.valid_labelled is not None else (beta, {})
    print(
        json.dumps(
            {"beta": beta, "link_prediction": lp, **{k: v for k, v in cls.items() if k != "beta"}}, indent=1
        )
    )
    return 0


@app.command(
    "extract",
    "Extract rules: --variant mm|sm|drum (faithful, must match the model) or path (baseline).",
    _MODEL,
    arg(
        "--variant",
        choices=["mm", "sm", "drum", "path"],
        default=None,
        help="default: the model's own faithful variant",
    ),
    arg("--beta", type=positive_float, default=None, help="threshold (default: the model's beta)"),
    field_arg(faithful_rules, "max_rules", type=positive_int, help="rule budget per head (DRUM/SM)"),
    arg("--top", type=positive_int, default=20, help="rules to print"),
    data=True,
    adds_to=("train", "convert"),  # the rules go beside the model: --model runs/mm/model --out runs/mm
)
def _extract(args: argparse.Namespace) -> int:
    m, beta, data = _load(args)
    beta = args.beta or beta
    rel = list(data.kg.relations)
    if args.variant == "path":
        prog = path_rules(m, beta, relations=rel)
    else:
        prog = faithful_rules(
            m,
            beta,
            variant=args.variant,
            relations=rel,
            max_rules=args.max_rules,
            show_progress=not args.quiet,
        )
    out = args.out
    prog.save(out / "rules.json")
    prog.save(out / "rules.dl")
    print(
        f"{len(prog)} {prog.variant} rules in {prog.seconds:.3f} s, beta = {beta:.6g}, "
        f"{'complete' if prog.complete else 'INCOMPLETE (not faithful)'}"
        + (f": {prog.note}" if prog.note else "")
    )
    print(prog.format(n=args.top))
    print(f"wrote {out / 'rules.json'} and {out / 'rules.dl'}")
    return 0


@app.command(
    "check",
    "Soundness/completeness of extracted rules against the model on the test KB and perturbed "
    "copies (precision/recall of consequences).",
    _MODEL,
    arg(
        "--rules",
        type=Path,
        default=Path("results/drum-rules/extract/rules.json"),
        help="rules written by extract",
    ),
    arg("--datasets", type=positive_int, default=30, help="how many datasets (1 = the test KB only)"),
    out=False,
    data=True,
)
def _check(args: argparse.Namespace) -> int:
    m, beta, data = _load(args)
    prog = RuleProgram.load(args.rules)
    n = args.datasets - 1
    ds = perturbed_datasets(data.eval_kg, n // 3 + (n % 3 > 0), n // 3 + (n % 3 > 1), n // 3, seed=args.seed)
    model = m.copy_with(normalize=False) if prog.variant != "path" else m
    rep = check_faithfulness(model, prog, ds)
    for d in rep.per_dataset:
        print(
            f"{d['dataset']:>16}: model {d['n_model']:6d}  rules {d['n_rules']:6d}  precision {d['precision']:.4f}"
            f"  recall {d['recall']:.4f}"
        )
    print(rep)
    print("FAITHFUL" if rep.faithful else "NOT faithful")
    return 0


@app.command(
    "explain",
    "Explain one prediction, e.g. 'uncle(f0_p2,f0_p7)': the walks and the rule that fires.",
    arg("fact", help="relation(head,tail) with the dataset's names"),
    _MODEL,
    arg("--examples", type=positive_int, default=3, help="example walks to print per path type"),
    out=False,
    data=True,
)
def _explain(args: argparse.Namespace) -> int:
    m, beta, data = _load(args)
    e = explain(m.copy_with(normalize=False), args.fact, data.eval_kg, beta)
    print(e.format(data.eval_kg, examples=args.examples))
    return 0


@app.command(
    "convert",
    "Load an official FaithfulRE checkpoint (e.g. model/family-drum-r3s3.pt), choose beta by validation F1 on "
    "DATA and save it as the model folder OUT/model for eval/extract/check/explain.",
    arg("official", type=Path, help="the official state_dict file (.pt)"),
    arg("data", help="the dataset it was trained on (a folder, kinships|umls|nations, or family[:N])"),
    field_arg(
        load_official_checkpoint, "aggregation", choices=["sum", "sm", "mm"], help="drum, smdrum or mmdrum"
    ),
    field_arg(
        load_official_checkpoint,
        "steps",
        type=positive_int,
        help="T = the official num_step - 1 ('s3' in the name -> 2)",
    ),
    data=True,
)
def _convert(args: argparse.Namespace) -> int:
    data = resolve_data(args.data, seed=args.seed, data_dir=args.data_dir)
    m = load_official_checkpoint(args.official, steps=args.steps, aggregation=args.aggregation)
    m._check_kg(data.kg)
    m.head_relations = sorted(set(data.train[:, 1].tolist()))
    beta, cls = select_beta(m, data)
    save_model(
        args.out / "model",
        m,
        beta,
        args.data,
        provenance={
            "command": app.command_line(args),
            "converted_from": str(args.official),
            "valid": cls["valid"],
        },
    )
    print(f"{data!r}\nloaded {args.official} (rank {m.rank}, T {m.steps}), beta = {beta:.6g}")
    print(f"saved {args.out / 'model'}")
    return 0


main = app.main
