"""Softmax, log-softmax and the softmax backward pass."""

from __future__ import annotations

import numpy as np

from ._shapes import as_float

_MAX, _SUM, _ALL = np.maximum.reduce, np.add.reduce, np.logical_and.reduce


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
    return softmax_in_place(x.copy(), axis)


def softmax_in_place(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``softmax(x, axis)`` computed in x's own memory (x: a float64 array the caller owns and
    no longer needs, e.g. freshly computed scores). Returns x. Same results and errors as
    ``softmax``; no full-size temporary is made: x − max, exp and the division all overwrite x.
    """
    # (the ufuncs' reductions called directly, as ``x.max``, ``x.sum`` and ``.all()`` call
    # them: the same arithmetic without their Python wrappers, which are not cheap beside the
    # small score matrices the build's mistake search passes here over and over)
    row_max = _MAX(x, axis=axis, keepdims=True)  # NaN and +inf propagate into the max
    if _ALL(np.isfinite(row_max), axis=None):
        # Every slice holds an entry equal to its max, whose exp is exactly 1: every total
        # is at least 1, so no slice needs the fully-masked case below.
        x -= row_max
        np.exp(x, out=x)
        x /= _SUM(x, axis=axis, keepdims=True)
        return x
    if np.isnan(row_max).any() or np.isposinf(row_max).any():
        raise ValueError("softmax: input contains NaN or +inf")
    row_max = np.where(np.isneginf(row_max), 0.0, row_max)  # fully masked: exp(−inf) = 0
    x -= row_max
    np.exp(x, out=x)
    total = _SUM(x, axis=axis, keepdims=True)
    if _ALL(total > 0, axis=None):
        x /= total
        return x
    # A fully masked slice holds exp(−inf) = 0 everywhere and a total of 0: it stays 0.
    return np.divide(x, total, out=x, where=total > 0)


def log_softmax(x, axis: int = -1) -> np.ndarray:
    """log softmax(x)_i = (x_i − max x) − log Σ_j exp(x_j − max x).

    Shapes: any ``(...)`` → the same shape. Computed without forming softmax first, so tiny
    probabilities keep their precision instead of becoming log(0). A −inf entry gets −inf;
    NaN, +inf or an all −inf slice raise ValueError.
    """
    x = as_float(x, "x")
    return log_softmax_in_place(x.copy(), axis)


def log_softmax_in_place(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """``log_softmax(x, axis)`` computed in x's own memory (x: a float64 array the caller owns
    and no longer needs, e.g. freshly computed logits). Returns x; same results and errors."""
    row_max = np.max(x, axis=axis, keepdims=True)
    if not np.isfinite(row_max).all():
        raise ValueError("log_softmax: every slice needs a finite maximum (got NaN, +inf or all −inf)")
    x -= row_max
    x -= np.log(_sum_exp(x, axis))
    return x


def _sum_exp(x: np.ndarray, axis: int) -> np.ndarray:
    """Σ_j exp(x_j) along ``axis``, keepdims. Along the last axis of a C-contiguous array it
    exponentiates a block of rows at a time into one small buffer: a full-size exp(x) would be
    a second (..., V) array — megabytes of fresh memory pages for the output log-softmax —
    only to be summed. The sums are the same either way (each row is summed on its own)."""
    if axis not in (-1, x.ndim - 1) or x.ndim < 2 or not x.flags.c_contiguous:
        return np.sum(np.exp(x), axis=axis, keepdims=True)
    rows = x.reshape(-1, x.shape[-1])
    total = np.empty((rows.shape[0], 1))
    block = max(1, 32768 // rows.shape[1])  # rows per block: a buffer of at most 256 kB
    buffer = np.empty((min(block, rows.shape[0]), rows.shape[1]))
    for start in range(0, rows.shape[0], block):
        chunk = rows[start:start + block]
        e = np.exp(chunk, out=buffer[:len(chunk)])
        np.sum(e, axis=-1, keepdims=True, out=total[start:start + block])
    return total.reshape(*x.shape[:-1], 1)


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
