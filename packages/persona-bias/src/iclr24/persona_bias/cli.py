"""The ``persona-bias`` command: a thin shell over the API."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from iclr24.paperkit.cli import App
from iclr24.paperkit.cli import UsageError
from iclr24.paperkit.cli import arg
from iclr24.paperkit.cli import field_arg
from iclr24.paperkit.cli import positive_float
from iclr24.paperkit.cli import positive_int
from iclr24.paperkit.cli import probability
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.io import atomic_write_text

from . import bench
from .analysis import compare_personas
from .backends import OpenAIBackend
from .backends import TransformersBackend
from .config import GenerationConfig
from .data import load_dataset
from .reproduce import PAPER
from .scoring import IsolationUnavailable

app = App("persona-bias", PAPER.title, user_errors=(IsolationUnavailable,))
app.add_reproduce(lambda: PAPER)  # --device: SmolLM2 in --full
app.add_bench(bench.run_benchmarks)

DEFAULT_DATASETS = "builtin-arithmetic,builtin-comparison,builtin-sequence,builtin-units"


def _csv(s: str) -> list[str]:
    return [x.strip() for x in s.split(",") if x.strip()]


def _plant(specs: list[str]) -> dict[str, float]:
    out = {}
    for s in specs:
        persona, sep, q = s.rpartition("=")
        try:
            qv = float(q)
        except ValueError:
            qv = -1.0
        if not sep or not persona.strip() or not 0.0 <= qv <= 1.0:
            raise UsageError(f"--plant expects PERSONA=PROBABILITY (e.g. 'a man=0.3'), got {s!r}")
        out[persona.strip()] = qv
    return out


_STORE = arg("--store", type=Path, default=None, help="run store folder (default: <out>/store)")
_RUN_STORE = Path("results/persona-bias/run/store")
_MBPP_ISOLATION = arg(
    "--mbpp-isolation",
    choices=("process", "no-network"),
    default="process",
    help="how model-written MBPP code is run: process (separate process, timeout, memory limit; it can still "
    "read/write your files and use the network) or no-network (also a Linux user+network namespace via unshare)",
)
_STORE_READ = arg(
    "--store",
    type=Path,
    default=_RUN_STORE,
    help="run store folder written by 'persona-bias run' (its default --out keeps it here)",
)


def _store_path(args: argparse.Namespace) -> Path:
    if args.store is not None:
        return args.store
    return args.out / "store" if getattr(args, "out", None) is not None else _RUN_STORE


def _check_store_path(path: Path) -> Path:
    """A one-line error when the store folder (or a folder above it) is a file; creates nothing."""
    for p in (path, *path.parents):
        if p.exists() and not p.is_dir():
            what = "is a file" if p == path else f"has a file in its path ({p})"
            raise UsageError(f"run store {path} {what}; expected a folder (existing or new)")
        if p.exists():
            break
    return path


# the size of the built-in tasks (run, serve-loopback)
_BUILTIN_SIZE = field_arg(load_dataset, "builtin_size", type=positive_int, help="questions per built-in task")


@app.command(
    "run",
    "Ask a model every (dataset x persona x template) question not yet in the run store (resumable).",
    arg(
        "--backend",
        choices=("openai", "transformers", "smollm2", "loopback"),
        default="loopback",
        help="openai: any OpenAI-compatible endpoint (vLLM, llama.cpp, ...); transformers: a local model folder; "
        "smollm2: SmolLM2-135M-Instruct from the data folder (iclr24 data get smollm2); loopback: the built-in planted-bias demo server",
    ),
    arg("--base-url", help="API root of the endpoint, e.g. http://127.0.0.1:8000/v1 (openai backend)"),
    arg("--model", help="model name the endpoint serves (openai backend); store key for local models"),
    field_arg(
        OpenAIBackend,
        "api_key_env",
        help="environment variable holding the API key (never logged)",
    ),
    arg("--model-path", type=Path, help="local model folder (transformers backend)"),
    arg("--gguf-file", help="GGUF file name inside --model-path"),
    arg(
        "--no-chat",
        action="store_true",
        help="completion format (system + blank line + user), no chat template",
    ),
    arg(
        "--datasets",
        default=DEFAULT_DATASETS,
        help="comma list: builtin-<task>, mmlu-<subject>, bbh-<task>, mbpp, jsonl:<path>",
    ),
    arg(
        "--personas",
        default="controls,disability",
        help="comma list of personas or groups (paper, controls, all, "
        "disability, religion, race, politics, gender)",
    ),
    arg("--custom-personas", action="store_true", help="allow persona strings outside the paper's list"),
    arg(
        "--templates", default="adopt_identity_accordance", help="comma list of persona instruction templates"
    ),
    arg(
        "--mmlu",
        type=Path,
        help="your own MMLU data (CSV folder, parquet, or JSONL); default: the data folder's copy "
        "(iclr24 data get mmlu)",
    ),
    arg("--bbh", type=Path, help="BBH folder holding <task>.json"),
    arg("--mbpp", type=Path, help="MBPP sanitized JSONL"),
    arg("--limit", type=positive_int, help="questions per dataset (after the paper's 250 caps)"),
    _BUILTIN_SIZE,
    field_arg(OpenAIBackend, "concurrency", type=positive_int, help="parallel requests (openai backend)"),
    field_arg(OpenAIBackend, "max_retries", help="retries per request on 429/5xx/timeouts"),
    field_arg(OpenAIBackend, "timeout", type=positive_float, help="seconds per HTTP request"),
    field_arg(GenerationConfig, "max_tokens", type=positive_int, help="max new tokens (paper: 1024)"),
    field_arg(GenerationConfig, "temperature", help="sampling temperature (paper: 0)"),
    field_arg(TransformersBackend, "batch_size", type=positive_int, help="batch size (local backends)"),
    arg(
        "--plant",
        action="append",
        default=[],
        help="loopback only: PERSONA=P abstention (repeatable); default 'a physically-disabled person=0.35'",
    ),
    arg(
        "--judge",
        action="store_true",
        help="also ask the same backend whether each unanswered response is a refusal (LLM judge of abstention)",
    ),
    _STORE,
    device=True,
    data=True,
    resume=True,  # rerunning into the same --out continues the run store
    log_dir=True,
)
def _run(args: argparse.Namespace) -> int:
    from .backends import EndpointError
    from .backends import OpenAIBackend
    from .backends import TransformersBackend
    from .config import GenerationConfig
    from .config import resolve_personas
    from .data import load_dataset
    from .loopback import LoopbackServer
    from .loopback import PlantedBias
    from .pipeline import judge_abstentions
    from .pipeline import run_evaluation
    from .store import RunStore

    personas = resolve_personas(args.personas, allow_custom=args.custom_personas)
    templates = _csv(args.templates)
    datasets = {
        d: load_dataset(
            d,
            mmlu=args.mmlu,
            bbh=args.bbh,
            mbpp=args.mbpp,
            limit=args.limit,
            seed=args.seed,
            builtin_size=args.builtin_size,
            data_dir=args.data_dir,
        )
        for d in _csv(args.datasets)
    }
    gen = GenerationConfig(temperature=args.temperature, max_tokens=args.max_tokens)
    # validate everything before creating anything: the store folder is made only once a backend is ready
    if args.backend == "openai" and (not args.base_url or not args.model):
        raise UsageError("--backend openai needs --base-url (e.g. http://127.0.0.1:8000/v1) and --model")
    if args.backend == "transformers" and args.model_path is None:
        raise UsageError("--backend transformers needs --model-path (a local folder; nothing is downloaded)")
    store_path = _check_store_path(_store_path(args))
    plant = _plant(args.plant) if args.backend == "loopback" else {}
    server = None
    if args.backend == "openai":
        backend = OpenAIBackend(
            args.base_url,
            args.model,
            api_key_env=args.api_key_env,
            chat=not args.no_chat,
            concurrency=args.concurrency,
            max_retries=args.max_retries,
            timeout=args.timeout,
        )
    elif args.backend == "transformers":
        backend = TransformersBackend.from_pretrained(
            args.model_path,
            gguf_file=args.gguf_file,
            name=args.model,
            batch_size=args.batch_size,
            chat=not args.no_chat,
            device=args.device,
        )
    elif args.backend == "smollm2":
        backend = TransformersBackend.smollm2(
            data_dir=args.data_dir, batch_size=args.batch_size, chat=not args.no_chat, device=args.device
        )
    else:
        items = [it for its in datasets.values() for it in its]
        bias = PlantedBias(abstain=plant or {"a physically-disabled person": 0.35}, seed=args.seed)
        server = LoopbackServer(items, bias, personas=personas).start()
        backend = OpenAIBackend(
            server.base_url,
            args.model or "planted-loopback",
            concurrency=args.concurrency,
            max_retries=args.max_retries,
            timeout=args.timeout,
            backoff=0.05,
        )
    created = not store_path.exists()
    try:
        store = RunStore(store_path)
    except BaseException:
        if server is not None:
            server.stop()
        backend.close()
        raise
    try:
        with backend:
            summary = run_evaluation(
                backend,
                datasets,
                personas,
                store,
                templates=templates,
                gen=gen,
                show_progress=not args.quiet,
                log_dir=args.log_dir,
            )
            if args.judge:
                todo = [
                    r for r in store.records() if r["model"] == backend.name and "judge_abstained" not in r
                ]
                for rec in judge_abstentions(backend, todo):
                    store.append(rec)
                print(f"LLM judge: {len(todo)} responses checked for abstention")
    except EndpointError as e:
        if len(store) == 0:
            raise UsageError(f"{e}. Nothing was answered, so no run store was kept") from None
        raise UsageError(
            f"{e}. {len(store)} responses are safely in {store.path}; rerun the same command to resume"
        ) from None
    finally:
        if server is not None:
            server.stop()
        if created and store_path.is_dir() and not any(store_path.iterdir()):
            store_path.rmdir()  # a run that stored nothing leaves no empty store folder behind
    print(
        f"{summary.total} requests: {summary.cached} cached, {summary.sent} sent in {summary.seconds:.1f} s "
        f"-> {store.path}"
    )
    return 0


@app.command(
    "score",
    "Label every stored response (official extraction, abstention) and export the official three JSONL files.",
    _STORE,
    arg("--export", type=Path, help="folder for the official raw/text_predictions/labeled files"),
    _MBPP_ISOLATION,
    seed=False,  # nothing here is random: no --seed
    adds_to=("run",),  # score --out runs/demo reads runs/demo/store and writes beside it
)
def _score(args: argparse.Namespace) -> int:
    from .pipeline import export_official
    from .pipeline import score_records

    store = _open_store(args)
    recs = list(store.records())
    scored = score_records(recs, mbpp_isolation=args.mbpp_isolation)
    path = atomic_write_text(args.out / "scored.jsonl", "".join(json.dumps(r) + "\n" for r in scored))
    groups: dict[tuple, list[dict]] = {}
    for r in scored:
        groups.setdefault((r["model"], r["template"], r["persona"], r["dataset"]), []).append(r)
    print("| model | template | persona | dataset | n | accuracy | abstention | extraction failures |")
    print("|---|---|---|---|---|---|---|---|")
    for (m, t, p, d), rs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        n = len(rs)
        print(
            f"| {m} | {t} | {p} | {d} | {n} | {sum(r['is_correct'] for r in rs) / n:.3f} | "
            f"{sum(r['abstained'] for r in rs) / n:.3f} | {sum(r['predicted_answer'] == '' for r in rs) / n:.3f} |"
        )
    print(f"wrote {path}")
    if args.export:
        files = export_official(recs, args.export)
        print(f"wrote {len(files)} official files under {args.export}")
    return 0


def _open_store(args: argparse.Namespace):
    from .store import RunStore

    path = _store_path(args)
    if not (path / RunStore.FILENAME).is_file():
        raise InputFileError(
            f"no run store at {path} (expected {path / RunStore.FILENAME}); run "
            "'persona-bias run' first or pass --store"
        )
    store = RunStore(path)
    if len(store) == 0:
        bad = f" ({store.skipped_lines} unreadable lines skipped)" if store.skipped_lines else ""
        raise UsageError(
            f"no valid records in {store.path}{bad}; nothing to score. Run 'persona-bias run' into it first"
        )
    return store


_STATS_ARGS = (
    field_arg(compare_personas, "baseline", help="the control persona every persona is compared with"),
    field_arg(
        compare_personas,
        "test",
        choices=("mcnemar", "binom_two-sided", "binom_smaller", "binom_larger", "confint"),
        help="significance test (official: mcnemar)",
    ),
    field_arg(compare_personas, "alpha", type=probability, help="significance level"),
    field_arg(
        compare_personas,
        "correction",
        choices=("none", "bonferroni", "holm", "fdr_bh"),
        help="multiple-comparison correction over each persona's datasets",
    ),
    _MBPP_ISOLATION,
)


def _comparisons(args: argparse.Namespace):
    from .pipeline import score_records

    scored = score_records(_open_store(args).records(), mbpp_isolation=args.mbpp_isolation)
    return compare_personas(
        scored, baseline=args.baseline, test=args.test, alpha=args.alpha, correction=args.correction
    ), scored


@app.command(
    "stats",
    "Significance of every persona's accuracy drop against the baseline persona (prints; writes nothing).",
    _STORE_READ,
    *_STATS_ARGS,
    out=False,
    seed=False,  # nothing here is random: no --seed
)
def _stats(args: argparse.Namespace) -> int:
    from .analysis import percent_personas_biased
    from .report import comparisons_markdown

    comps, _ = _comparisons(args)
    print(comparisons_markdown(comps))
    if comps:
        print(f"% personas biased: {percent_personas_biased(comps):.1f}")
    return 0


@app.command(
    "report",
    "Write the Markdown/CSV tables and the plots (drop heatmap, abstention) to --out.",
    _STORE,
    *_STATS_ARGS,
    seed=False,  # nothing here is random: no --seed
    adds_to=("run", "score"),
)
def _report(args: argparse.Namespace) -> int:
    from .report import write_report

    comps, scored = _comparisons(args)
    for p in write_report(comps, scored, args.out):
        print(f"wrote {p}")
    return 0


@app.command(
    "serve-loopback",
    "Serve the planted-bias OpenAI-compatible demo server on 127.0.0.1 until interrupted.",
    arg("--port", type=int, default=8000, help="port on 127.0.0.1 (0: any free port)"),
    _BUILTIN_SIZE,
    arg("--plant", action="append", default=[], help="PERSONA=P abstention probability (repeatable)"),
    out=False,
)
def _serve(args: argparse.Namespace) -> int:  # pragma: no cover - interactive
    import time

    from .data import BUILTIN_TASKS
    from .data import builtin_questions
    from .loopback import LoopbackServer
    from .loopback import PlantedBias

    items = [it for t in BUILTIN_TASKS for it in builtin_questions(t, args.builtin_size, seed=args.seed)]
    bias = PlantedBias(abstain=_plant(args.plant) or {"a physically-disabled person": 0.35}, seed=args.seed)
    srv = LoopbackServer(items, bias).start(port=args.port)
    print(f"serving the planted-bias model at {srv.base_url} (any model name; Ctrl-C to stop)", flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        srv.stop()
    return 0


main = app.main
