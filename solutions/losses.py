"""Softmax cross-entropy (as ``F.cross_entropy`` with ``ignore_index``), forward and backward,
with optional label smoothing (Szegedy et al. 2016; Vaswani et al. 2017 use ε = 0.1). The
smoothing's mass goes to every class but the padding token, as in the Annotated Transformer;
``F.cross_entropy(label_smoothing=ε)`` spreads it over all C classes, padding included."""

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


def smoothing_classes(C: int, ignore_index: int) -> np.ndarray:
    """Which of the C classes share label smoothing's mass: all of them, but the padding
    token when ``ignore_index`` is one (a pad is never a right answer). Shape (C,) bool."""
    classes = np.ones(C, dtype=bool)
    if 0 <= ignore_index < C:
        classes[ignore_index] = False
    return classes


class CrossEntropyCache(NamedTuple):
    """What ``softmax_cross_entropy_backward`` needs: log softmax(z) (..., C), the targets with
    ignored ones replaced by class 0 (...), which targets count (...) bool, their number N,
    the smoothing ε and the classes it spreads over (C,) bool."""
    log_p: np.ndarray
    safe_targets: np.ndarray
    valid: np.ndarray
    count: int
    smoothing: float = 0.0
    classes: np.ndarray | None = None


def softmax_cross_entropy_forward(logits, targets, ignore_index: int = IGNORE_INDEX,
                                  label_smoothing: float = 0.0):
    """loss = −(1/N) Σ_n Σ_c q_nc log softmax(z_n)_c over the N targets ≠ ``ignore_index``, with
    q_n = (1 − ε) onehot(y_n) + ε/K on the K ``smoothing_classes`` (ε = 0: the plain
    −log softmax(z_n)[y_n]). Shapes: logits (..., C), targets (...) integer → scalar loss.
    Returns ``(loss, cache)``."""
    logits = as_float(logits, "logits")
    if not 0.0 <= label_smoothing < 1.0:
        raise ValueError(f"label_smoothing: expected 0 ≤ ε < 1, got {label_smoothing}")
    safe_targets, valid = _targets(logits, targets, ignore_index)
    # Ignored rows never reach the loss, so whatever they hold (even −inf) cannot turn it NaN.
    log_p = log_softmax(np.where(valid[..., None], logits, 0.0), axis=-1)
    picked = np.take_along_axis(log_p, safe_targets[..., None], axis=-1)[..., 0]
    classes = smoothing_classes(logits.shape[-1], ignore_index)
    if label_smoothing:
        picked = (1.0 - label_smoothing) * picked + label_smoothing * log_p[..., classes].mean(axis=-1)
    count = int(valid.sum())
    loss = -float(np.sum(picked, where=valid)) / count
    return loss, CrossEntropyCache(log_p, safe_targets, valid, count, float(label_smoothing), classes)


def softmax_cross_entropy_backward(dloss, cache) -> np.ndarray:
    """dz = (softmax(z) − q) / N at counted positions, 0 at ignored ones; times dloss
    (q: the smoothed one-hot target of the forward pass). Shapes: → dlogits (..., C)."""
    log_p, safe_targets, valid, count, smoothing, classes = cache
    dz = np.exp(log_p)
    if smoothing:
        dz -= smoothing * classes / classes.sum()
    np.put_along_axis(dz, safe_targets[..., None], np.take_along_axis(
        dz, safe_targets[..., None], axis=-1) - (1.0 - smoothing), axis=-1)
    return dz * valid[..., None] * (float(dloss) / count)


def cross_entropy(logits, targets, ignore_index: int = IGNORE_INDEX, label_smoothing: float = 0.0) -> float:
    """Mean cross-entropy over the targets ≠ ``ignore_index`` (see the forward pass)."""
    return softmax_cross_entropy_forward(logits, targets, ignore_index, label_smoothing)[0]
