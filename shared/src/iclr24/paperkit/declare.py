"""Declaring a paper package's claims: ``package_paper``, the ``Paper`` a ``reproduce.py`` registers, read from the
names every such module defines (``NAME``, ``run``, ``CLAIMS``, ``paper_scale``) and from the package's own metadata
(its title is the ``description`` of its ``pyproject.toml``)."""

from __future__ import annotations

import sys
from importlib.metadata import metadata
from typing import Any

from .paper import Paper

__all__ = ["package_paper"]


def package_paper(module: str, summary: str, **fields: Any) -> Paper:
    """The :class:`Paper` of the ``reproduce`` module named ``module`` (call it as ``package_paper(__name__, ...)``
    as the module's last statement, so every name below is defined): ``name`` is its ``NAME``, ``title`` the
    description of the distribution ``iclr24-<NAME>`` (its ``pyproject.toml``, so the title has one home),
    ``run`` its ``run``, ``claims`` its ``CLAIMS`` and ``paper_scale`` its ``paper_scale`` (``None`` where it has
    none). ``summary`` and any other ``Paper`` field (``data``, ``threads``, ``budgets``, ``pin_dispatch``) are
    given; a given field wins over the one read."""
    here = vars(sys.modules[module])
    name = fields.pop("name", here.get("NAME"))
    if not isinstance(name, str) or not name:
        raise ValueError(f"package_paper: {module} defines no NAME (give name=)")
    read = {
        "name": name,
        "title": metadata(f"iclr24-{name}")["Summary"],
        "run": here.get("run"),
        "claims": here.get("CLAIMS", ()),
        "paper_scale": here.get("paper_scale"),
    }
    return Paper(summary=summary, **{**read, **fields})
