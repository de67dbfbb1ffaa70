"""Scaled dot-product attention: Attention(Q, K, V) = softmax(QKᵀ / √d_k) V.

The four steps of the lecture's Section 4, one line each: raw scores QKᵀ, scale by 1/√d_k,
mask, softmax over the keys, weighted sum of the values.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._shapes import as_float, check_shapes
from .masks import apply_mask
from .softmax import softmax


@dataclass(frozen=True)
class AttentionSteps:
    """Every intermediate value of one attention call, for worked solutions.

    raw_scores (..., L, S)    QKᵀ
    scale      float          the factor applied, 1/√d_k by default
    scaled_scores (..., L, S) QKᵀ · scale
    masked_scores (..., L, S) scaled scores with blocked positions at −inf
    weights    (..., L, S)    softmax over the keys; each row sums to 1 (0 if fully masked)
    output     (..., L, d_v)  weights · V
    """

    raw_scores: np.ndarray
    scale: float
    scaled_scores: np.ndarray
    masked_scores: np.ndarray
    weights: np.ndarray
    output: np.ndarray


def attention_shapes(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Validate Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v); return them as float64."""
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    dims = check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k"), V=(V, "... S d_v"))
    return Q, K, V, dims


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None, return_steps=False):
    """Z = softmax(QKᵀ · scale + mask) V with scale = 1/√d_k by default.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v) → Z (..., L, d_v).
    ``mask``: bool (True = may attend) or additive float, broadcastable to (..., L, S).
    Returns Z, or ``AttentionSteps`` with every intermediate when ``return_steps`` is true.
    A fully masked query row gets zero weights and a zero output (as PyTorch ≥ 2.5).
    """
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"]) if scale is None else float(scale)
    raw_scores = Q @ np.swapaxes(K, -1, -2)
    scaled_scores = raw_scores * scale
    masked_scores = apply_mask(scaled_scores, mask)
    weights = softmax(masked_scores, axis=-1)
    output = weights @ V
    if return_steps:
        return AttentionSteps(raw_scores, scale, scaled_scores, masked_scores, weights, output)
    return output


def attention_forward(Q, K, V, mask=None, scale=None):
    """Forward pass kept for backprop. Returns ``(Z, cache)``; shapes as in
    ``scaled_dot_product_attention``."""
    Q, K, V, _ = attention_shapes(Q, K, V)
    steps = scaled_dot_product_attention(Q, K, V, mask=mask, scale=scale, return_steps=True)
    return steps.output, (Q, K, V, steps.weights, steps.scale)


def attention_backward(dZ, cache):
    """Gradients of attention (S = QKᵀ·scale + M, P = softmax(S), Z = PV):

    dV = Pᵀ dZ,  dP = dZ Vᵀ,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),
    dQ = dS K · scale,  dK = dSᵀ Q · scale.

    Shapes: dZ (..., L, d_v) → dQ (..., L, d_k), dK (..., S, d_k), dV (..., S, d_v).
    """
    Q, K, V, P, scale = cache
    dZ = as_float(dZ, "dZ")
    check_shapes(Z=(P @ V, "... L d_v"), dZ=(dZ, "... L d_v"))
    dV = np.swapaxes(P, -1, -2) @ dZ
    dP = dZ @ np.swapaxes(V, -1, -2)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True))
    dQ = dS @ K * scale
    dK = np.swapaxes(dS, -1, -2) @ Q * scale
    return dQ, dK, dV
