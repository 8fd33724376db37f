"""Estimators on sparse ratings: :class:`AEMC`, :class:`AEMCNE`, the AutoRec special cases and a biased
matrix-factorisation baseline, all with one ``fit(train, ...) / predict(users, items) / complete()`` interface.

Training (the released ``training_RCAutoRec``): full-batch AdamW on the masked loss, g applied only at the observed
entries. Differences: model selection on a validation hold-out carved out of the *training* entries (the released
code reports the best epoch on the test set), optional column minibatches so that a large matrix is never
densified, an optional AutoRec-style L2 penalty, optional standardisation of the observed values."""

from __future__ import annotations

import copy
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch
from torch import nn

from iclr24.paperkit.distributed import rank_and_world
from iclr24.paperkit.errors import InputError
from iclr24.paperkit.errors import InputFileError
from iclr24.paperkit.errors import InputFolderError
from iclr24.paperkit.errors import check_finite
from iclr24.paperkit.errors import describe
from iclr24.paperkit.pretrained import PretrainedMixin
from iclr24.paperkit.progress import progress
from iclr24.paperkit.tracking import StepLog

from .config import FitConfig
from .data import Ratings
from .model import AutoencoderMC
from .model import ElementwiseNetwork
from .model import MainAutoencoder
from .model import l2_penalty

__all__ = [
    "FitConfig",
    "AEMC",
    "AEMCNE",
    "AutoRec",
    "MatrixFactorization",
    "rmse",
    "relative_rmse",
]

ORIENTATIONS = ("item", "user")
CHECKPOINT_FORMAT = "iclr24.aemc_ne/1"  # the tag of a file of AEMC.save (read back by .checkpoint.load_model)


def _real_array(x: object, name: str) -> np.ndarray:
    try:
        a = np.asarray(x)
    except (TypeError, ValueError) as e:
        raise InputError(f"{name} must be an array of numbers, got {describe(x)} ({e})") from None
    if a.dtype == object or a.dtype.kind not in "biuf":
        raise InputError(f"{name} must be an array of real numbers, got {describe(x)}")
    return a.astype(np.float64)


def rmse(pred: np.ndarray, target: np.ndarray) -> float:
    """``sqrt(mean((pred - target)^2))`` (plain RMSE, used for ratings)."""
    pred, target = _real_array(pred, "pred"), _real_array(target, "target")
    if pred.shape != target.shape or pred.size == 0:
        raise InputError(f"rmse needs two non-empty arrays of one shape, got {pred.shape} and {target.shape}")
    check_finite(pred, "pred")
    check_finite(target, "target")
    return float(np.sqrt(np.mean((pred - target) ** 2)))


def relative_rmse(pred: np.ndarray, target: np.ndarray) -> float:
    """``||P - X||_Omega / ||X||_Omega`` over the given entries (the released code's metric for synthetic data)."""
    target = _real_array(target, "target")
    check_finite(target, "target")
    denom = float(np.sqrt(np.mean(target**2)))
    if denom == 0.0:
        raise InputError("relative_rmse is undefined when every target is 0")
    return rmse(pred, target) / denom


def _fit_config(config: FitConfig | None, overrides: dict) -> FitConfig:
    base = asdict(config) if config is not None else {}
    unknown = set(overrides) - set(FitConfig.__dataclass_fields__)
    if unknown:
        raise InputError(
            f"unknown fit option(s) {sorted(unknown)}; valid: {sorted(FitConfig.__dataclass_fields__)}"
        )
    return FitConfig(**{**base, **overrides})


def _check_ratings(name: str, r: object, shape: tuple[int, int] | None = None) -> Ratings:
    """``r`` as :class:`Ratings`: a ``Ratings``, or ``(users, items, values)`` as tensors, a ``Dataset`` of
    ``(user, item, rating)`` items or a ``DataLoader`` of such batches (read once, in its order; the matrix has
    ``shape`` = ``(n_users, n_items)``, by default one past the largest index)."""
    from iclr24.paperkit.data.user import as_tensors
    from iclr24.paperkit.data.user import is_user_data

    if not isinstance(r, Ratings):
        if not (is_user_data(r) or isinstance(r, tuple | list | torch.Tensor)):
            raise InputError(
                f"{name} must be an iclr24.aemc_ne.Ratings (use Ratings(users, items, values, n_users, n_items) "
                f"or Ratings.from_dense(X, mask)), (users, items, values) tensors, or a torch Dataset/DataLoader "
                f"of (user, item, rating) triples; got {type(r).__name__}"
            )
        users, items, values = (t.detach().cpu().numpy() for t in as_tensors(r, fields=3, what=name))
        if users.ndim != 1 or values.ndim != 1:
            raise InputError(
                f"{name}: expected one (user, item, rating) triple of numbers per example, got fields of shapes "
                f"{users.shape}, {items.shape}, {values.shape}"
            )
        if shape is None:
            if not (np.issubdtype(users.dtype, np.integer) and np.issubdtype(items.dtype, np.integer)):
                raise InputError(
                    f"{name}: user and item indices must be integers, got {users.dtype}, {items.dtype}"
                )
            shape = (int(users.max()) + 1 if users.size else 0, int(items.max()) + 1 if items.size else 0)
        r = Ratings(users, items, values, *_check_shape(shape))
    elif shape is not None and r.shape != _check_shape(shape):
        raise InputError(f"shape={tuple(shape)} but {name} is a {r.shape} Ratings")
    if len(r) == 0:
        raise InputError(f"{name} holds no ratings")
    return r


def _check_shape(shape: object) -> tuple[int, int]:
    if (
        not isinstance(shape, tuple | list)
        or len(shape) != 2
        or not all(isinstance(n, int | np.integer) and not isinstance(n, bool) and n >= 1 for n in shape)
    ):
        raise InputError(f"shape must be (n_users, n_items), two positive ints, got {shape!r}")
    return int(shape[0]), int(shape[1])


@dataclass
class _Split:
    train: Ratings
    val: Ratings | None
    weights: np.ndarray | None


def _make_split(train: Ratings, val: Ratings | None, propensity, cfg: FitConfig) -> _Split:
    weights = None
    if propensity is not None:
        p = np.asarray(propensity, dtype=np.float64)
        if p.shape != (len(train),) or not np.all(np.isfinite(p)) or p.min() <= 0 or p.max() > 1:
            raise InputError(
                f"propensity must be {len(train)} probabilities in (0, 1], one per training rating; got shape "
                f"{p.shape}" + (f", range [{p.min():.3g}, {p.max():.3g}]" if p.size else "")
            )
        weights = 1.0 / p
    if val is not None:
        val = _check_ratings("val", val, None if isinstance(val, Ratings) else train.shape)
        if val.shape != train.shape:
            raise InputError(f"val has shape {val.shape} but train has {train.shape}")
        return _Split(train, val, weights)
    if cfg.val_fraction == 0.0:
        return _Split(train, None, weights)
    k = int(round(cfg.val_fraction * len(train)))
    if k == 0 or k == len(train):
        raise InputError(
            f"val_fraction={cfg.val_fraction} of {len(train)} training ratings leaves {k} validation entries; "
            "pass more ratings, a larger val_fraction, an explicit val=, or val_fraction=0 to train without selection"
        )
    perm = np.random.default_rng(cfg.seed).permutation(len(train))
    keep, held = np.sort(perm[k:]), np.sort(perm[:k])
    return _Split(train.subset(keep), train.subset(held), None if weights is None else weights[keep])


def _sum_gradients(net: nn.Module, loss: torch.Tensor, world: int) -> float:
    """Sum every rank's gradient (and loss) in place: each rank's loss already carries the global normaliser, so
    the sum is the single-process full-batch gradient. A no-op in one process."""
    if world == 1:
        return float(loss)
    import torch.distributed as dist

    params = [p for p in net.parameters() if p.requires_grad]
    for p in params:
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = torch.cat([p.grad.reshape(-1) for p in params] + [loss.reshape(1).to(params[0].grad)])
    dist.all_reduce(flat, op=dist.ReduceOp.SUM)
    k = 0
    for p in params:
        p.grad.copy_(flat[k : k + p.numel()].view_as(p.grad))
        k += p.numel()
    return float(flat[-1])


class _Estimator:
    """Shared plumbing: orientation, standardisation, validation-based model selection, save/load."""

    orientation: str
    history: list[dict]

    def _check_orientation(self, orientation: str) -> str:
        if orientation not in ORIENTATIONS:
            raise InputError(f"orientation must be 'item' (items are samples) or 'user', got {orientation!r}")
        return orientation

    def _require_fitted(self) -> None:
        if not getattr(self, "fitted_", False):
            raise InputError(f"{type(self).__name__} is not fitted yet; call fit(train) first")

    def _check_ids(self, users, items) -> tuple[np.ndarray, np.ndarray]:
        u = np.asarray(users)
        i = np.asarray(items)
        if u.shape != i.shape or u.ndim != 1:
            raise InputError(f"users and items must be 1-D arrays of one length, got {u.shape} and {i.shape}")
        if u.size and not (np.issubdtype(u.dtype, np.integer) and np.issubdtype(i.dtype, np.integer)):
            raise InputError(f"users and items must be integer indices, got dtypes {u.dtype}, {i.dtype}")
        nu, ni = self.shape_
        if u.size and (u.min() < 0 or u.max() >= nu):
            raise InputError(
                f"user index out of range: expected 0 <= user < {nu}, got [{u.min()}, {u.max()}]"
            )
        if i.size and (i.min() < 0 or i.max() >= ni):
            raise InputError(
                f"item index out of range: expected 0 <= item < {ni}, got [{i.min()}, {i.max()}]"
            )
        return u.astype(np.int64), i.astype(np.int64)

    def _post(self, z: np.ndarray) -> np.ndarray:
        y = z * self.scale_ + self.shift_
        if self.cfg_.clip is not None:
            y = np.clip(y, *self.cfg_.clip)
        return y

    def predict(self, users, items) -> np.ndarray:
        """Predicted ratings at ``(users[k], items[k])`` (0-based indices of the training matrix)."""
        self._require_fitted()
        u, i = self._check_ids(users, items)
        if u.size == 0:
            return np.zeros(0)
        return self._post(self._predict_std(u, i))

    def complete(self) -> np.ndarray:
        """The completed ``n_users x n_items`` matrix."""
        self._require_fitted()
        nu, ni = self.shape_
        u, i = np.meshgrid(np.arange(nu), np.arange(ni), indexing="ij")
        return self.predict(u.ravel(), i.ravel()).reshape(nu, ni)

    def score(self, test: Ratings) -> float:
        """Test RMSE on held-out ratings (call only for final reporting, never for selection)."""
        test = _check_ratings("test", test)
        return rmse(self.predict(test.users, test.items), test.values)

    def _select_loop(
        self,
        cfg: FitConfig,
        params_module: nn.Module,
        epoch_fn,
        val_fn,
        quiet: bool,
        log: StepLog | None = None,
        state: _TrainState | None = None,
    ) -> None:
        """Run ``epoch_fn`` for ``cfg.epochs`` epochs; every ``eval_every`` epochs compute the validation RMSE
        (``val_fn``; ``None`` without a validation set) and keep the parameters of the best one. ``log`` gets each
        epoch's metrics; ``state`` continues a saved run first and saves this one at every validation check."""
        log = log if log is not None else StepLog(None, name="aemc_ne")
        self.history = []
        best, best_state, best_epoch, stale = math.inf, None, cfg.epochs, 0
        first, stopped, before = 1, False, 0.0
        if state is not None and state.exists():
            saved = state.load(params_module)
            first, stopped, before = saved["epoch"] + 1, saved["stopped"], saved["seconds"]
            best, best_epoch, stale = saved["best"], saved["best_epoch"], saved["stale"]
            self.history, best_state = saved["history"], saved["best_state"]
        self.resumed_from_ = first - 1  # the epoch a resumed run continued after (0: a fresh run)
        t0 = time.perf_counter() - before
        epochs = range(first, cfg.epochs + 1) if not stopped else range(0)
        try:
            for epoch in progress(epochs, desc=type(self).__name__, disable=True if quiet else None):
                loss = epoch_fn(epoch)
                if not math.isfinite(loss):
                    raise InputError(f"training diverged at epoch {epoch} (loss {loss}); lower lr")
                metrics: dict = {"train_loss": loss}
                if epoch % cfg.eval_every == 0 or epoch == cfg.epochs:
                    v = metrics["val_rmse"] = val_fn()
                    self.history.append(
                        {
                            "epoch": epoch,
                            "train_loss": loss,
                            "val_rmse": v,
                            "seconds": time.perf_counter() - t0,
                        }
                    )
                    if v is not None:
                        if v < best:
                            best, best_epoch, stale = v, epoch, 0
                            best_state = copy.deepcopy(params_module.state_dict())
                        else:
                            stale += 1
                            stopped = cfg.patience is not None and stale >= cfg.patience
                    if state is not None:
                        state.save(params_module, epoch=epoch, stopped=stopped, best=best, best_epoch=best_epoch,
                                   stale=stale, history=self.history, best_state=best_state,
                                   seconds=time.perf_counter() - t0)  # fmt: skip
                log(epoch, metrics)
                if stopped:
                    break
        except BaseException:
            log.close()
            raise
        if best_state is not None:
            params_module.load_state_dict(best_state)
        self.best_epoch_ = best_epoch
        self.best_val_rmse_ = None if best == math.inf else float(best)
        self.fit_seconds_ = time.perf_counter() - t0
        log.close({"best_epoch": self.best_epoch_, "best_val_rmse": self.best_val_rmse_})


class _TrainState:
    """The training-state file behind ``fit(checkpoint=PATH)`` (paperkit's exact-resume format): the net, the
    optimiser, the minibatch generator, the selection loop's best weights and counters, at a validation check."""

    def __init__(
        self,
        path: str | os.PathLike,
        optimizer,
        rng: np.random.Generator,
        meta: dict,
        write: bool,
        resume: bool,
    ):
        self.path = Path(path)
        if self.path.is_dir():
            raise InputFolderError(
                f"checkpoint {self.path} is a folder; give a file path such as DIR/train_state.pt", path
            )
        self.optimizer, self.rng, self.write, self.resume = optimizer, rng, write, resume
        self.meta = json.loads(json.dumps(meta))

    def exists(self) -> bool:
        """Whether to continue: ``resume=True`` and the file is there."""
        return self.resume and self.path.is_file()

    def load(self, module: nn.Module) -> dict:
        from iclr24.paperkit.resume import load_train_state

        extra: dict = {}
        epoch = load_train_state(self.path, model=module, optimizer=self.optimizer, expect=self.meta, into=extra,
                                 what="aemc-ne training state")  # fmt: skip
        try:
            self.rng.bit_generator.state = json.loads(extra["rng"])
            loop = json.loads(extra["loop"])
            best_state = extra.get("best_state") or None
        except (KeyError, TypeError, ValueError) as e:
            raise InputFileError(f"{self.path}: a damaged aemc-ne training state ({e})", self.path) from None
        best = math.inf if loop["best"] is None else float(loop["best"])
        return {**loop, "epoch": epoch, "best": best, "best_state": best_state}

    def save(self, module: nn.Module, *, epoch: int, best: float, best_state, history, **loop) -> None:
        from iclr24.paperkit.resume import save_train_state

        if not self.write:  # under torchrun rank 0 writes; every rank holds the same weights
            return
        loop = {**loop, "best": None if best == math.inf else best, "history": history}
        extra = {"rng": json.dumps(self.rng.bit_generator.state), "loop": json.dumps(loop),
                 "best_state": best_state or {}}  # fmt: skip
        save_train_state(self.path, step=epoch, model=module, optimizer=self.optimizer, meta=self.meta,
                         extra=extra)  # fmt: skip


class AEMC(PretrainedMixin, _Estimator):
    """Autoencoder matrix completion: ``X_hat = h(M * X)`` column-wise, trained on the observed entries only.

    ``orientation='item'``: items are the samples (I-AutoRec layout: the input of one sample is an item's ratings
    by all users); ``'user'``: users are the samples. ``main_hidden`` are the hidden widths of ``h``."""

    def __init__(
        self,
        *,
        main_hidden: Sequence[int] = (500,),
        activation: str = "tanh",
        orientation: str = "item",
    ):
        self.main_hidden = tuple(main_hidden) if not isinstance(main_hidden, str | bytes) else main_hidden
        self.activation = activation
        self.orientation = self._check_orientation(orientation)
        self.fitted_ = False
        MainAutoencoder(1, self.main_hidden, activation)  # validate the architecture now

    # -- architecture -------------------------------------------------------------------------------------------
    def _element(self, n_features: int) -> ElementwiseNetwork | None:
        return None

    def _build(self, n_features: int) -> AutoencoderMC:
        main = MainAutoencoder(n_features, self.main_hidden, self.activation)
        return AutoencoderMC(main, self._element(n_features))

    def spec(self) -> dict:
        return {"kind": "AEMC", "main_hidden": list(self.main_hidden), "activation": self.activation,
                "orientation": self.orientation}  # fmt: skip

    # -- orientation: samples x features ------------------------------------------------------------------------
    def _to_internal(self, users: np.ndarray, items: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        return (items, users) if self.orientation == "item" else (users, items)

    def _csr(self, r: Ratings, values: np.ndarray) -> sp.csr_matrix:
        s, f = self._to_internal(r.users, r.items)
        n_s, n_f = self._to_internal(np.array(r.n_users), np.array(r.n_items))
        return sp.csr_matrix((values, (s, f)), shape=(int(n_s), int(n_f)))

    # -- training -----------------------------------------------------------------------------------------------
    def fit(
        self,
        train: Ratings,
        *,
        val: Ratings | None = None,
        propensity: np.ndarray | None = None,
        config: FitConfig | None = None,
        quiet: bool = False,
        device: str = "cpu",
        shape: tuple[int, int] | None = None,
        callbacks=None,
        log_dir: str | os.PathLike | None = None,
        checkpoint: str | os.PathLike | None = None,
        resume: bool = False,
        **options,
    ):
        """Train on the observed ``train`` ratings. Options are :class:`FitConfig` fields (``epochs``, ``lr``,
        ``weight_decay``, ``l2``, ``batch_size``, ``val_fraction``, ``eval_every``, ``patience``, ``standardize``,
        ``clip``, ``seed``). The validation set (``val=`` or ``val_fraction`` of ``train``) selects the epoch; no
        test entry is ever read. ``propensity``: the observation probability of each training rating (MNAR), its
        inverse weights the loss. Returns ``self``.

        ``train`` (and ``val``) may also be ``(users, items, values)`` tensors, a torch ``Dataset`` of ``(user,
        item, rating)`` items or a ``DataLoader`` of such batches, read once in its order (the same model as the
        :class:`Ratings` of those triples); ``shape=(n_users, n_items)`` sizes the matrix (default: one past the
        largest index). ``callbacks`` (``f(epoch, metrics)`` or objects with ``on_step``) and ``log_dir``
        (``metrics.jsonl``, TensorBoard when installed) get ``train_loss`` each epoch and ``val_rmse`` at each
        check (paperkit's :class:`~iclr24.paperkit.tracking.StepLog`). ``checkpoint``: a training-state file written at
        every validation check; with ``resume=True`` an existing one is continued (a resumed run ends bit for bit
        as the uninterrupted one; other settings are refused)."""
        train = _check_ratings("train", train, shape)
        cfg = _fit_config(config, options)
        split = _make_split(train, val, propensity, cfg)
        tr = split.train
        s_idx, f_idx = self._to_internal(tr.users, tr.items)
        n_samples, n_features = (
            (tr.n_items, tr.n_users) if self.orientation == "item" else (tr.n_users, tr.n_items)
        )
        if len(np.unique(s_idx * n_features + f_idx)) != len(tr):
            raise InputError(
                "train holds the same (user, item) pair more than once; keep one rating per pair"
            )
        empty = np.setdiff1d(np.arange(n_features), f_idx)
        if len(empty):
            kind = "user" if self.orientation == "item" else "item"
            raise InputError(
                f"{len(empty)} {kind}(s) (e.g. index {int(empty[0])}) have no training rating, so their output of "
                f"the autoencoder can never be fitted; drop them or use orientation="
                f"{'user' if self.orientation == 'item' else 'item'!r}"
            )
        self.cfg_ = cfg
        self.shape_ = tr.shape
        self.shift_ = float(tr.values.mean()) if cfg.standardize else 0.0
        self.scale_ = float(tr.values.std()) if cfg.standardize and tr.values.std() > 0 else 1.0
        values = (tr.values - self.shift_) / self.scale_
        dev = torch.device(device)
        self.device_ = dev
        self._x = self._csr(tr, values).astype(np.float32)  # zero-filled training input, samples x features
        self._train = tr
        weights = np.ones(len(tr)) if split.weights is None else split.weights
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.net_ = self._build(n_features).to(dev)
        opt = torch.optim.AdamW(self.net_.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
        n_obs = len(tr)
        rng = np.random.default_rng(cfg.seed)
        rank, world = rank_and_world()  # under torchrun: this rank's share of the samples, gradients summed
        full = cfg.batch_size is None or cfg.batch_size >= n_samples
        # entries grouped by sample: those of sample j are by_sample[ptr[j]:ptr[j + 1]]
        by_sample = np.argsort(s_idx, kind="stable")
        ptr = np.searchsorted(s_idx[by_sample], np.arange(n_samples + 1))
        if full:
            mine = np.arange(rank, n_samples, world)
            idx = (
                np.concatenate([by_sample[ptr[j] : ptr[j + 1]] for j in mine]) if len(mine) else by_sample[:0]
            )
            local = np.empty(n_samples, dtype=np.int64)
            local[mine] = np.arange(len(mine))
            x_dense = torch.as_tensor(self._x[mine].toarray(), device=dev)
            rows = torch.as_tensor(local[s_idx[idx]], device=dev)
            cols = torch.as_tensor(f_idx[idx], device=dev)
            target = torch.as_tensor(values[idx], dtype=torch.float32, device=dev)
            w_t = torch.as_tensor(weights[idx], dtype=torch.float32, device=dev)

        def objective(pred, tgt, w, denom):
            # Eq. (loss): (1/|Omega_b|) sum w_ij (X_ij - X_hat_ij)^2 + (l2/2) ||W||^2 / |Omega| (+ g's penalty);
            # each rank sums its own entries over the batch's global |Omega_b|, the penalty counted once (rank 0)
            loss = (w * (tgt - pred).square()).sum() / denom
            if cfg.l2 > 0 and rank == 0:
                loss = loss + 0.5 * cfg.l2 * l2_penalty(self.net_.main) / n_obs
            if cfg.l2_elem > 0 and self.net_.element is not None and rank == 0:
                loss = loss + 0.5 * cfg.l2_elem * l2_penalty(self.net_.element) / n_obs
            return loss

        def step(x, r, c, tgt, w, denom) -> float:
            opt.zero_grad()
            loss = objective(self.net_.predict_entries(x, r, c), tgt, w, denom)
            loss.backward()
            loss = _sum_gradients(self.net_, loss.detach(), world)
            opt.step()
            return loss

        def epoch_fn(epoch: int) -> float:
            self.net_.train()
            if full:
                return step(x_dense, rows, cols, target, w_t, n_obs)
            total, count = 0.0, 0
            for b in np.array_split(rng.permutation(n_samples), math.ceil(n_samples / cfg.batch_size)):
                n_b = int((ptr[b + 1] - ptr[b]).sum())  # the batch's entries, over every rank's share
                if n_b == 0:
                    continue
                b = b[rank::world]
                idx = np.concatenate([by_sample[ptr[j] : ptr[j + 1]] for j in b]) if len(b) else by_sample[:0]
                local = np.empty(n_samples, dtype=np.int64)
                local[b] = np.arange(len(b))
                loss = step(
                    torch.as_tensor(self._x[b].toarray(), device=dev),
                    torch.as_tensor(local[s_idx[idx]], device=dev),
                    torch.as_tensor(f_idx[idx], device=dev),
                    torch.as_tensor(values[idx], dtype=torch.float32, device=dev),
                    torch.as_tensor(weights[idx], dtype=torch.float32, device=dev),
                    n_b,
                )
                total += loss * n_b
                count += n_b
            return total / max(count, 1)

        self.fitted_ = True
        vr = split.val

        def val_fn() -> float | None:
            if vr is None:
                return None
            return rmse(self.predict(vr.users, vr.items), vr.values)

        log = StepLog(log_dir, callbacks, name="aemc_ne")
        state = None
        if resume and checkpoint is None:
            raise InputError("resume=True needs checkpoint= (the file written at every validation check)")
        if checkpoint is not None:
            meta = {"spec": self.spec(), "config": asdict(cfg), "shape": list(tr.shape), "n_train": len(tr),
                    "n_val": 0 if vr is None else len(vr), "world": world}  # fmt: skip
            state = _TrainState(checkpoint, opt, rng, meta, write=rank == 0, resume=bool(resume))
        self._select_loop(cfg, self.net_, epoch_fn, val_fn, quiet, log, state)
        self.n_val_ = 0 if vr is None else len(vr)
        return self

    @torch.no_grad()
    def _predict_std(self, users: np.ndarray, items: np.ndarray, chunk: int = 1024) -> np.ndarray:
        self.net_.eval()
        s, f = self._to_internal(users, items)
        uniq, inv = np.unique(s, return_inverse=True)
        out = np.empty(len(s), dtype=np.float64)
        order = np.argsort(inv, kind="stable")
        inv_sorted = inv[order]
        starts = np.searchsorted(inv_sorted, np.arange(0, len(uniq), chunk))
        ends = np.append(starts[1:], len(order))
        for k, (a, b) in enumerate(zip(starts, ends)):
            sel = order[a:b]
            block = uniq[k * chunk : (k + 1) * chunk]
            xb = torch.as_tensor(self._x[block].toarray(), device=self.device_)
            local = torch.as_tensor(inv[sel] - k * chunk, device=self.device_)
            pred = self.net_.predict_entries(xb, local, torch.as_tensor(f[sel], device=self.device_))
            out[sel] = pred.double().cpu().numpy()
        return out

    # -- persistence --------------------------------------------------------------------------------------------
    def save(self, path: str | Path) -> Path:
        """A ``torch.load(weights_only=True)``-safe checkpoint: architecture, fit settings, weights and the
        training ratings (the autoencoder needs them as its input at predict time)."""
        from iclr24.paperkit.io import atomic_torch_save

        self._require_fitted()
        cfg = asdict(self.cfg_)
        cfg["clip"] = None if cfg["clip"] is None else list(cfg["clip"])
        obj = {
            "format": CHECKPOINT_FORMAT,
            "spec": self.spec(),
            "config": cfg,
            "shape": list(self.shape_),
            "shift": self.shift_,
            "scale": self.scale_,
            "state": {k: v.detach().cpu() for k, v in self.net_.state_dict().items()},
            "users": torch.as_tensor(self._train.users),
            "items": torch.as_tensor(self._train.items),
            "values": torch.as_tensor(self._train.values),
        }
        return atomic_torch_save(obj, path)

    # The model folder (``save_pretrained(dir)`` / ``AEMC.from_pretrained(dir)``, paperkit's format): config.json
    # holds the constructor's arguments; model.safetensors holds the net's weights and what a fitted estimator
    # predicts from: the training ratings (the autoencoder's input), the matrix shape, the standardisation and
    # the fit settings (as JSON bytes under "fit.config").
    def state_dict(self) -> dict[str, torch.Tensor]:
        """Every tensor a fitted model predicts from (the net's weights under ``net.``)."""
        self._require_fitted()
        cfg = asdict(self.cfg_)
        state = {f"net.{k}": v.detach().cpu() for k, v in self.net_.state_dict().items()}
        state.update({
            "ratings.users": torch.from_numpy(self._train.users.copy()),
            "ratings.items": torch.from_numpy(self._train.items.copy()),
            "ratings.values": torch.from_numpy(self._train.values.copy()),
            "fit.shape": torch.tensor(self.shape_, dtype=torch.int64),
            "fit.shift_scale": torch.tensor([self.shift_, self.scale_], dtype=torch.float64),
            "fit.config": torch.tensor(list(json.dumps(cfg).encode()), dtype=torch.uint8),
        })  # fmt: skip
        return state

    def load_state_dict(self, state: dict, strict: bool = True):
        """Restore a fitted model from :meth:`state_dict`'s tensors (on the CPU); a mismatch is a RuntimeError,
        as for an ``nn.Module``."""
        keys = (
            "ratings.users",
            "ratings.items",
            "ratings.values",
            "fit.shape",
            "fit.shift_scale",
            "fit.config",
        )
        missing = [k for k in keys if k not in state]
        if missing:
            raise RuntimeError(f"missing key(s) {missing}: not the state of a fitted {type(self).__name__}")
        try:
            cfg = dict(json.loads(bytes(state["fit.config"].tolist()).decode()))
            cfg["clip"] = None if cfg.get("clip") is None else tuple(cfg["clip"])
            cfg_ = FitConfig(**cfg)
            n_users, n_items = (int(n) for n in state["fit.shape"].tolist())
            shift, scale = (float(v) for v in state["fit.shift_scale"].tolist())
            tr = Ratings(state["ratings.users"].numpy(), state["ratings.items"].numpy(),
                         state["ratings.values"].numpy(), n_users, n_items)  # fmt: skip
        except (TypeError, ValueError, UnicodeDecodeError) as e:
            raise RuntimeError(f"the fitted state is damaged ({type(e).__name__}: {e})") from None
        x = self._csr(tr, (tr.values - shift) / scale).astype(np.float32)
        net = self._build(tr.n_users if self.orientation == "item" else tr.n_items)
        result = net.load_state_dict(
            {k[4:]: v for k, v in state.items() if k.startswith("net.")}, strict=strict
        )
        self.cfg_, self.shape_, self.shift_, self.scale_ = cfg_, tr.shape, shift, scale
        self._train, self._x, self.net_ = tr, x, net
        self.device_, self.fitted_ = torch.device("cpu"), True
        return result


class AEMCNE(AEMC):
    """AEMC-NE: AEMC plus the element-wise network ``g`` on each output, ``g(y) = E(y) + skip * y``.

    ``shared=True`` (the released code) uses one ``E`` for all outputs, ``shared=False`` one per output row.
    ``elem_hidden`` are the hidden widths of ``E`` (released code: 20, 20; tanh)."""

    def __init__(
        self,
        *,
        main_hidden: Sequence[int] = (500,),
        activation: str = "tanh",
        elem_hidden: Sequence[int] = (20, 20),
        elem_activation: str = "tanh",
        skip: float = 0.8,
        shared: bool = True,
        orientation: str = "item",
    ):
        super().__init__(main_hidden=main_hidden, activation=activation, orientation=orientation)
        self.elem_hidden = tuple(elem_hidden) if not isinstance(elem_hidden, str | bytes) else elem_hidden
        self.elem_activation = elem_activation
        self.skip = skip
        self.shared = bool(shared)
        ElementwiseNetwork(self.elem_hidden, elem_activation, skip, True)  # validate now

    def _element(self, n_features: int) -> ElementwiseNetwork:
        return ElementwiseNetwork(
            self.elem_hidden,
            self.elem_activation,
            self.skip,
            self.shared,
            None if self.shared else n_features,
        )

    def spec(self) -> dict:
        return {**super().spec(), "kind": "AEMCNE", "elem_hidden": list(self.elem_hidden),
                "elem_activation": self.elem_activation, "skip": float(self.skip), "shared": self.shared}  # fmt: skip

    @torch.no_grad()
    def response_curve(self, y: np.ndarray, row: int = 0) -> np.ndarray:
        """The learned output activation ``g`` evaluated at ``y`` (in training units), for output ``row`` (any row
        when ``g`` is shared)."""
        self._require_fitted()
        t = torch.as_tensor(np.asarray(y, dtype=np.float32), device=self.device_)
        g = self.net_.element
        if g.shared:
            return g(t).double().cpu().numpy()
        full = torch.zeros(len(t), g.n_outputs, device=self.device_)
        full[:, row] = t
        return g(full)[:, row].double().cpu().numpy()


def AutoRec(kind: str = "item", hidden: int = 500) -> AEMC:
    """I-AutoRec / U-AutoRec (Sedhain et al. 2015): one sigmoid hidden layer, identity output; the paper's AEMC
    with ``L = 2``. Train it with ``l2=`` (AutoRec's lambda) for the published setting."""
    if kind not in ("item", "user"):
        raise InputError(f"kind must be 'item' (I-AutoRec) or 'user' (U-AutoRec), got {kind!r}")
    return AEMC(main_hidden=(hidden,), activation="sigmoid", orientation=kind)


class _MFNet(nn.Module):
    def __init__(self, n_users: int, n_items: int, rank: int, mean: float):
        super().__init__()
        self.p = nn.Parameter(0.1 * torch.randn(n_users, rank))
        self.q = nn.Parameter(0.1 * torch.randn(n_items, rank))
        self.bu = nn.Parameter(torch.zeros(n_users))
        self.bi = nn.Parameter(torch.zeros(n_items))
        self.mu = mean

    def forward(self, u: torch.Tensor, i: torch.Tensor) -> torch.Tensor:
        # biased MF: r_hat_ui = mu + b_u + b_i + p_u . q_i
        return self.mu + self.bu[u] + self.bi[i] + (self.p[u] * self.q[i]).sum(-1)


class MatrixFactorization(_Estimator):
    """Biased matrix factorisation ``mu + b_u + b_i + p_u^T q_i`` trained full-batch with Adam on the same masked
    loss, with the L2 penalty ``l2 * (||P||^2 + ||Q||^2) / |Omega|`` (the classic MF baseline)."""

    def __init__(self, *, rank: int = 10):
        if isinstance(rank, bool) or not isinstance(rank, int) or rank < 1:
            raise InputError(f"rank must be a positive int, got {rank!r}")
        self.rank = rank
        self.orientation = "item"
        self.fitted_ = False

    def fit(self, train: Ratings, *, val: Ratings | None = None, config: FitConfig | None = None,
            quiet: bool = False, shape: tuple[int, int] | None = None, callbacks=None,
            log_dir: str | os.PathLike | None = None, **options):  # fmt: skip
        """Same options, data types, logging and validation-based selection as :meth:`AEMC.fit`."""
        train = _check_ratings("train", train, shape)
        cfg = _fit_config(config, options)
        split = _make_split(train, val, None, cfg)
        tr = split.train
        self.cfg_, self.shape_, self.shift_, self.scale_ = cfg, tr.shape, 0.0, 1.0
        self.device_ = torch.device("cpu")
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(cfg.seed)
            self.net_ = _MFNet(tr.n_users, tr.n_items, self.rank, float(tr.values.mean()))
        opt = torch.optim.AdamW(self.net_.parameters(), lr=cfg.lr, weight_decay=0.0)
        u, i = torch.as_tensor(tr.users), torch.as_tensor(tr.items)
        y = torch.as_tensor(tr.values, dtype=torch.float32)

        def epoch_fn(epoch: int) -> float:
            opt.zero_grad()
            loss = (self.net_(u, i) - y).square().mean()
            reg = cfg.l2 * (self.net_.p.square().sum() + self.net_.q.square().sum()) / len(y)
            (loss + reg).backward()
            opt.step()
            return float(loss.detach())

        self.fitted_ = True
        vr = split.val
        self._select_loop(
            cfg, self.net_, epoch_fn, lambda: None if vr is None else rmse(self.predict(vr.users, vr.items), vr.values),
            quiet, StepLog(log_dir, callbacks, name="aemc_ne"),
        )  # fmt: skip
        return self

    @torch.no_grad()
    def _predict_std(self, users: np.ndarray, items: np.ndarray) -> np.ndarray:
        return self.net_(torch.as_tensor(users), torch.as_tensor(items)).double().numpy()
