"""S: supervised probing (paper Sec. 3.1): how much task information the frozen features hold.

Two probes:

- :func:`frozen_encoder_probe`, the **official** probe (``pathology_turing/run_classifier.py: train_path_frozen``,
  run by ``prostate/run_linear_probe.py``): the embeddings and every encoder layer are frozen, and the model's own
  pooler (dense + tanh on [CLS]) and classifier are trained with the fine-tuning recipe (AdamW, linear warm-up over
  20% then decay, clipping at 1.0, inverse-frequency weighted sampler); the epoch with the best validation accuracy
  is kept. With every layer frozen the encoder's output does not change, so the [CLS] states are computed once and
  the head is trained on them (the official loop runs the frozen encoder in train mode each step, so its dropout
  perturbs the states; here they are clean).
- :func:`logistic_probe`: a class-balanced logistic regression on standardised features of any layer (fast,
  reported beside the official probe).
"""

from __future__ import annotations

import copy
import warnings
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import field

import numpy as np
import torch
from torch import nn

from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import check_array
from iclr24.paperkit.errors import check_float
from iclr24.paperkit.errors import describe

__all__ = [
    "ProbeConfig",
    "ProbeResult",
    "freeze_for_probe",
    "frozen_encoder_probe",
    "layerwise_probe",
    "logistic_probe",
    "probe_head",
]


def _check_xy(x_train, y_train, x_test, y_test) -> tuple[np.ndarray, ...]:
    x_train, x_test = check_array(x_train, "x_train", ndim=2), check_array(x_test, "x_test", ndim=2)
    y_train = check_array(y_train, "y_train", ndim=1, kind="int")
    y_test = check_array(y_test, "y_test", ndim=1, kind="int")
    if x_train.ndim != 2 or x_test.ndim != 2 or x_train.shape[1] != x_test.shape[1]:
        raise InputError(
            f"expected (N, d) train/test features of equal d, got {x_train.shape} and {x_test.shape}"
        )
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise InputError("features and labels differ in length")
    if len(np.unique(y_train)) < 2:
        raise InputError("the probe needs at least two classes in the training labels")
    unseen = sorted(set(np.unique(y_test).tolist()) - set(np.unique(y_train).tolist()))
    if unseen:  # rare classes of a small real task: scored (F1 0 for them), but said
        warnings.warn(
            f"test labels {unseen[:5]} have no training example, so the probe cannot predict them (their F1 is 0)",
            stacklevel=3,
        )
    return x_train, y_train, x_test, y_test


def logistic_probe(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, c: float = 1.0
) -> float:
    """Macro-F1 of a class-balanced logistic regression on standardised features (unscaled mid-layer features
    make the probe fail, so standardise first)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, y_train, x_test, y_test = _check_xy(x_train, y_train, x_test, y_test)
    check_float(c, "c", minimum=0, open_min=True)
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000, class_weight="balanced"))
    clf.fit(x_train, y_train)
    return float(f1_score(y_test, clf.predict(x_test), average="macro"))


def layerwise_probe(
    f_train: np.ndarray, y_train: np.ndarray, f_test: np.ndarray, y_test: np.ndarray
) -> np.ndarray:
    """``logistic_probe`` on each layer of (L+1, N, d) stacks: shape (L+1,)."""
    f_train, f_test = check_array(f_train, "f_train", ndim=3), check_array(f_test, "f_test", ndim=3)
    if f_train.ndim != 3 or f_test.ndim != 3 or len(f_train) != len(f_test):
        raise InputError(
            f"expected (L+1, N, d) stacks with equal L+1, got {f_train.shape} and {f_test.shape}"
        )
    return np.array([logistic_probe(f_train[i], y_train, f_test[i], y_test) for i in range(len(f_train))])


def freeze_for_probe(model, freeze_layer_count: int):
    """The official probe's freezing: embeddings and the first ``freeze_layer_count`` encoder layers get
    ``requires_grad=False``; with k = L only the pooler and the classifier train. Returns the model."""
    base = model.base_model
    n = base.config.num_hidden_layers
    if isinstance(freeze_layer_count, bool) or not isinstance(freeze_layer_count, int):
        raise InputError(f"freeze_layer_count must be an int, got {freeze_layer_count!r}")
    if not 0 <= freeze_layer_count <= n:
        raise InputError(f"freeze_layer_count must be in [0, {n}], got {freeze_layer_count}")
    for p in base.embeddings.parameters():
        p.requires_grad = False
    for layer in base.encoder.layer[:freeze_layer_count]:
        for p in layer.parameters():
            p.requires_grad = False
    return model


class _Head(nn.Module):
    """pooler -> dropout -> classifier of a BERT-style sequence classifier, on last-layer [CLS] states (B, d)."""

    def __init__(self, pooler: nn.Module, dropout: nn.Module, classifier: nn.Linear):
        super().__init__()
        self.pooler, self.dropout, self.classifier = pooler, dropout, classifier

    def forward(self, cls: torch.Tensor) -> torch.Tensor:
        # the pooler reads position 0 of a (B, T, d) sequence (the official notebook feeds (B, 1, d) the same way)
        return self.classifier(self.dropout(self.pooler(cls[:, None, :])))


def probe_head(model) -> nn.Module:
    """A copy of the trainable part of the official probe (k = L): the model's pooler, dropout and classifier.
    Copy it before the model is fine-tuned; the copy is independent of the model."""
    pooler = getattr(getattr(model, "base_model", None), "pooler", None)
    classifier = getattr(model, "classifier", None)
    if pooler is None or not isinstance(classifier, nn.Linear):
        raise InputError(
            f"the official probe needs a BERT-style classifier with a pooler and a linear classifier, got "
            f"{type(model).__name__}; use logistic_probe on its features instead"
        )
    dropout = getattr(model, "dropout", None)
    return _Head(
        copy.deepcopy(pooler),
        copy.deepcopy(dropout) if isinstance(dropout, nn.Module) else nn.Identity(),
        copy.deepcopy(classifier),
    ).float()


@dataclass(frozen=True)
class ProbeConfig:
    """The official probe's recipe (``prostate/run_linear_probe.py``: lr 7.6e-6, batch 8, 25 epochs, warm-up 20%,
    weight decay 0.01, clip 1.0, best epoch by validation accuracy). The reproduction's CPU-scale lr is set in
    ``reproduce.py``."""

    lr: float = 7.6e-6
    batch_size: int = 8
    epochs: int = 25
    warmup_fraction: float = 0.2
    weight_decay: float = 0.01
    eps: float = 1e-8
    max_grad_norm: float = 1.0
    best_metric: str = "accuracy"
    seed: int = 0

    def __post_init__(self) -> None:
        from .finetune import BEST_METRICS
        from .finetune import check_recipe

        check_recipe(self)
        if self.best_metric not in BEST_METRICS:
            raise InputError(f"best_metric must be one of {BEST_METRICS}, got {self.best_metric!r}")


@dataclass
class ProbeResult:
    """Test macro-F1 and accuracy of the head at ``best_epoch`` (chosen on the validation set)."""

    test_macro_f1: float
    test_accuracy: float
    best_epoch: int
    best_val_score: float
    history: list[dict] = field(default_factory=list)

    def to_dict(self) -> dict:
        return asdict(self)


def frozen_encoder_probe(
    head: nn.Module,
    f_train: np.ndarray,
    y_train: np.ndarray,
    f_val: np.ndarray,
    y_val: np.ndarray,
    f_test: np.ndarray,
    y_test: np.ndarray,
    config: ProbeConfig = ProbeConfig(),
) -> ProbeResult:
    """The official frozen-encoder probe: train ``head`` (from :func:`probe_head`; trained in place) on the frozen
    encoder's last-layer [CLS] states ``f_*`` (N, d) with the fine-tuning recipe, keep the epoch with the best
    validation ``config.best_metric`` (the first on ties), and score the test states."""
    from .finetune import _adamw_with_warmup
    from .finetune import balanced_sampler
    from .finetune import score

    f_train, y_train, f_test, y_test = _check_xy(f_train, y_train, f_test, y_test)
    f_val, y_val = check_array(f_val, "f_val", ndim=2), check_array(y_val, "y_val", ndim=1, kind="int")
    if f_val.ndim != 2 or f_val.shape[1] != f_train.shape[1] or len(f_val) != len(y_val) or len(f_val) == 0:
        raise InputError(
            f"expected (N, {f_train.shape[1]}) validation features with one label each, got {f_val.shape}"
        )
    if not isinstance(config, ProbeConfig):
        raise InputError(f"config must be a ProbeConfig, got {type(config).__name__}")
    if not isinstance(head, nn.Module) or not hasattr(head, "classifier"):
        raise InputError(f"head must be the module probe_head(model) returns, got {describe(head)}")
    n_out = head.classifier.out_features
    if int(max(y_train.max(), y_val.max(), y_test.max())) >= n_out or min(y_train.min(), y_test.min()) < 0:
        raise InputError(f"labels must lie in [0, {n_out}) (the classifier has {n_out} outputs)")
    xs = {
        k: torch.as_tensor(v, dtype=torch.float32)
        for k, v in (("tr", f_train), ("va", f_val), ("te", f_test))
    }
    ytr = torch.as_tensor(y_train, dtype=torch.long)
    torch.manual_seed(config.seed)
    sampler = balanced_sampler(y_train, seed=config.seed)
    opt, sched, _ = _adamw_with_warmup(head, config, len(y_train))
    loss_fn = nn.CrossEntropyLoss()

    def predict(x: torch.Tensor) -> np.ndarray:
        head.eval()
        with torch.no_grad():
            return head(x).argmax(-1).numpy()

    best, best_state, best_epoch, history = -1.0, None, 0, []
    for epoch in range(1, config.epochs + 1):
        head.train()
        order = list(sampler)
        losses = []
        for s in range(0, len(order), config.batch_size):
            idx = order[s : s + config.batch_size]
            loss = loss_fn(head(xs["tr"][idx]), ytr[idx])
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(head.parameters(), config.max_grad_norm)
            opt.step()
            sched.step()
            losses.append(float(loss.detach()))
        sc = score(y_val, predict(xs["va"]))
        history.append(
            {"epoch": epoch, "loss": float(np.mean(losses)), **{f"val_{k}": v for k, v in sc.items()}}
        )
        if sc[config.best_metric] > best:
            best, best_epoch, best_state = sc[config.best_metric], epoch, copy.deepcopy(head.state_dict())
    head.load_state_dict(best_state)
    te = score(y_test, predict(xs["te"]))
    return ProbeResult(te["macro_f1"], te["accuracy"], best_epoch, best, history)
