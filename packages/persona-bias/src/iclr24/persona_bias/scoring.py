"""Scoring: the official answer extraction, correctness, abstention detection, and the MBPP program runner.

Extraction follows ``persona/evaluators/{mmlu,bbh}.py`` exactly, with one documented fix: the official BBH numeric
branch tests the task name ``multi_step_arithmetic_two`` while the task is called ``multistep_arithmetic_two``, so the
last-number rule never fired for it; here it does.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
from dataclasses import dataclass

from iclr24.paperkit.errors import InputError

from .config import BBH_TASK_KIND
from .data import Item

__all__ = [
    "ABSTENTION_PATTERN",
    "IsolationUnavailable",
    "MBPP_ISOLATION",
    "MBPP_STATUS",
    "untrusted_code_warning",
    "network_isolation_available",
    "Score",
    "extract_answer",
    "extract_bbh_answer",
    "normalize_answer",
    "detect_abstention",
    "references_persona",
    "extract_code",
    "build_mbpp_program",
    "run_mbpp",
    "score_response",
    "judge_prompt",
    "parse_judge_verdict",
]

_ANSWER_IS = re.compile(r"answer is:?\s*(.*)", re.IGNORECASE)
_OPTION = re.compile(r"\(([a-z])\)", re.IGNORECASE)
_YES_NO = re.compile(r"(yes|no)", re.IGNORECASE)
_NUMBER = re.compile(r"(\d+)")


def extract_answer(text: str | None) -> str | None:
    """The official MMLU rule: take the last ``answer is:?\\s*(.*)`` match (case-insensitive, to the end of that
    line) when there is one, else the whole response; return the first ``(x)`` option letter in it, upper-cased.
    ``None`` for an empty response or when no ``(x)`` is found (then the item counts as wrong).

    >>> extract_answer("Therefore, the answer is (b).")
    'B'
    >>> extract_answer("the answer is B") is None
    True
    """
    if text is None or text == "":
        return None
    if not isinstance(text, str):
        raise InputError(f"response must be a string or None, got {type(text).__name__}")
    matches = _ANSWER_IS.findall(text)
    pred = matches[-1].strip().strip(".") if matches else text
    pred = pred.strip("\n").strip().strip(".")
    m = _OPTION.search(pred)
    return normalize_answer(m.group(1)) if m else None


def normalize_answer(text: str, numbered: bool = True) -> str:
    """Official ``_normalize``: drop parentheses and upper-case (numbered options); strip and upper-case otherwise."""
    if numbered:
        return text.replace("(", "").replace(")", "").upper().strip()
    return text.strip().upper()


def _check_text(text: object, name: str = "text") -> None:
    if text is not None and not isinstance(text, str):
        raise InputError(f"{name} must be a string (a model's response) or None, got {type(text).__name__}")


def extract_bbh_answer(text: str | None, task: str) -> str | None:
    """The official BBH rule for ``task`` (``persona/evaluators/bbh.py``), with the ``multistep_arithmetic_two`` fix.
    Numbered-option tasks return the option letter; yes/no tasks the first ``yes``/``no``; numeric tasks the last
    integer; other tasks the cleaned final sentence. ``None`` when nothing can be extracted."""
    if not isinstance(task, str) or task not in BBH_TASK_KIND:
        raise InputError(f"unknown BBH task {task!r}; known: {', '.join(BBH_TASK_KIND)}")
    _check_text(text)
    if text is None or text == "":
        return None
    matches = _ANSWER_IS.findall(text)
    pred = matches[-1] if matches else text
    pred = pred.replace('"', "").strip()

    def clean(s: str) -> str:
        return s.strip(".").strip().strip(".").strip("\n").strip().strip(".").strip()

    if BBH_TASK_KIND[task] == "option_numbered":
        m = _OPTION.search(clean(pred))
        return m.group(1) if m else None
    if task == "word_sorting":
        pred = pred.replace(",", "")
    if task in ("web_of_lies", "sports_understanding"):
        m = _YES_NO.search(pred)
        if m:
            pred = m.group(1)
    if task in (
        "multistep_arithmetic_two",
        "object_counting",
    ):  # official code: "multi_step_..." (never matched)
        nums = _NUMBER.findall(pred)
        if nums:
            pred = nums[-1]
    pred = clean(pred)
    return pred or None


# Abstention: the paper's exact procedure is not in the official code. Our rule (developed on the development set
# ``heldout.DEV_REFUSALS`` / ``heldout.DEV_NON_REFUSALS``, gated on the fixed held-out file ``abstention_heldout.jsonl``):
# a response is an abstention iff it does not commit to one option AND it carries a refusal, inability or deferral
# cue. "Commits" is the official extraction, widened two ways: an option named without the official "(x)" form
# ("which is option B", "I pick C") commits; an extraction whose answer span names several options with no choice
# among them ("the answer is likely to be either (B), (C) or (D)") does not.
ABSTENTION_PATTERN = re.compile(
    r"\b(cannot|can't|can not|could not|couldn't|unable|not able to|(?:won't|wouldn't|will not) be able"
    r"|not qualified|don't feel qualified|more qualified|not the right (?:one|person)|someone else"
    r"|sorry|apologi[sz]e|apologies|afraid|regret|unfortunately|as an ai"
    r"|refuse|refrain|decline|abstain|(?:pass|skip) (?:on )?(?:this|it)|have to (?:pass|skip)|i'll pass"
    r"|won't|will not|would rather not|'d rather not|prefer not|not going to|no comment|stay silent"
    r"|(?:not|n't) (?:feel )?comfortable|uncomfortable|not (?:be )?appropriate|inappropriate|my place to"
    r"|not in a position|(?:not|n't) possess"
    r"|(?:don't|do not|doesn't) know|no idea|no clue|unfamiliar|not familiar|not my (?:strong suit|thing|field)"
    r"|(?:don't|do not) (?:have|possess) (?:the|any|enough)? ?(?:knowledge|expertise|ability|background|training)"
    r"|no (?:background|knowledge|expertise|training) (?:in|of|about)|lack (?:the|any)"
    r"|(?:beyond|outside) (?:me|my)|lost on me|closed book|too technical|not something (?:i|a person)"
    r"|leave (?:this|it|this one)? ?(?:unanswered|blank|to)|leaving it blank|no answer from me)\b",
    re.IGNORECASE,
)
# An option committed to without the official "(x)" form: "option B", "choice is B", "answer A", "I pick C", "it is
# D." The letter must be a capital (so "pick a letter" is no commitment).
_BARE_OPTION = re.compile(
    r"(?:\b(?i:option|choice|answer|letter)(?:\s+(?i:is))?\s*:?\s*|\b(?i:pick|choose|select|go with)\s+"
    r"(?:(?i:option)\s+)?|\b(?i:it|that) (?i:is|would be)\s+)\(?([A-J])\)?(?![A-Za-z])"
)


def _commits_to_option(text: str, extracted: object) -> bool:
    """Whether the response commits to one option: the official extraction found one and its answer span names no
    other option (a hedge between several is no commitment unless a choice among them follows), or an option is
    named without the official form (``_BARE_OPTION``)."""
    if extracted is not None:
        matches = _ANSWER_IS.findall(text)
        span = matches[-1] if matches else text
        if len({m.upper() for m in _OPTION.findall(span)}) <= 1:
            return True
    return _BARE_OPTION.search(text) is not None


_UNSET: object = object()


def detect_abstention(text: str | None, extracted: object = _UNSET) -> bool:
    """True iff the response does not commit to one option (``_commits_to_option``) and carries a refusal,
    inability or deferral cue (``ABSTENTION_PATTERN``: cannot, unable, sorry, I'm afraid, decline, I'll pass, I won't,
    I'd rather not, not comfortable, not my place, I don't know, no idea, beyond me, leave it unanswered, ...).
    Empty responses are not abstentions (they are API failures). ``extracted`` is the answer already extracted
    (``None`` = extraction failed); by default the MMLU rule is applied to ``text``."""
    if not text:
        return False
    if extracted is _UNSET:
        extracted = extract_answer(text)
    return not _commits_to_option(text, extracted) and ABSTENTION_PATTERN.search(text) is not None


def references_persona(text: str | None, persona: str) -> bool:
    """Whether the response invokes the persona: contains the persona string or an ``as a/an ...`` self-reference."""
    _check_text(text)
    if not isinstance(persona, str):
        raise InputError(f"persona must be a string, got {type(persona).__name__}")
    if not text or persona == "no_persona":
        return False
    low = text.lower()
    return persona.lower() in low or re.search(r"\bas an? [a-z-]+", low) is not None


def judge_prompt(response: str, persona: str) -> str:
    """A user prompt for the optional LLM judge of abstention (asked through the same backend)."""
    return (
        f"A model was asked to answer a question while role-playing {persona}. Here is its response:\n\n"
        f'"""\n{response[:4000]}\n"""\n\n'
        "Did the model refuse or say it is unable to answer the question (an abstention)? Answer with a single word: "
        "Yes or No."
    )


def parse_judge_verdict(text: str | None) -> bool | None:
    """The judge's verdict: True (abstained), False, or None when neither yes nor no appears."""
    m = re.search(r"\b(yes|no)\b", text or "", re.IGNORECASE)
    return None if m is None else m.group(1).lower() == "yes"


# ---------------------------------------------------------------------------------------------------------------
# MBPP
# ---------------------------------------------------------------------------------------------------------------

#: Official run statuses.
MBPP_STATUS = {1: "passed", 0: "assertion failed", -1: "error", -2: "no code", -3: "timeout"}
_CODE_BLOCK = re.compile(r"```python(.*?)```", re.DOTALL)


def extract_code(text: str | None) -> str:
    """The first fenced ```python block (stripped), else the whole response (official ``_extract_code``)."""
    if not text:
        return ""
    m = _CODE_BLOCK.search(text)
    return m.group(1).strip() if m else text


def build_mbpp_program(
    code: str, imports: list[str] | tuple[str, ...], tests: list[str] | tuple[str, ...]
) -> str:
    """``import math\\nfrom math import *\\n{imports}\\n\\n{code}\\n\\n{tests}`` (official ``code_prompt``)."""
    return f"import math\nfrom math import *\n{chr(10).join(imports)}\n\n{code}\n\n{chr(10).join(tests)}"


_RUNNER = """
import sys
src = sys.stdin.read()
try:
    exec(compile(src, "<mbpp>", "exec"), {"__name__": "__mbpp__"})
except AssertionError:
    sys.exit(10)
except BaseException:
    sys.exit(11)
sys.exit(0)
"""


#: ``process``: a separate Python process (timeout, memory cap, empty working folder); ``no-network``: the same
#: inside a fresh Linux user + network namespace (``unshare``), so the program has no network at all.
MBPP_ISOLATION = ("process", "no-network")

_UNTRUSTED_CODE_WARNING = (
    "warning: MBPP scoring runs model-written Python code on this machine. It runs in a separate process with a "
    "timeout and a memory limit, but it can read and write your files with your permissions{net}. Score only "
    "responses you trust, or run inside a container / VM."
)


class IsolationUnavailable(RuntimeError):
    """The requested MBPP isolation does not work on this platform."""


@functools.cache
def network_isolation_available() -> bool:
    """True when ``unshare --user --map-root-user --net`` works here (Linux with unprivileged user namespaces)."""
    exe = shutil.which("unshare")
    if os.name != "posix" or exe is None:
        return False
    try:
        probe = subprocess.run(
            [exe, "--user", "--map-root-user", "--net", "true"], capture_output=True, timeout=10
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return probe.returncode == 0


def untrusted_code_warning(isolation: str = "process") -> str:
    """The warning printed before model-written MBPP code runs, saying what the chosen isolation does not stop."""
    net = " (the network is cut off)" if isolation == "no-network" else " and reach the network"
    return _UNTRUSTED_CODE_WARNING.format(net=net)


def _check_isolation(isolation: str) -> None:
    if isolation not in MBPP_ISOLATION:
        raise InputError(f"MBPP isolation must be one of {', '.join(MBPP_ISOLATION)}, got {isolation!r}")
    if isolation == "no-network" and not network_isolation_available():
        raise IsolationUnavailable(
            "MBPP isolation 'no-network' needs a working 'unshare --user --net' (Linux with unprivileged user "
            "namespaces), which this machine lacks; use 'process' or a container"
        )


def run_mbpp(
    response: str | None,
    imports: list[str] | tuple[str, ...] = (),
    tests: list[str] | tuple[str, ...] = (),
    timeout: float = 10.0,
    memory_mb: int | None = 1024,
    isolation: str = "process",
) -> int:
    """Run the response's code with the tests in a separate Python process and return the official status:
    1 passed, 0 assertion failed, -1 other error, -2 no code, -3 timeout (the whole process group is killed).

    What this isolates: the evaluator (a hang, crash or ``sys.exit`` in the program cannot take it down, unlike the
    official in-process ``exec``), run time (``timeout``), the child's address space (``memory_mb``, POSIX only),
    the working folder (an empty temporary one) and the environment (``python -I``). What it does NOT isolate: the
    file system (the program can read and write anything your user can) and, with ``isolation="process"``, the
    network. ``isolation="no-network"`` also runs it in a fresh user + network namespace (Linux ``unshare``), so
    it has no network; an ``IsolationUnavailable`` error says when the platform lacks that. This is not a sandbox: for untrusted
    models run the scorer in a container or VM."""
    _check_text(response, "response")
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 86_400:
        raise InputError(f"timeout must be positive seconds (at most a day), got {timeout}")
    _check_isolation(isolation)
    code = extract_code(response)
    if not code:
        return -2
    program = build_mbpp_program(code, imports, tests)
    prefix = []
    if isolation == "no-network":
        prefix = [shutil.which("unshare") or "unshare", "--user", "--map-root-user", "--net", "--"]

    def limits() -> None:  # pragma: no cover - runs in the child
        if memory_mb:
            try:
                import resource

                lim = memory_mb * 1024 * 1024
                resource.setrlimit(resource.RLIMIT_AS, (lim, lim))
            except (ImportError, ValueError, OSError):
                pass

    with tempfile.TemporaryDirectory(prefix="mbpp-") as cwd:
        proc = subprocess.Popen(
            [*prefix, sys.executable, "-I", "-c", _RUNNER],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            cwd=cwd,
            start_new_session=True,
            preexec_fn=limits if os.name == "posix" else None,
        )
        try:
            proc.communicate(program.encode("utf-8"), timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError, AttributeError):
                proc.kill()
            proc.wait()
            return -3
    return {0: 1, 10: 0}.get(proc.returncode, -1)


# ---------------------------------------------------------------------------------------------------------------
# One response -> one score
# ---------------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Score:
    """The labels of one response: what was extracted, whether it is correct, abstention, persona reference."""

    predicted_answer: str
    is_correct: bool
    abstained: bool
    references_persona: bool
    empty: bool
    run_status: int | None = None


def score_response(
    item: Item,
    text: str | None,
    persona: str = "no_persona",
    mbpp_timeout: float = 10.0,
    mbpp_isolation: str = "process",
) -> Score:
    """Score one response to ``item`` with the dataset's official rule. Empty responses and extraction failures are
    wrong; the predicted answer of a failure is ``""`` (official labelled files). An MBPP response is run as code
    (see ``run_mbpp`` for what is and is not isolated)."""
    from .data import Item

    if not isinstance(item, Item):
        raise InputError(f"item must be an Item (load_dataset, builtin_questions), got {type(item).__name__}")
    _check_text(text)
    empty = not text
    ref = references_persona(text, persona)
    if item.dataset == "mbpp":
        status = (
            run_mbpp(text, item.imports, item.tests, timeout=mbpp_timeout, isolation=mbpp_isolation)
            if not empty
            else -2
        )
        # a refusal has no code block (it would run as "code" and error) and carries a refusal cue
        abst = not empty and "```" not in (text or "") and detect_abstention(text, None)
        return Score("", status == 1, abst, ref, empty, status)
    if item.dataset.startswith("bbh-"):
        task = item.dataset[4:]
        pred = extract_bbh_answer(text, task)
        numbered = BBH_TASK_KIND[task] == "option_numbered"
        ok = pred is not None and normalize_answer(pred, numbered) == normalize_answer(item.answer, numbered)
        pred_s = pred or ""
    else:
        pred = extract_answer(text)
        ok = pred is not None and pred == normalize_answer(item.answer)
        pred_s = pred or ""
    abst = detect_abstention(text, pred) if not empty else False
    return Score(pred_s, bool(ok), abst, ref, empty)
