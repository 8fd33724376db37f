"""Training (the reference code's loss and defaults), beta by validation F1, and link-prediction metrics."""

from __future__ import annotations

import copy
import os
import warnings
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from torch import nn

from iclr24.paperkit import progress
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import check_int
from iclr24.paperkit.errors import describe
from iclr24.paperkit.resume import check_checkpoint_arg

from .kg import KG
from .kg import KGData
from .model import DRUM

__all__ = [
    "TrainConfig",
    "train",
    "search_for_beta",
    "f1_at",
    "select_beta",
    "link_prediction",
    "classification_metrics",
    "auc_pr",
    "OFFICIAL_AUC_THRESHOLDS",
    "DegenerateBetaWarning",
]

# The official ``get_test_auc`` sweeps beta over 0.01, 0.02, ..., 2.99.
OFFICIAL_AUC_THRESHOLDS = np.round(np.arange(1, 300) * 0.01, 2)


class DegenerateBetaWarning(UserWarning):
    """beta chosen by validation F1 predicts (nearly) every candidate fact: the 'rules' it yields say nothing."""


@dataclass(frozen=True)
class TrainConfig:
    """FaithfulRE defaults: Adam 1e-3, batch 64 (doubled by inverse queries), at most 10 epochs, early stop once
    validation loss rises after ``min_epochs``, seed 33, trained *with* L1 normalisation and CrossEntropy over the
    score vector (``loss="nll"`` is original DRUM's ``-log max(score, thr)``)."""

    epochs: int = 10
    min_epochs: int = 5
    batch_size: int = 64
    lr: float = 1e-3
    seed: int = 33
    normalize: bool = True
    loss: str = "ce"
    inverse_queries: bool = True
    restore_best: bool = True

    def __post_init__(self) -> None:
        check_int(self.epochs, "epochs", minimum=1, maximum=10**6)
        check_int(self.min_epochs, "min_epochs", minimum=0, maximum=10**6)
        check_int(self.batch_size, "batch_size", minimum=1, maximum=2**20)
        check_int(self.seed, "seed", minimum=0, maximum=2**63 - 1)
        check_float(self.lr, "lr", minimum=0, maximum=10, open_min=True)
        if self.loss not in ("ce", "nll"):
            raise InputError(f"loss must be 'ce' (FaithfulRE) or 'nll' (DRUM), got {self.loss!r}")


def _check_model_data(model: object, data: object) -> None:
    from .model import DRUM

    if not isinstance(model, DRUM):
        raise InputError(f"model must be a DRUM, got {describe(model)}")
    if not isinstance(data, KGData):
        raise InputError(f"data must be a KGData (load_dataset, synthetic.family), got {describe(data)}")


def _queries(triples: np.ndarray, n_relations: int, inverse: bool) -> np.ndarray:
    """``(q, tail, target head)`` rows; inverse queries ``(r + R, h) -> t`` are appended."""
    q = np.stack([triples[:, 1], triples[:, 2], triples[:, 0]], axis=1)
    if inverse:
        q = np.concatenate([q, np.stack([triples[:, 1] + n_relations, triples[:, 0], triples[:, 2]], axis=1)])
    return q


def _loss(scores: torch.Tensor, target: torch.Tensor, kind: str, thr: float) -> torch.Tensor:
    if kind == "ce":
        return nn.functional.cross_entropy(
            scores, target
        )  # FaithfulRE: CrossEntropy(score vector, true head)
    return -torch.log(scores[torch.arange(len(target)), target].clamp_min(thr)).mean()  # DRUM: -log score


def _epoch_loss(model: DRUM, q: np.ndarray, kg: KG, cfg: TrainConfig) -> float:
    total = 0.0
    with torch.no_grad():
        for s in range(0, len(q), 2 * cfg.batch_size):
            b = torch.as_tensor(q[s : s + 2 * cfg.batch_size])
            sc = model(b[:, 0], b[:, 1], kg, normalize=cfg.normalize)
            total += float(_loss(sc, b[:, 2], cfg.loss, model.thr)) * len(b)
    return total / max(1, len(q))


def _training_triples(queries: object, model: DRUM, data: KGData) -> np.ndarray:
    """The training triples ``(h, r, t)``: ``data.train``, or the user's ``queries`` (an ``(n, 3)`` array or tensor,
    a ``Dataset`` of ``(h, r, t)`` items, or a ``DataLoader`` of such batches, read once in its order)."""
    from iclr24.paperkit.data.user import as_tensors

    from .kg import as_triples

    if queries is None:
        return data.train
    if not isinstance(queries, np.ndarray):
        parts = as_tensors(queries, what="queries")
        if len(parts) == 3:  # (h, r, t) as three fields
            if any(p.dim() > 1 for p in parts):
                raise InputError(
                    f"queries: three fields (h, r, t) must each hold one index per example, got shapes "
                    f"{[tuple(p.shape) for p in parts]}"
                )
            parts = (torch.stack([p.reshape(-1) for p in parts], dim=1),)
        if len(parts) != 1:
            raise InputError(
                f"queries: expected (h, r, t) triples (one (n, 3) field or three index fields), got "
                f"{len(parts)} fields"
            )
        queries = parts[0].detach().cpu().numpy()
    arr = as_triples(queries, "queries")
    if len(arr) == 0:
        raise InputError("queries: no training triples; a rule learner needs training queries")
    E, R = data.kg.n_entities, model.n_relations
    bad = (
        (arr[:, [0, 2]] < 0).any(axis=1)
        | (arr[:, [0, 2]] >= E).any(axis=1)
        | (arr[:, 1] < 0)
        | (arr[:, 1] >= R)
    )
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InputError(
            f"queries: triple {i} = {arr[i].tolist()} is out of range (entities in [0, {E}), relations in "
            f"[0, {R}) of {data.name})"
        )
    return arr


def train(
    model: DRUM,
    data: KGData,
    config: TrainConfig = TrainConfig(),
    show_progress: bool = False,
    *,
    queries: object = None,
    callbacks: object = None,
    log_dir: str | os.PathLike | None = None,
    checkpoint: str | os.PathLike | None = None,
    resume: bool = False,
) -> dict:
    """Train ``model`` on ``data.train`` over the background facts ``data.kg``; returns the loss history.

    Sets ``model.head_relations`` to the relations queried in training (the heads rules are extracted for).

    ``queries``: your own training triples ``(h, r, t)`` in place of ``data.train`` (an ``(n, 3)`` array or tensor,
    a ``Dataset`` of triples or a ``DataLoader`` of them, read once in its order; the result equals passing the
    same triples as an array). ``callbacks`` / ``log_dir``: one :class:`~iclr24.paperkit.tracking.StepLog`, called
    after every Adam step with ``loss`` and ``epoch`` and after every epoch with ``train_loss`` and
    ``valid_loss`` (``log_dir``: ``metrics.jsonl``, TensorBoard files when installed). ``checkpoint``: a file
    written after every epoch (model, optimiser, the shuffling generator, the history); with ``resume=True`` an
    existing one is continued, so an interrupted run resumed ends bit for bit as the uninterrupted one."""
    from iclr24.paperkit.resume import load_train_state
    from iclr24.paperkit.resume import save_train_state
    from iclr24.paperkit.tracking import StepLog

    _check_model_data(model, data)
    if not isinstance(config, TrainConfig):
        raise InputError(f"config must be a TrainConfig, got {describe(config)}")
    if model.has_fixed_attention:
        raise InputError("a model with fixed attention has no trainable attention; build DRUM(...) to train")
    model._check_kg(data.kg)
    check_checkpoint_arg(checkpoint, resume)
    cfg = config
    triples = _training_triples(queries, model, data)
    gen = torch.Generator().manual_seed(cfg.seed)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    train_q = _queries(triples, model.n_relations, cfg.inverse_queries)
    valid_q = _queries(data.valid, model.n_relations, cfg.inverse_queries) if len(data.valid) else train_q[:0]
    hist: dict = {"train_loss": [], "valid_loss": [], "config": asdict(cfg)}
    best, best_state = float("inf"), None
    start, step, stopped = 0, 0, False
    meta = {
        "config": asdict(cfg),
        "model": {k: v for k, v in model.config().items() if k != "head_relations"},
        "queries": len(train_q),
    }
    if resume and Path(checkpoint).exists():
        saved: dict = {}
        start = load_train_state(
            checkpoint, model=model, optimizer=opt, generators={"shuffle": gen}, expect=meta, into=saved,
            what="drum-rules training state",
        )  # fmt: skip
        hist["train_loss"], hist["valid_loss"] = list(saved["train_loss"]), list(saved["valid_loss"])
        best, best_state = float(saved["best"]), saved["best_state"]
        step, stopped = int(saved["step"]), bool(saved["stopped"])
    with StepLog(log_dir, callbacks, name="drum_rules") as log:
        epochs = range(start, cfg.epochs) if not stopped else range(0)
        bar = progress(epochs, desc=f"train {model.aggregation}", disable=not show_progress)
        for epoch in bar:
            model.train()
            perm = torch.randperm(len(train_q), generator=gen).numpy()
            total = 0.0
            for s in range(0, len(perm), 2 * cfg.batch_size):
                b = torch.as_tensor(train_q[perm[s : s + 2 * cfg.batch_size]])
                sc = model(b[:, 0], b[:, 1], data.kg, normalize=cfg.normalize)
                loss = _loss(sc, b[:, 2], cfg.loss, model.thr)
                opt.zero_grad()
                loss.backward()
                opt.step()
                value = float(loss.detach())
                total += value * len(b)
                step += 1
                log(step, {"loss": value, "epoch": epoch})
            hist["train_loss"].append(total / len(train_q))
            model.eval()
            vl = _epoch_loss(model, valid_q, data.kg, cfg) if len(valid_q) else hist["train_loss"][-1]
            hist["valid_loss"].append(vl)
            log(step, {"train_loss": hist["train_loss"][-1], "valid_loss": vl, "epoch": epoch})
            if vl < best:
                best, best_state = vl, copy.deepcopy(model.state_dict())
            # early stop: validation loss rose
            stopped = (
                epoch + 1 >= cfg.min_epochs and len(hist["valid_loss"]) > 1 and vl > hist["valid_loss"][-2]
            )
            if checkpoint is not None:
                save_train_state(
                    checkpoint, step=epoch + 1, model=model, optimizer=opt, generators={"shuffle": gen}, meta=meta,
                    extra={"train_loss": hist["train_loss"], "valid_loss": hist["valid_loss"], "best": best,
                           "best_state": best_state, "step": step, "stopped": stopped},
                )  # fmt: skip
            if stopped:
                break
        if cfg.restore_best and best_state is not None:
            model.load_state_dict(best_state)
        model.head_relations = sorted(set(triples[:, 1].tolist()))
        hist["epochs_run"] = len(hist["train_loss"])
        hist["steps"] = step
        log.close({"epochs_run": hist["epochs_run"], "steps": step, "best_valid_loss": best})
    return hist


# ---------------------------------------------------------------------------------------------------- beta and F1
def classification_metrics(scores: np.ndarray, labels: np.ndarray, beta: float) -> dict:
    """Precision, recall, accuracy and F1 of ``score >= beta`` against 0/1 labels (the paper's T_M(D); the
    official code uses ``>``, which differs only for scores exactly equal to beta)."""
    pred = np.asarray(scores) >= beta
    y = np.asarray(labels).astype(bool)
    tp, fp = int((pred & y).sum()), int((pred & ~y).sum())
    fn, tn = int((~pred & y).sum()), int((~pred & ~y).sum())
    prec = tp / (tp + fp) if tp + fp else 0.0
    rec = tp / (tp + fn) if tp + fn else 0.0
    f1 = 2 * prec * rec / (prec + rec) if prec + rec else 0.0
    return {"precision": prec, "recall": rec, "accuracy": (tp + tn) / max(1, len(y)), "f1": f1, "beta": beta}


def f1_at(scores: np.ndarray, labels: np.ndarray, beta: float) -> float:
    return classification_metrics(scores, labels, beta)["f1"]


def auc_pr(
    scores: np.ndarray,
    labels: np.ndarray,
    thresholds: np.ndarray | str | None = None,
    skip_empty: bool = False,
) -> float:
    """Area under the precision-recall curve as the official ``get_test_auc`` computes it: for every threshold
    b the precision and recall of ``score > b``, the end points (recall 1, precision 0) and (recall 0,
    precision 1) added, then the trapezoid rule over recall.

    ``thresholds``: None = the official grid 0.01..2.99 (:data:`OFFICIAL_AUC_THRESHOLDS`: a model whose scores
    are all below 0.01, common without normalisation, predicts nothing at any of them); ``"scores"`` = every
    distinct score (the full curve); or an array. ``skip_empty=False`` is the official handling of a threshold
    that predicts nothing: its precision (0/0) becomes 0, so even a perfect ranking scores 0.5 on the official
    grid; ``skip_empty=True`` leaves such thresholds out (a perfect ranking then scores 1)."""
    s = np.asarray(scores, dtype=np.float64).reshape(-1)
    y = np.asarray(labels).reshape(-1)
    if len(s) == 0 or len(s) != len(y) or not set(np.unique(y).tolist()) <= {0, 1} or not y.any():
        raise InputError(
            f"need as many 0/1 labels as scores with at least one positive, got {len(s)} scores, {len(y)} labels"
        )
    if not np.isfinite(s).all():
        raise InputError("scores must be finite")
    y = y.astype(bool)
    if thresholds is None:
        b = OFFICIAL_AUC_THRESHOLDS
    elif isinstance(thresholds, str):
        if thresholds != "scores":
            raise InputError(f"thresholds must be None, 'scores' or an array, got {thresholds!r}")
        b = np.concatenate([[-np.inf], np.unique(s)])
    else:
        b = np.sort(np.asarray(thresholds, dtype=np.float64).reshape(-1))
    pred = s[None, :] > b[:, None]  # (n_thresholds, n)
    tp = (pred & y).sum(1)
    npred = pred.sum(1)
    if skip_empty:
        tp, npred = tp[npred > 0], npred[npred > 0]
    prec = np.where(npred > 0, tp / np.maximum(npred, 1), 0.0)
    rec = tp / y.sum()
    P = np.concatenate([[0.0], prec, [1.0]])
    R = np.concatenate([[1.0], rec, [0.0]])
    # AUC = -integral of precision d(recall), recall running from 1 down to 0 (official: -np.trapz(P, R))
    return float(-np.sum((R[1:] - R[:-1]) * (P[1:] + P[:-1]) / 2)) + 0.0  # + 0.0: no -0.0


def search_for_beta(
    scores: np.ndarray,
    labels: np.ndarray,
    low: float = 0.0,
    high: float | None = None,
    gap: float = 1e-6,
    method: str = "grid",
) -> float:
    """The threshold beta maximising F1 of ``score >= beta`` on labelled validation scores.

    ``method="grid"`` (the reference code): 11 evenly spaced candidates in [low, high], narrow to the neighbours of
    the best one, repeat until ``high - low < gap``; among ties take the middle one. ``method="exact"``: every
    distinct score is a candidate, beta is placed halfway between the best score and the next lower one."""
    scores = check_array(scores, "scores").reshape(-1)
    labels = check_array(labels, "labels", kind="int").reshape(-1)
    check_float(low, "low")
    if high is not None:
        check_float(high, "high", minimum=low, open_min=True)
    check_float(gap, "gap", minimum=0, open_min=True)
    if len(scores) == 0 or len(scores) != len(labels):
        raise InputError(
            f"need as many labels as scores (and at least one), got {len(scores)} and {len(labels)}"
        )
    if not set(np.unique(labels).tolist()) <= {0, 1} or labels.sum() == 0:
        raise InputError("labels must be 0/1 with at least one positive")
    if method == "exact":
        cand = np.unique(scores)[::-1]
        f1s = [f1_at(scores, labels, c) for c in cand]
        i = int(np.argmax(f1s))
        nxt = cand[i + 1] if i + 1 < len(cand) else 0.0
        return float((cand[i] + nxt) / 2) if cand[i] > nxt else float(cand[i])
    if method != "grid":
        raise InputError(f"method must be 'grid' or 'exact', got {method!r}")
    high = float(scores.max()) * 1.0001 + 1e-12 if high is None else float(high)
    low = float(low)
    for _ in range(10_000):  # each round narrows [low, high] ten-fold: ~40 rounds reach any gap > 0
        betas = [low + (high - low) * i / 10 for i in range(11)]
        f1s = [f1_at(scores, labels, b) for b in betas]
        best = max(f1s)
        ind = f1s.index(best)
        if high - low < gap:
            break
        if ind == 0:
            high = low + (high - low) * 0.1
        elif ind == 10:
            low = low + (high - low) * 0.9
        else:
            low, high = low + (high - low) * (ind - 1) / 10, low + (high - low) * (ind + 1) / 10
    last = max(i for i, f in enumerate(f1s) if f == best)
    return float(betas[(ind + last) // 2])


def select_beta(
    model: DRUM, data: KGData, method: str = "grid", degenerate: float = 0.9
) -> tuple[float, dict]:
    """beta maximising validation F1 (the model's own semantics, over ``data.kg``); also returns test metrics
    (precision, recall, accuracy, F1 at beta, AUC-PR). Warns (:class:`DegenerateBetaWarning`) and marks
    ``"degenerate": True`` when beta accepts a fraction ``>= degenerate`` of the validation negatives."""
    _check_model_data(model, data)
    check_float(degenerate, "degenerate", minimum=0, maximum=1)
    if method not in ("grid", "exact"):
        raise InputError(f"method must be 'grid' or 'exact', got {method!r}")
    if data.valid_labelled is None:
        raise InputError(
            f"{data.name} has no labelled validation set (positives and negatives) to choose beta"
        )
    v = data.valid_labelled
    vs = model.score_triples(v[:, :3], data.kg)
    beta = search_for_beta(vs, v[:, 3], method=method)
    out = {"beta": beta, "valid": classification_metrics(vs, v[:, 3], beta)}
    neg = v[:, 3] == 0
    out["valid_negatives_predicted"] = float((vs[neg] >= beta).mean()) if neg.any() else 0.0
    if data.test_labelled is not None:
        t = data.test_labelled
        ts = model.score_triples(t[:, :3], data.eval_kg)
        out["test"] = {
            **classification_metrics(ts, t[:, 3], beta),
            "auc_pr": auc_pr(ts, t[:, 3]),
            "auc_pr_all_thresholds": auc_pr(ts, t[:, 3], "scores", skip_empty=True),
        }
    if out["valid_negatives_predicted"] >= degenerate:
        out["degenerate"] = True
        warnings.warn(
            f"beta = {beta:.3g} chosen by validation F1 accepts {100 * out['valid_negatives_predicted']:.0f}% of "
            f"the validation negatives of {data.name}: the model separates nothing at this threshold, and a "
            "program extracted at it predicts nearly every candidate fact (train longer, or use a model "
            "whose scores separate positives from negatives)",
            DegenerateBetaWarning,
            stacklevel=2,
        )
    return beta, out


# ---------------------------------------------------------------------------------------------------- ranking
def _binomial_half(n: int) -> np.ndarray:
    """``P(X = x)`` for ``X ~ Binomial(n, 1/2)``, ``x = 0..n`` (log space: exact for any n)."""
    from scipy.special import gammaln

    x = np.arange(n + 1)
    return np.exp(gammaln(n + 1) - gammaln(x + 1) - gammaln(n - x + 1) - n * np.log(2.0))


TIES = ("random", "expected", "mean", "optimistic", "pessimistic")


@torch.no_grad()
def link_prediction(
    model: DRUM,
    data: KGData,
    split: str = "test",
    batch_size: int = 128,
    ties: str = "random",
    seed: int = 0,
) -> dict:
    """Filtered MRR and Hits@{1,3,10} over ``(q, ?, t)`` and the inverse ``(q^-1, ?, h)`` queries. Known facts
    of every split and the KB are filtered.

    Score ties, as in DRUM's ``get_predictions``: ``"random"`` (its ``rand_break``: each candidate tied with the
    answer ranks above it with probability 1/2, seeded by ``seed``), ``"optimistic"`` (its default ``p > p_head``),
    ``"pessimistic"`` (its ``adv_rank``), or ``"mean"`` (expected rank: half the tied candidates above).
    ``"expected"``: the exact expectation of ``"random"`` over its coin flips (the reciprocal rank and the Hits@k
    indicator averaged over ``Binomial(ties, 1/2)`` candidates above), so MRR and Hits@k carry no tie-breaking
    noise; the per-query ``ranks`` are then the expected ranks."""
    _check_model_data(model, data)
    if ties not in TIES:
        raise InputError(f"ties must be one of {TIES}, got {ties!r}")
    if split not in ("train", "valid", "test"):
        raise InputError(f"split must be 'train', 'valid' or 'test', got {split!r}")
    check_int(batch_size, "batch_size", minimum=1, maximum=2**20)
    triples = getattr(data, split)
    if not len(triples):
        raise InputError(f"{data.name} has an empty {split} split")
    kg = data.eval_kg if split == "test" else data.kg
    R, E = model.n_relations, kg.n_entities
    known = [data.kg.facts, data.train, data.valid, data.test]
    if data.test_kg is not None:
        known.append(data.test_kg.facts)
    allf = np.concatenate(known)
    # filters keyed by (query, tail) -> set of true heads (inverse queries use r + R)
    filt: dict[tuple[int, int], set[int]] = {}
    for h, r, t in allf.tolist():
        filt.setdefault((r, t), set()).add(h)
        filt.setdefault((r + R, h), set()).add(t)
    q = _queries(triples, R, inverse=True)
    rng = np.random.default_rng(seed)
    ranks, n_tied = [], 0
    rr, hits = [], {k: [] for k in (1, 3, 10)}  # expectations over the tie-breaking (ties="expected")
    for s in range(0, len(q), batch_size):
        b = q[s : s + batch_size]
        sc = model(torch.as_tensor(b[:, 0]), torch.as_tensor(b[:, 1]), kg, dtype=torch.float64).numpy()
        for row, (qq, tt, hh) in zip(sc, b.tolist()):
            target = row[hh]
            others = [x for x in filt.get((qq, tt), ()) if x != hh]
            row = row.copy()
            row[others] = -np.inf
            greater = int((row > target).sum())
            equal = int((row == target).sum()) - 1
            n_tied += equal > 0
            if ties == "expected":
                pmf = _binomial_half(equal)  # P(x of the tied candidates rank above the answer)
                r = 1 + greater + np.arange(equal + 1)
                rr.append(float(pmf @ (1.0 / r)))
                for k in hits:
                    hits[k].append(float(pmf[r <= k].sum()))
                ranks.append(1 + greater + equal / 2)
                continue
            if ties == "random":
                above = int(rng.binomial(equal, 0.5)) if equal else 0
            elif ties == "mean":
                above = equal / 2
            else:
                above = 0 if ties == "optimistic" else equal
            ranks.append(1 + greater + above)
    ranks = np.asarray(ranks, dtype=np.float64)
    if ties == "expected":
        mrr, h = float(np.mean(rr)), {k: float(np.mean(v)) for k, v in hits.items()}
    else:
        mrr, h = float((1 / ranks).mean()), {k: float((ranks <= k).mean()) for k in (1, 3, 10)}
    return {
        "mrr": mrr,
        "hits@1": h[1],
        "hits@3": h[3],
        "hits@10": h[10],
        "n_queries": len(ranks),
        "queries_with_ties": n_tied,
        "ties": ties,
        "entities": E,
    }
