"""Linear projection y = xW + b, the lecture's Q = X·W_Q.

W has shape (d_in, d_out) so the code reads like the equation. PyTorch stores the transpose
(``nn.Linear.weight`` is (d_out, d_in) and computes x Wᵀ + b); see ``torch_layout``.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float, check_shapes


def linear(x, W, b=None) -> np.ndarray:
    """y = xW + b.  Shapes: x (..., d_in), W (d_in, d_out), b (d_out,) → y (..., d_out)."""
    x, W = as_float(x, "x"), as_float(W, "W")
    if b is None:
        check_shapes(x=(x, "... d_in"), W=(W, "d_in d_out"))
    else:
        b = as_float(b, "b")
        check_shapes(x=(x, "... d_in"), W=(W, "d_in d_out"), b=(b, "d_out"))
    return affine(x, W, b)


def affine(x: np.ndarray, W: np.ndarray, b=None) -> np.ndarray:
    """y = xW + b on float64 arrays whose shapes the caller has already checked (``linear``
    without its checks, for layers that check all their weights at once)."""
    # One (tokens × d_in) GEMM: a stacked (B, L, d_in) @ W runs B small matmuls instead.
    y = (x.reshape(-1, W.shape[0]) @ W).reshape(*x.shape[:-1], W.shape[1])
    if b is not None:
        y += b  # in place: a fresh megabyte-sized temporary costs more than the add itself
    return y


class LinearCache(NamedTuple):
    """What ``linear_backward`` needs of y = xW + b: the input x (..., d_in) and W (d_in, d_out)."""
    x: np.ndarray
    W: np.ndarray


def linear_forward(x, W, b=None) -> tuple[np.ndarray, LinearCache]:
    """y = xW + b, returning ``(y, cache)`` for ``linear_backward``. The cache keeps references
    to x and W, not copies: don't modify them in place before the backward pass."""
    x = as_float(x, "x")
    return linear(x, W, b), LinearCache(x, as_float(W, "W"))


def linear_backward(dy, cache) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """dx = dy Wᵀ,  dW = xᵀ dy,  db = Σ dy (sums run over every batch and token axis).

    Shapes: dy (..., d_out) → dx (..., d_in), dW (d_in, d_out), db (d_out,).
    """
    x, W = cache
    dy = as_float(dy, "dy")
    check_shapes(x=(x, "... d_in"), W=(W, "d_in d_out"), dy=(dy, "... d_out"))
    dx = dy @ W.T
    dW = x.reshape(-1, W.shape[0]).T @ dy.reshape(-1, W.shape[1])
    db = dy.reshape(-1, W.shape[1]).sum(axis=0)
    return dx, dW, db
