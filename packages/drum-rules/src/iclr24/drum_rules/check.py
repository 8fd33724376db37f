"""Soundness and completeness of a rule program against the model, on any list of datasets.

``T_M(D) = {q(h, t) : score_{M,D}(q, h, t) >= beta}`` (one non-recursive step). On each dataset:
precision = |T_Pi(D) ∩ T_M(D)| / |T_Pi(D)| (soundness) and recall = |T_Pi(D) ∩ T_M(D)| / |T_M(D)| (completeness).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from dataclasses import field

import numpy as np

from iclr24.paperkit.errors import InputError

from ._checks import check_beta
from ._checks import check_heads
from ._checks import check_kg
from ._checks import check_kgs
from .datalog import consequences
from .kg import KG
from .kg import encode_facts
from .model import DRUM
from .rules import RuleProgram

__all__ = ["model_consequences", "FaithfulnessReport", "check_faithfulness"]


def model_consequences(model: DRUM, kg: KG, beta: float, heads: Iterable[int] | None = None) -> np.ndarray:
    """``T_M(D)`` as sorted fact ids: every ``(h, q, t)`` with ``score >= beta`` for the head relations."""
    check_beta(beta)
    check_kg(kg)
    hs = check_heads(model, heads)
    parts = []
    for q in hs:
        S = model.score_matrix(int(q), kg)
        # Eq. (model consequences): T_M(D) = {q(h,t) : score_{M,D}(q,h,t) >= beta}
        h, t = np.nonzero(S >= beta)
        parts.append(encode_facts(h, np.full(len(h), int(q)), t, kg.n_entities))
    return np.unique(np.concatenate(parts)) if parts else np.zeros(0, dtype=np.int64)


@dataclass
class FaithfulnessReport:
    """Per-dataset precision/recall of the program's consequences against the model's."""

    per_dataset: list[dict] = field(default_factory=list)
    program_complete: bool = True

    @property
    def precision(self) -> float:
        """The worst (minimum) precision over datasets."""
        return min((d["precision"] for d in self.per_dataset), default=1.0)

    @property
    def recall(self) -> float:
        """The worst (minimum) recall over datasets."""
        return min((d["recall"] for d in self.per_dataset), default=1.0)

    @property
    def mean_precision(self) -> float:
        return float(np.mean([d["precision"] for d in self.per_dataset])) if self.per_dataset else 1.0

    @property
    def mean_recall(self) -> float:
        return float(np.mean([d["recall"] for d in self.per_dataset])) if self.per_dataset else 1.0

    @property
    def sound(self) -> bool:
        return all(d["n_rules_only"] == 0 for d in self.per_dataset)

    @property
    def complete(self) -> bool:
        return all(d["n_model_only"] == 0 for d in self.per_dataset)

    @property
    def faithful(self) -> bool:
        """Sound and complete on every dataset, and the program itself was extracted completely."""
        return self.sound and self.complete and self.program_complete

    def summary(self) -> dict:
        return {
            "datasets": len(self.per_dataset),
            "precision_min": self.precision,
            "recall_min": self.recall,
            "precision_mean": self.mean_precision,
            "recall_mean": self.mean_recall,
            "sound": self.sound,
            "complete": self.complete,
            "program_complete": self.program_complete,
            "faithful": self.faithful,
        }

    def __str__(self) -> str:
        s = self.summary()
        return (
            f"{s['datasets']} datasets: precision min {s['precision_min']:.4f} (mean {s['precision_mean']:.4f}), "
            f"recall min {s['recall_min']:.4f} (mean {s['recall_mean']:.4f}); sound={s['sound']} "
            f"complete={s['complete']} program_complete={s['program_complete']}"
        )


def check_faithfulness(
    model: DRUM,
    rules: RuleProgram,
    datasets: KG | list[KG],
    beta: float | None = None,
    heads: Iterable[int] | None = None,
    cache: dict | None = None,
) -> FaithfulnessReport:
    """Compare ``T_Pi(D)`` with ``T_M(D)`` on each dataset (``beta`` defaults to the program's). ``cache``: a dict
    to reuse ``T_M(D)`` across calls with the same (unchanged) model and datasets."""
    datasets = check_kgs(datasets)
    if not isinstance(rules, RuleProgram):
        raise InputError(
            f"rules must be a RuleProgram (from path_rules/faithful_rules), got {type(rules).__name__}"
        )
    beta = rules.beta if beta is None else check_beta(beta)
    hs = list(rules.heads or model.head_relations) if heads is None else list(heads)
    rep = FaithfulnessReport(program_complete=rules.complete)
    for kg in datasets:
        key = (id(model), id(kg), beta, tuple(hs), model.normalize, model.aggregation)
        if cache is not None and key in cache:
            m = cache[key]
        else:
            m = model_consequences(model, kg, beta, hs)
            if cache is not None:
                cache[key] = m
        p = consequences(rules, kg, hs)
        both = len(np.intersect1d(m, p, assume_unique=True))
        rep.per_dataset.append(
            {
                "dataset": kg.name,
                "n_model": int(len(m)),
                "n_rules": int(len(p)),
                "n_both": both,
                "n_rules_only": int(len(p) - both),
                "n_model_only": int(len(m) - both),
                "precision": both / len(p) if len(p) else 1.0,
                "recall": both / len(m) if len(m) else 1.0,
            }
        )
    return rep
