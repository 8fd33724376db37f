"""Prompt building: system prompt (persona instruction) + dataset user prompt, as the official ``get_prompt``."""

from __future__ import annotations

from iclr24.paperkit.errors import InputError

from .config import BBH_TASK_TEMPLATE
from .config import BBH_USER_TEMPLATES
from .config import DEFAULT_TEMPLATE
from .config import MBPP_USER_TEMPLATE
from .config import MMLU_USER_TEMPLATE
from .config import Prompt
from .config import system_prompt
from .data import Item

__all__ = ["user_prompt", "build_prompt", "mbpp_tests_string", "user_template_for"]


def mbpp_tests_string(tests: list[str] | tuple[str, ...]) -> str:
    """``Test 1: "<assert>"`` lines joined by newlines (official ``create_tests_string``)."""
    return "".join(f'Test {i}: "{t}"' + "\n" for i, t in enumerate(tests, start=1)).strip().rstrip("\n")


def user_template_for(dataset: str) -> str:
    """The user-prompt template of a dataset: MMLU's for ``mmlu-*``, ``builtin-*`` and your own JSONL, the task's
    BBH variant for ``bbh-<task>`` (unknown tasks get the official default), MBPP's for ``mbpp``."""
    if dataset.startswith("bbh-"):
        return BBH_USER_TEMPLATES[BBH_TASK_TEMPLATE.get(dataset[4:], "non_selection")]
    if dataset == "mbpp":
        return MBPP_USER_TEMPLATE
    return MMLU_USER_TEMPLATE


def user_prompt(item: Item) -> str:
    """The user prompt for one item."""
    if not isinstance(item, Item):
        raise InputError(f"item must be an Item (load_dataset, builtin_questions), got {type(item).__name__}")
    tmpl = user_template_for(item.dataset)
    if item.dataset == "mbpp":
        return tmpl.format(question=item.question, tests=mbpp_tests_string(item.tests))
    return tmpl.format(question=item.question)


def build_prompt(item: Item, persona: str, template: str = DEFAULT_TEMPLATE, chat: bool = True) -> Prompt:
    """The request for ``item`` asked of ``persona`` under ``template``. ``chat=False`` (completion models) folds
    the system prompt into the user prompt: ``system + "\\n\\n" + user`` with an empty system prompt."""
    user_prompt(item)  # checks the item first
    sys_p = system_prompt(persona, template)
    usr = user_prompt(item)
    if not chat:
        return Prompt(system="", user=f"{sys_p}\n\n{usr}")
    return Prompt(system=sys_p, user=usr)
