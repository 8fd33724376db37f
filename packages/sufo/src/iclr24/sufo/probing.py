"""S: supervised probing (paper Sec. 3.1, official ``run_linear_probe.py``): how much task information the frozen
features hold. Two probes: a logistic regression on standardised features of any layer, and the official probe
(freeze the embeddings and the first k encoder layers; k = L trains only the pooler and the classifier)."""

from __future__ import annotations

import numpy as np

__all__ = ["logistic_probe", "layerwise_probe", "freeze_for_probe"]


def logistic_probe(
    x_train: np.ndarray, y_train: np.ndarray, x_test: np.ndarray, y_test: np.ndarray, c: float = 1.0
) -> float:
    """Macro-F1 of a class-balanced logistic regression on standardised features (unscaled mid-layer features
    make the probe fail, so standardise first)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.metrics import f1_score
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x_train, x_test = np.asarray(x_train), np.asarray(x_test)
    y_train, y_test = np.asarray(y_train), np.asarray(y_test)
    if x_train.ndim != 2 or x_test.ndim != 2 or x_train.shape[1] != x_test.shape[1]:
        raise ValueError(
            f"expected (N, d) train/test features of equal d, got {x_train.shape} and {x_test.shape}"
        )
    if len(x_train) != len(y_train) or len(x_test) != len(y_test):
        raise ValueError("features and labels differ in length")
    if len(np.unique(y_train)) < 2:
        raise ValueError("the probe needs at least two classes in the training labels")
    clf = make_pipeline(StandardScaler(), LogisticRegression(C=c, max_iter=2000, class_weight="balanced"))
    clf.fit(x_train, y_train)
    return float(f1_score(y_test, clf.predict(x_test), average="macro"))


def layerwise_probe(
    f_train: np.ndarray, y_train: np.ndarray, f_test: np.ndarray, y_test: np.ndarray
) -> np.ndarray:
    """``logistic_probe`` on each layer of (L+1, N, d) stacks: shape (L+1,)."""
    f_train, f_test = np.asarray(f_train), np.asarray(f_test)
    if f_train.ndim != 3 or f_test.ndim != 3 or len(f_train) != len(f_test):
        raise ValueError(
            f"expected (L+1, N, d) stacks with equal L+1, got {f_train.shape} and {f_test.shape}"
        )
    return np.array([logistic_probe(f_train[i], y_train, f_test[i], y_test) for i in range(len(f_train))])


def freeze_for_probe(model, freeze_layer_count: int):
    """The official probe's freezing: embeddings and the first ``freeze_layer_count`` encoder layers get
    ``requires_grad=False``; with k = L only the pooler and the classifier train. Returns the model."""
    base = model.base_model
    n = base.config.num_hidden_layers
    if isinstance(freeze_layer_count, bool) or not isinstance(freeze_layer_count, int):
        raise ValueError(f"freeze_layer_count must be an int, got {freeze_layer_count!r}")
    if not 0 <= freeze_layer_count <= n:
        raise ValueError(f"freeze_layer_count must be in [0, {n}], got {freeze_layer_count}")
    for p in base.embeddings.parameters():
        p.requires_grad = False
    for layer in base.encoder.layer[:freeze_layer_count]:
        for p in layer.parameters():
            p.requires_grad = False
    return model
