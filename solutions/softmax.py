"""Softmax, log-softmax and the softmax backward pass."""

from __future__ import annotations

import numpy as np

from ._shapes import as_float


def softmax(x, axis: int = -1) -> np.ndarray:
    """softmax(x)_i = exp(x_i − max x) / Σ_j exp(x_j − max x), along ``axis``.

    Shapes: any ``(...)`` → the same shape. Subtracting the max changes nothing mathematically
    and keeps ``exp`` from overflowing (float64 overflows above ~709.8).

    −inf entries (masked positions) get weight exactly 0. A slice that is entirely −inf — a
    fully masked row — gives all zeros rather than NaN, as PyTorch ≥ 2.5 does; an attention
    output built from such a row is therefore 0.

    Raises ValueError on NaN or +inf input: neither has a meaningful softmax.
    """
    x = as_float(x, "x")
    if np.isnan(x).any() or np.isposinf(x).any():
        raise ValueError("softmax: input contains NaN or +inf")
    row_max = np.max(x, axis=axis, keepdims=True)
    row_max = np.where(np.isfinite(row_max), row_max, 0.0)  # fully masked slice: exp(−inf) = 0
    e = np.exp(x - row_max)
    total = np.sum(e, axis=axis, keepdims=True)
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """log softmax(x)_i = (x_i − max x) − log Σ_j exp(x_j − max x).

    Shapes: any ``(...)`` → the same shape. Computed without forming softmax first, so tiny
    probabilities keep their precision instead of becoming log(0).
    """
    x = as_float(x, "x")
    if not np.isfinite(x).all():
        raise ValueError("log_softmax: input must be finite")
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


def softmax_forward(x) -> tuple[np.ndarray, np.ndarray]:
    """p = softmax(x) over the last axis. Returns ``(p, cache)``; shapes ``(..., n)``."""
    p = softmax(x, axis=-1)
    return p, p


def softmax_backward(dp, cache) -> np.ndarray:
    """dx = p ⊙ (dp − Σ_j dp_j p_j), i.e. the full Jacobian diag(p) − ppᵀ applied to dp.

    Shapes: ``dp`` ``(..., n)`` like the forward output → ``dx`` ``(..., n)``.
    """
    p = cache
    dp = as_float(dp, "dp")
    if dp.shape != p.shape:
        raise ValueError(f"dp: expected shape {p.shape} (the forward output), got {dp.shape}")
    return p * (dp - np.sum(dp * p, axis=-1, keepdims=True))
