"""The evaluation pipeline: (datasets x personas x templates) -> requests -> run store -> scores.

``run_evaluation`` sends only what the store does not hold yet, so re-running a killed evaluation resumes it without
re-sending a single cached request. ``score_records`` labels every stored response with the official rules.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iclr24.paperkit import progress as _progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputNotAFolderError
from iclr24.paperkit.io import atomic_write_text
from iclr24.paperkit.tracking import StepLog

from .backends import Backend
from .backends import Completion
from .config import DEFAULT_TEMPLATE
from .config import NO_PERSONA
from .config import GenerationConfig
from .config import check_records
from .config import resolve_template
from .data import Item
from .prompts import build_prompt
from .scoring import _check_isolation
from .scoring import judge_prompt
from .scoring import parse_judge_verdict
from .scoring import score_response
from .scoring import untrusted_code_warning
from .store import RunStore
from .store import record_key

__all__ = [
    "RunSummary",
    "plan_requests",
    "run_evaluation",
    "score_records",
    "export_official",
    "judge_abstentions",
]


@dataclass(frozen=True)
class RunSummary:
    total: int  # requests in the grid
    cached: int  # already in the store (not sent)
    sent: int  # answered and stored in this run
    seconds: float
    stopped_early: bool = False  # the deadline passed before every request was sent


def _template_key(persona: str, template: str) -> str:
    return NO_PERSONA if persona == NO_PERSONA else template


def plan_requests(
    datasets: dict[str, Sequence[Item]] | Sequence[Item],
    personas: Sequence[str],
    templates: Sequence[str] = (DEFAULT_TEMPLATE,),
    model: str = "model",
    chat: bool = True,
) -> list[tuple[dict, Any]]:
    """The grid as ``(record_stub, Prompt)`` pairs, deduplicated (``no_persona`` is asked once, whatever the
    template). Unknown templates are a ValueError listing the known ones."""
    if isinstance(datasets, dict):
        items = [it for its in datasets.values() for it in its]
    else:
        items = list(datasets)
    if not items:
        raise InputError("no questions to ask: the datasets are empty")
    if not personas:
        raise InputError("no personas given")
    for t in templates:
        resolve_template(t)
    out, seen = [], set()
    for t in templates:
        for persona in personas:
            tkey = _template_key(persona, t)
            for it in items:
                stub = {
                    "model": model,
                    "persona": persona,
                    "template": tkey,
                    "dataset": it.dataset,
                    "id": it.id,
                }
                key = record_key(stub)
                if key in seen:
                    continue
                seen.add(key)
                out.append((stub | {"_item": it}, build_prompt(it, persona, t, chat=chat)))
    return out


def run_evaluation(
    backend: Backend,
    datasets: dict[str, Sequence[Item]] | Sequence[Item],
    personas: Sequence[str],
    store: RunStore,
    templates: Sequence[str] = (DEFAULT_TEMPLATE,),
    gen: GenerationConfig | None = None,
    show_progress: bool = False,
    deadline: float | None = None,
    callbacks: Any = None,
    log_dir: str | Path | None = None,
) -> RunSummary:
    """Ask ``backend`` every (template, persona, question) not yet in ``store`` and append each response as it
    arrives. Records hold the official raw fields (``id, system_prompt, user_prompt, raw_response``) plus the
    instance (``question, answer``, MBPP ``imports, tests``) and the response text. ``deadline`` (a
    ``time.monotonic()`` value) stops starting new requests/batches once it has passed (those already started are
    stored); the rest can be resumed later.

    Resume: a rerun into the same store sends only the missing requests. With greedy decoding (``temperature=0``,
    the paper's) it stores what the uninterrupted run would have: an HTTP endpoint answers each request on its own,
    and the local backend batches the remaining prompts as the uninterrupted run would have (batches are cut from
    the length-sorted prompts, and a run stops or is interrupted between whole batches; a process killed while
    appending one batch's records is the exception). Sampled responses are new draws.

    ``callbacks`` (``f(step, metrics)``, or objects with ``on_step``) and ``log_dir`` (``metrics.jsonl``, and
    TensorBoard event files when installed) get one record per stored response, step = its index in the grid's
    order of answering (a resumed run continues the count): ``done`` (responses in the store for this grid),
    ``total``, ``chars``, ``truncated``, ``finish_stop`` (1 when the model stopped by itself), ``seconds``, and the
    strings ``persona``, ``dataset``, ``id``; the end record has the summary's counts."""
    if not isinstance(backend, Backend):
        raise InputError(
            f"backend must be a Backend (OpenAIBackend, TransformersBackend, ...), got {type(backend).__name__}"
        )
    items = datasets.values() if isinstance(datasets, dict) else [datasets]
    for group in items:
        if isinstance(group, str | bytes) or not all(isinstance(it, Item) for it in group):
            raise InputError(
                "datasets must be Items (load_dataset, builtin_questions), or a dict of lists of them"
            )
    gen = gen or GenerationConfig()
    t0 = time.perf_counter()
    plan = plan_requests(datasets, personas, templates, model=backend.name, chat=backend.chat)
    store.refresh()
    todo = [(stub, p) for stub, p in plan if record_key(stub) not in store]
    cached = len(plan) - len(todo)
    sent = 0
    log = StepLog(log_dir, callbacks, name="persona_bias")
    bar = _progress(total=len(todo), desc=f"{backend.name}", disable=None if show_progress else True)
    try:
        with log:
            for i, comp in backend.generate([p for _, p in todo], gen, deadline=deadline):
                stub, prompt = todo[i]
                store.append(_record(stub, prompt, comp))
                sent += 1
                bar.update(1)
                log(cached + sent - 1, {
                    "done": cached + sent, "total": len(plan), "chars": len(comp.text),
                    "truncated": bool(comp.truncated), "finish_stop": comp.finish_reason == "stop",
                    "seconds": time.perf_counter() - t0, "persona": stub["persona"], "dataset": stub["dataset"],
                    "id": str(stub["id"]),
                })  # fmt: skip
            summary = RunSummary(len(plan), cached, sent, time.perf_counter() - t0, sent < len(todo))
            log.close(
                {
                    "total": summary.total,
                    "cached": cached,
                    "sent": sent,
                    "stopped_early": summary.stopped_early,
                }
            )
    finally:
        bar.close()
    return summary


def _record(stub: dict, prompt: Any, comp: Completion) -> dict:
    it: Item = stub["_item"]
    rec = {k: v for k, v in stub.items() if k != "_item"}
    rec.update(
        {
            "system_prompt": prompt.system,
            "user_prompt": prompt.user,
            "raw_response": comp.raw,
            "response": comp.text,
            "finish_reason": comp.finish_reason,
            "truncated": comp.truncated,
            **{f"instance_{k}": v for k, v in it.to_dict().items() if k != "id"},
        }
    )
    return rec


def _item_of(rec: dict) -> Item:
    return Item(
        id=rec["id"],
        question=rec.get("instance_question", ""),
        answer=str(rec.get("instance_answer", "")),
        dataset=rec["dataset"],
        imports=tuple(rec.get("instance_imports", ())),
        tests=tuple(rec.get("instance_tests", ())),
    )


def score_records(
    records: Iterable[dict], mbpp_timeout: float = 10.0, mbpp_isolation: str = "process"
) -> list[dict]:
    """Label each stored record: ``predicted_answer``, ``is_correct``, ``abstained``, ``references_persona``,
    ``empty`` (and MBPP ``run_status``). Key fields are kept; prompts and raw responses are dropped.

    MBPP responses are run as code: before the first one runs, a warning saying what the subprocess does and does
    not isolate is printed to stderr (``run_mbpp``; ``mbpp_isolation="no-network"`` also cuts the network)."""
    records = check_records(records, ("id", "dataset", "persona"))
    if any(r.get("dataset") == "mbpp" and r.get("response") for r in records):
        _check_isolation(mbpp_isolation)
        print(untrusted_code_warning(mbpp_isolation), file=sys.stderr, flush=True)
    out = []
    for rec in records:
        s = score_response(
            _item_of(rec),
            rec.get("response"),
            rec["persona"],
            mbpp_timeout=mbpp_timeout,
            mbpp_isolation=mbpp_isolation,
        )
        row = {k: rec[k] for k in ("model", "persona", "template", "dataset", "id")}
        row.update(
            predicted_answer=s.predicted_answer,
            is_correct=s.is_correct,
            abstained=s.abstained,
            references_persona=s.references_persona,
            empty=s.empty,
        )
        if s.run_status is not None:
            row["run_status"] = s.run_status
        if "judge_abstained" in rec:
            row["judge_abstained"] = rec["judge_abstained"]
        out.append(row)
    return out


def judge_abstentions(
    backend: Backend, records: Iterable[dict], gen: GenerationConfig | None = None
) -> list[dict]:
    """Optional LLM judge: ask ``backend`` whether each response without an extracted answer is a refusal. Returns
    the records with ``judge_abstained`` (True/False/None) added; answered responses get False without a call."""
    if not isinstance(backend, Backend):
        raise InputError(
            f"backend must be a Backend (OpenAIBackend, TransformersBackend, ...), got {type(backend).__name__}"
        )
    recs = check_records(records, ("id", "dataset", "persona"))
    gen = gen or GenerationConfig(max_tokens=8)
    from .config import Prompt

    ask = [
        i
        for i, r in enumerate(recs)
        if r.get("response")
        and r["dataset"] != "mbpp"
        and score_response(_item_of(r), r["response"], r["persona"]).predicted_answer == ""
    ]
    prompts = [Prompt("", judge_prompt(recs[i]["response"], recs[i]["persona"])) for i in ask]
    out = [dict(r, judge_abstained=False) for r in recs]
    for j, comp in backend.generate(prompts, gen):
        out[ask[j]]["judge_abstained"] = parse_judge_verdict(comp.text)
    return out


def _safe(s: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "_" for c in s)


def export_official(records: Iterable[dict], out_dir: str | Path, temperature: float = 0.0) -> list[Path]:
    """Write the official three files per (model, template, dataset, persona) under
    ``out_dir/{mmlu|bbh|<dataset>}/{model}/{template}/{task}/``: ``<persona>_raw_responses_s0_e-1_temp{T}_gen1.jsonl``
    (``id, system_prompt, user_prompt, raw_response``), ``..._text_predictions_...jsonl`` (the instance +
    ``predicted_explanations``) and ``..._text_predictions_..._labeled.jsonl`` (+ ``predicted_answer``,
    ``is_correct``)."""
    records = check_records(
        records, ("model", "template", "dataset", "persona", "id", "system_prompt", "user_prompt")
    )
    if Path(out_dir).exists() and not Path(out_dir).is_dir():
        raise InputNotAFolderError(
            f"out_dir {out_dir} is a file; expected a folder (existing or new)", out_dir
        )
    groups: dict[tuple, list[dict]] = {}
    for r in records:
        groups.setdefault((r["model"], r["template"], r["dataset"], r["persona"]), []).append(r)
    written = []
    for (model, tmpl, ds, persona), recs in sorted(groups.items(), key=lambda kv: tuple(map(str, kv[0]))):
        recs.sort(key=lambda r: (str(type(r["id"])), r["id"]))
        family, _, task = ds.partition("-")
        folder = Path(out_dir) / _safe(family) / _safe(model) / _safe(tmpl)
        if task:
            folder = folder / _safe(task)
        stem = f"{persona.replace(' ', '_')}"
        suffix = f"_s0_e-1_temp{temperature}_gen1"
        raw_lines, text_lines, lab_lines = [], [], []
        for r, s in zip(recs, score_records(recs)):
            raw = r.get("raw_response") or {"choices": [{"message": {"content": r.get("response", "")}}]}
            raw_lines.append(
                json.dumps(
                    {
                        "id": r["id"],
                        "system_prompt": r["system_prompt"],
                        "user_prompt": r["user_prompt"],
                        "raw_response": raw,
                    }
                )
            )
            inst = {
                "id": r["id"],
                **{k[len("instance_") :]: v for k, v in r.items() if k.startswith("instance_")},
            }
            inst["predicted_explanations"] = [r["response"]] if r.get("response") else []
            text_lines.append(json.dumps(inst))
            lab = dict(inst, predicted_answer=s["predicted_answer"], is_correct=s["is_correct"])
            if "run_status" in s:
                lab["run_status"] = s["run_status"]
            lab_lines.append(json.dumps(lab))
        for name, lines in (
            (f"{stem}_raw_responses{suffix}.jsonl", raw_lines),
            (f"{stem}_text_predictions{suffix}.jsonl", text_lines),
            (f"{stem}_text_predictions{suffix}_labeled.jsonl", lab_lines),
        ):
            written.append(atomic_write_text(folder / _safe(name), "\n".join(lines) + "\n"))
    return written
