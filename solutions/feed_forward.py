"""Position-wise feed-forward network FFN(x) = max(0, xW₁ + b₁) W₂ + b₂."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float, check_shapes
from .linear import LinearCache, affine, linear_backward, linear_forward


def relu(x) -> np.ndarray:
    """max(0, x), elementwise."""
    return np.maximum(as_float(x, "x"), 0.0)


class FFNCache(NamedTuple):
    """What ``ffn_backward`` needs: the caches of h = xW₁ + b₁ and y = aW₂ + b₂, and
    a = max(0, h) (..., d_ff)."""
    linear1: LinearCache
    a: np.ndarray
    linear2: LinearCache


def ffn_forward(x, W1, b1, W2, b2) -> tuple[np.ndarray, FFNCache]:
    """FFN(x) = max(0, xW₁ + b₁) W₂ + b₂, applied to every position independently.

    Shapes: x (..., d_model), W₁ (d_model, d_ff), b₁ (d_ff,), W₂ (d_ff, d_model),
    b₂ (d_model,) → (..., d_model). Returns ``(y, cache)``.
    """
    check_shapes(x=(x, "... d_model"), W1=(W1, "d_model d_ff"), b1=(b1, "d_ff"),
                 W2=(W2, "d_ff d_model"), b2=(b2, "d_model"))
    h, cache1 = linear_forward(x, W1, b1)
    a = np.maximum(h, 0.0, out=h)  # ReLU in place: h itself is not needed again, as h > 0 ⇔ a > 0
    y, cache2 = linear_forward(a, W2, b2)
    return y, FFNCache(cache1, a, cache2)


def ffn(x, W1, b1, W2, b2) -> np.ndarray:
    """FFN(x) = max(0, xW₁ + b₁) W₂ + b₂. Shapes: x (..., d_model) → (..., d_model).

    The evaluation pass: what ``ffn_forward`` computes, without its caches for backprop."""
    x, W1, b1, W2, b2 = (as_float(v, name) for v, name in
                         ((x, "x"), (W1, "W1"), (b1, "b1"), (W2, "W2"), (b2, "b2")))
    check_shapes(x=(x, "... d_model"), W1=(W1, "d_model d_ff"), b1=(b1, "d_ff"),
                 W2=(W2, "d_ff d_model"), b2=(b2, "d_model"))
    h = affine(x, W1, b1)
    return affine(np.maximum(h, 0.0, out=h), W2, b2)     # ReLU in place: h is not needed again


def ffn_backward(dy, cache):
    """da = dy W₂ᵀ,  dh = da ⊙ 1[h > 0] (0 at h = 0, as PyTorch),  dx = dh W₁ᵀ.

    Shapes: dy (..., d_model) → dx (..., d_model), dW1 (d_model, d_ff), db1 (d_ff,),
    dW2 (d_ff, d_model), db2 (d_model,).
    """
    cache1, a, cache2 = cache
    da, dW2, db2 = linear_backward(dy, cache2)
    dh = da * (a > 0)
    dx, dW1, db1 = linear_backward(dh, cache1)
    return dx, dW1, db1, dW2, db2
