"""Scaled dot-product attention: Attention(Q, K, V) = softmax(QKᵀ / √d_k) V.

The lecture's Section 4, one line per step: raw scores QKᵀ, scale by 1/√d_k, mask, softmax
over the keys, weighted sum of the values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from ._shapes import as_float, check_shapes
from .linear import linear
from .masks import apply_mask, apply_mask_in_place, causal_mask
from .softmax import softmax, softmax_in_place


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

    @property
    def exp_scores(self) -> np.ndarray:
        """exp of the masked scores, as worked by hand (Step 3b): blocked entries give 0.
        Unshifted, so it overflows to inf for scores above ~709; the weights never do."""
        with np.errstate(over="ignore"):
            return np.exp(self.masked_scores)

    @property
    def row_sums(self) -> np.ndarray:
        """Σ_j exp(score_ij) per query row, (..., L, 1): the softmax denominators."""
        return np.sum(self.exp_scores, axis=-1, keepdims=True)


def attention_shapes(Q, K, V) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, int]]:
    """Validate Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v); return them as float64."""
    Q, K, V = as_float(Q, "Q"), as_float(K, "K"), as_float(V, "V")
    dims = check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k"), V=(V, "... S d_v"))
    return Q, K, V, dims


def _attention_steps(Q, K, V, d_k, mask, scale) -> AttentionSteps:
    """The steps of attention on inputs already validated by ``attention_shapes``."""
    scale = 1.0 / np.sqrt(d_k) if scale is None else float(scale)
    raw_scores = Q @ np.swapaxes(K, -1, -2)
    scaled_scores = raw_scores * scale
    masked_scores = apply_mask(scaled_scores, mask)
    weights = softmax(masked_scores, axis=-1)
    return AttentionSteps(raw_scores, scale, scaled_scores, masked_scores, weights, weights @ V)


def attention_weights(Q, K, mask=None, scale=None) -> np.ndarray:
    """P = softmax(QKᵀ · scale + M) over the keys, scale = 1/√d_k by default: the weights of
    ``scaled_dot_product_attention`` without its intermediate steps — the scores are scaled,
    masked and normalised in their own buffer, so P is the only (..., L, S) array made.

    Shapes: Q (..., L, d_k), K (..., S, d_k) → P (..., L, S); ``mask`` as there.

    The buffer is key-major: score (l, s) of batch element b is stored at buffer[s, b, l], and
    P is the (..., L, S) view of it. The softmax's max and sum over the S keys then run over
    S whole rows of memory, instead of one tiny reduction of S numbers per query (a few tens
    of ns each: most of the softmax's time at S = 16).
    """
    Q, K = as_float(Q, "Q"), as_float(K, "K")
    check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k"))
    return _weights(Q, K, mask, scale)


def _weights(Q, K, mask, scale) -> np.ndarray:
    """``attention_weights`` on Q and K already validated (float64, shapes checked)."""
    scale = 1.0 / np.sqrt(Q.shape[-1]) if scale is None else float(scale)
    buffer = np.empty((K.shape[-2], *Q.shape[:-1]))  # (S, ..., L)
    scores = buffer.transpose(*range(1, buffer.ndim), 0)   # the same memory as (..., L, S)
    np.matmul(Q, K.swapaxes(-1, -2), out=scores)
    buffer *= scale
    apply_mask_in_place(scores, mask)
    softmax_in_place(buffer, axis=0)                  # over the keys
    return scores


def scaled_dot_product_attention(Q, K, V, mask=None, scale=None, return_steps=False):
    """Z = softmax(QKᵀ · scale + mask) V with scale = 1/√d_k by default.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v) → Z (..., L, d_v).
    ``mask``: bool (True = may attend) or additive float, broadcastable to (..., L, S).
    Returns Z, or ``AttentionSteps`` with every intermediate when ``return_steps`` is true.
    A fully masked query row gets zero weights and a zero output (as PyTorch ≥ 2.5).
    """
    Q, K, V, dims = attention_shapes(Q, K, V)
    return validated_attention(Q, K, V, dims, mask, scale, return_steps)


def validated_attention(Q, K, V, dims, mask=None, scale=None, return_steps=False):
    """``scaled_dot_product_attention`` on what ``attention_shapes`` returned: the inputs are
    checked once (most attentions the build's mistake search runs are inside twins, which
    read the shapes first and pass them on here)."""
    if return_steps:
        return _attention_steps(Q, K, V, dims["d_k"], mask, scale)
    return _weights(Q, K, mask, scale) @ V


def self_attention(X, W_Q, W_K, W_V, mask=None, return_steps=False):
    """Single-head self-attention of the lecture: Q = XW_Q, K = XW_K, V = XW_V, then
    Z = softmax(QKᵀ/√d_k) V. The same weights on another sentence give other K and V — which
    is what makes the output contextual.

    Shapes: X (..., L, d_model), W_Q, W_K (d_model, d_k), W_V (d_model, d_v) → Z (..., L, d_v);
    ``AttentionSteps`` with ``return_steps`` (Q, K, V are ``X @ W``).
    """
    X = as_float(X, "X")
    check_shapes(X=(X, "... L d_model"), W_Q=(W_Q, "d_model d_k"), W_K=(W_K, "d_model d_k"),
                 W_V=(W_V, "d_model d_v"))
    Q, K, V = (linear(X, W) for W in (W_Q, W_K, W_V))
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


def causal_attention(Q, K, V, return_steps=False):
    """Decoder self-attention: query i attends to keys 0..i only (``causal_mask``), so every
    position is trained in parallel without seeing its future. Changing tokens after i
    never changes output row i.

    Shapes: Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v) → Z (..., L, d_v).
    """
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    return scaled_dot_product_attention(Q, K, V, mask=causal_mask(L, S), return_steps=return_steps)


class AttentionCache(NamedTuple):
    """What ``attention_backward`` needs of Z = PV, P = softmax(QKᵀ·scale + M): the inputs
    Q (..., L, d_k), K (..., S, d_k), V (..., S, d_v), the weights P (..., L, S) and the scale."""
    Q: np.ndarray
    K: np.ndarray
    V: np.ndarray
    P: np.ndarray
    scale: float


def attention_forward(Q, K, V, mask=None, scale=None):
    """Forward pass kept for backprop. Returns ``(Z, cache)``, an ``AttentionCache``; shapes as
    in ``scaled_dot_product_attention``."""
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"]) if scale is None else float(scale)
    P = _weights(Q, K, mask, scale)
    return P @ V, AttentionCache(Q, K, V, P, scale)


def attention_weights_backward(dZ, cache) -> np.ndarray:
    """dP = ∂ℓ/∂P = dZ Vᵀ, the gradient with respect to the attention weights: the first step
    of ``attention_backward``. Shapes: dZ (..., L, d_v) → dP (..., L, S)."""
    _, _, V, P, _ = cache
    dZ = as_float(dZ, "dZ")
    check_shapes(P=(P, "... L S"), V=(V, "... S d_v"), dZ=(dZ, "... L d_v"))
    return dZ @ np.swapaxes(V, -1, -2)


def attention_backward(dZ, cache):
    """Gradients of attention (S = QKᵀ·scale + M, P = softmax(S), Z = PV):

    dV = Pᵀ dZ,  dP = dZ Vᵀ,  dS = P ⊙ (dP − rowsum(dP ⊙ P)),
    dQ = dS K · scale,  dK = dSᵀ Q · scale.

    Shapes: dZ (..., L, d_v) → dQ (..., L, d_k), dK (..., S, d_k), dV (..., S, d_v).
    """
    Q, K, V, P, scale = cache
    dZ = as_float(dZ, "dZ")
    check_shapes(P=(P, "... L S"), V=(V, "... S d_v"), dZ=(dZ, "... L d_v"))
    dV = np.swapaxes(P, -1, -2) @ dZ
    dP = dZ @ np.swapaxes(V, -1, -2)
    dS = P * (dP - np.sum(dP * P, axis=-1, keepdims=True))
    dQ = dS @ K * scale
    dK = np.swapaxes(dS, -1, -2) @ Q * scale
    return dQ, dK, dV


def gradient_check(Q, K, V, dZ, row: int, col: int, h: float) -> float:
    """The centred difference (ℓ(Q + hE) − ℓ(Q − hE)) / 2h of ℓ(Q) = Σ Z ⊙ dZ, Z = Attention(Q, K, V):
    the finite-difference check of dQ[row, col] (E is 1 at (row, col), 0 elsewhere; its error
    is O(h²)). Shapes as ``scaled_dot_product_attention``; dZ as Z."""
    Q = as_float(Q, "Q")
    if not (0 <= row < Q.shape[-2] and 0 <= col < Q.shape[-1]):
        raise ValueError(f"gradient_check: entry ({row}, {col}) is outside Q of shape {Q.shape}")
    E = np.zeros_like(Q)
    E[..., row, col] = 1.0
    dZ = as_float(dZ, "dZ")

    def loss(q):
        return float(np.sum(scaled_dot_product_attention(q, K, V) * dZ))
    return (loss(Q + h * E) - loss(Q - h * E)) / (2 * h)
