"""Softmax, log-softmax and the softmax backward pass."""

from __future__ import annotations

import numpy as np

from ._shapes import as_float


def softmax(x, axis: int = -1) -> np.ndarray:
    """softmax(x)_i = exp(x_i − max x) / Σ_j exp(x_j − max x), along ``axis``.

    Shapes: any ``(...)`` → the same shape. Subtracting the max changes nothing mathematically
    and keeps ``exp`` from overflowing (float64 overflows above ~709.8).

    −inf entries (masked positions) get weight exactly 0. A slice that is entirely −inf — a
    fully masked row — gives all zeros. ``torch.softmax`` gives NaN there; zeros are what
    ``F.scaled_dot_product_attention`` returns for a fully masked row since PyTorch 2.5, and
    an attention output built from such a row is therefore 0.

    Raises ValueError on NaN or +inf input: neither has a meaningful softmax.
    """
    x = as_float(x, "x")
    row_max = np.max(x, axis=axis, keepdims=True)  # NaN and +inf propagate into the max
    if not np.isfinite(row_max).all():
        if np.isnan(row_max).any() or np.isposinf(row_max).any():
            raise ValueError("softmax: input contains NaN or +inf")
        row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # fully masked: exp(−inf) = 0
    e = x - row_max
    np.exp(e, out=e)  # in place: large temporaries are costly
    total = np.sum(e, axis=axis, keepdims=True)
    if (total > 0).all():
        e /= total
        return e
    return np.divide(e, total, out=np.zeros_like(e), where=total > 0)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """log softmax(x)_i = (x_i − max x) − log Σ_j exp(x_j − max x).

    Shapes: any ``(...)`` → the same shape. Computed without forming softmax first, so tiny
    probabilities keep their precision instead of becoming log(0). A −inf entry gets −inf;
    NaN, +inf or an all −inf slice raise ValueError.
    """
    x = as_float(x, "x")
    row_max = np.max(x, axis=axis, keepdims=True)
    if not np.isfinite(row_max).all():
        raise ValueError("log_softmax: every slice needs a finite maximum (got NaN, +inf or all −inf)")
    shifted = x - row_max
    exp_shifted = np.exp(shifted)
    shifted -= np.log(np.sum(exp_shifted, axis=axis, keepdims=True))
    return shifted


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
