"""Softmax cross-entropy (as ``F.cross_entropy`` with ``ignore_index``), forward and backward."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float
from .softmax import log_softmax

IGNORE_INDEX = -100


def _targets(logits, targets, ignore_index):
    targets = np.asarray(targets)
    if not np.issubdtype(targets.dtype, np.integer):
        raise ValueError(f"targets: expected integer class ids, got dtype {targets.dtype}")
    if logits.ndim < 1 or targets.shape != logits.shape[:-1]:
        raise ValueError(f"targets: expected shape {logits.shape[:-1]} (logits without the class "
                         f"axis), got {targets.shape}")
    valid = targets != ignore_index
    if not valid.any():
        raise ValueError("targets: every target is ignore_index; the mean loss is undefined")
    C = logits.shape[-1]
    if (targets[valid] < 0).any() or (targets[valid] >= C).any():
        raise ValueError(f"targets: class ids must lie in [0, C={C}) or equal {ignore_index}")
    return np.where(valid, targets, 0), valid


class CrossEntropyCache(NamedTuple):
    """What ``softmax_cross_entropy_backward`` needs: log softmax(z) (..., C), the targets with
    ignored ones replaced by class 0 (...), which targets count (...) bool, and their number N."""
    log_p: np.ndarray
    safe_targets: np.ndarray
    valid: np.ndarray
    count: int


def softmax_cross_entropy_forward(logits, targets, ignore_index: int = IGNORE_INDEX):
    """loss = −(1/N) Σ_n log softmax(z_n)[y_n], averaged over the N targets ≠ ``ignore_index``.

    Shapes: logits (..., C), targets (...) integer → scalar loss. Returns ``(loss, cache)``.
    """
    logits = as_float(logits, "logits")
    safe_targets, valid = _targets(logits, targets, ignore_index)
    # Ignored rows never reach the loss, so whatever they hold (even −inf) cannot turn it NaN.
    log_p = log_softmax(np.where(valid[..., None], logits, 0.0), axis=-1)
    picked = np.take_along_axis(log_p, safe_targets[..., None], axis=-1)[..., 0]
    count = int(valid.sum())
    loss = -float(np.sum(picked, where=valid)) / count
    return loss, CrossEntropyCache(log_p, safe_targets, valid, count)


def softmax_cross_entropy_backward(dloss, cache) -> np.ndarray:
    """dz = (softmax(z) − onehot(y)) / N at counted positions, 0 at ignored ones; times dloss.
    Shapes: → dlogits (..., C) like the logits."""
    log_p, safe_targets, valid, count = cache
    dz = np.exp(log_p)
    np.put_along_axis(dz, safe_targets[..., None], np.take_along_axis(
        dz, safe_targets[..., None], axis=-1) - 1.0, axis=-1)
    return dz * valid[..., None] * (float(dloss) / count)


def cross_entropy(logits, targets, ignore_index: int = IGNORE_INDEX) -> float:
    """Mean cross-entropy over the targets ≠ ``ignore_index`` (see the forward pass)."""
    return softmax_cross_entropy_forward(logits, targets, ignore_index)[0]
