"""The authors' released generations, read from a user path, as rows :func:`compare_personas` can score.

The official code writes, per (dataset, model, persona instruction, task, persona), a labelled predictions file
``<dataset>/<model>/<instruction>/<task>/<persona>_text_predictions_s0_e-1_temp<T>_gen1_<time>_labeled.jsonl``:
one JSON object a line with ``id``, the question fields, ``predicted_explanations`` (the responses),
``predicted_answer`` and ``is_correct`` (see ``persona/run.py`` and the files under ``outputs/`` of
allenai/persona-bias). The released dataset (Hugging Face ``allenai/persona-bias``, gated, AI2 ImpACT-LR licence;
download it yourself) holds these outputs. Two layouts are read:

- a folder tree of those ``*_labeled.jsonl`` files (what the official code and :func:`export_official` write): the
  model, instruction, dataset and persona come from the path;
- a ``.parquet`` table with one row per labelled prediction: the same fields plus ``model``, ``persona``,
  ``template`` (the persona instruction) and ``dataset`` columns (needs pyarrow:
  ``pip install 'iclr24-persona-bias[released]'``).

The official ``is_correct`` and ``predicted_answer`` labels are kept (released MBPP code is never run); this
package's detector adds ``abstained`` and ``references_persona``, so the paper's tables can be recomputed with
this package's statistics (:func:`compare_personas`, :func:`persona_summary`).
"""

from __future__ import annotations

import re
from pathlib import Path

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError

from .config import NO_PERSONA
from .data import _read_jsonl
from .scoring import detect_abstention
from .scoring import extract_answer
from .scoring import extract_bbh_answer
from .scoring import references_persona

__all__ = ["load_released", "REQUIRED_COLUMNS"]

REQUIRED_COLUMNS = ("model", "persona", "template", "dataset", "id", "predicted_explanations", "is_correct")
_LABELED = re.compile(r"^(?P<persona>.+?)_text_predictions_.*_labeled\.jsonl$")


def _score(row: dict, where: str) -> dict:
    for key in REQUIRED_COLUMNS:
        if key not in row:
            raise InputError(f"{where}: missing field {key!r} (needed: {', '.join(REQUIRED_COLUMNS)})")
    expl = row["predicted_explanations"]
    if isinstance(expl, str):
        expl = [expl]
    response = str(list(expl)[0]) if expl is not None and len(expl) else ""
    dataset, persona = str(row["dataset"]), str(row["persona"])
    is_correct = row["is_correct"]
    if isinstance(is_correct, str):
        is_correct = is_correct.strip().lower() in ("true", "1", "yes")
    if (
        dataset == "mbpp"
    ):  # never run released code: keep the official label, detect refusals as run_mbpp's rule
        predicted = ""
        abstained = bool(response) and "```" not in response and detect_abstention(response, None)
    else:
        predicted = row.get("predicted_answer")
        if predicted is None:
            bbh = dataset.startswith("bbh-")
            predicted = extract_bbh_answer(response, dataset[4:]) if bbh else extract_answer(response)
        predicted = "" if predicted is None else str(predicted)
        abstained = bool(response) and detect_abstention(response, predicted or None)
    return {
        "model": str(row["model"]),
        "persona": persona,
        "template": str(row["template"]),
        "dataset": dataset,
        "id": row["id"],
        "predicted_answer": predicted,
        "is_correct": bool(is_correct),
        "abstained": abstained,
        "references_persona": references_persona(response, persona),
        "empty": not response,
    }


def _from_tree(root: Path) -> list[dict]:
    files = sorted(root.rglob("*_labeled.jsonl"))
    if not files:
        raise InputFileError(
            f"{root}: no *_text_predictions_*_labeled.jsonl file under it (the official output layout "
            "<dataset>/<model>/<instruction>/<task>/<persona>_text_predictions_..._labeled.jsonl)"
        )
    rows = []
    for f in files:
        hit = _LABELED.match(f.name)
        parts = f.relative_to(root).parts[:-1]
        if hit is None or len(parts) < 3:
            raise InputError(
                f"{f}: expected <dataset>/<model>/<instruction>[/<task>]/<persona>_text_predictions_..._labeled"
                f".jsonl below {root}, got {'/'.join(f.relative_to(root).parts)}"
            )
        family, model, template, *task = parts
        persona = hit["persona"].replace("_", " ")
        if persona == NO_PERSONA.replace("_", " "):
            persona = NO_PERSONA
        dataset = f"{family}-{task[0]}" if task else family
        for lineno, raw in _read_jsonl(f):
            raw = dict(raw, model=model, persona=persona, template=template, dataset=dataset)
            rows.append(_score(raw, f"{f}:{lineno}"))
    return rows


def _from_parquet(path: Path) -> list[dict]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(
            "reading .parquet needs pyarrow: pip install 'iclr24-persona-bias[released]'"
        ) from None
    try:
        table = pq.read_table(path)
    except Exception as e:  # pyarrow raises its own ArrowInvalid / OSError kinds
        raise InputError(f"{path} is not a readable parquet file: {e}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in table.column_names]
    if missing:
        raise InputError(f"{path}: missing column(s) {missing}; it has {table.column_names}")
    if table.num_rows == 0:
        raise InputError(f"{path}: the table has no rows")
    return [_score(row, f"{path}, row {i}") for i, row in enumerate(table.to_pylist())]


def load_released(path: str | Path) -> list[dict]:
    """Scored rows (``model, persona, template, dataset, id, predicted_answer, is_correct, abstained, ...``) from a
    folder of official ``*_labeled.jsonl`` outputs or a ``.parquet`` table of them; pass them to
    :func:`compare_personas`."""
    p = Path(path)
    if p.is_dir():
        return _from_tree(p)
    if not p.is_file():
        raise InputFileError(
            f"{p}: no such file or folder (the released generations: a folder of official *_labeled.jsonl files "
            "or a .parquet table; download them yourself from the Hugging Face dataset allenai/persona-bias)"
        )
    if p.suffix == ".parquet":
        return _from_parquet(p)
    raise InputError(
        f"{p}: expected a folder of *_labeled.jsonl files or a .parquet file, got a {p.suffix!r} file"
    )
