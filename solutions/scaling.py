"""Why divide by √d_k: what the scale does to the scores, the weights and the gradients.

For q, k with independent components of mean 0 and variance 1, q·k = Σ_i q_i k_i has variance
d_k; dividing by √d_k brings it back to 1. Unscaled, large d_k pushes softmax towards one-hot:
the max weight → 1, the entropy → 0, and the Jacobian diag(p) − ppᵀ → 0 (vanishing gradients).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._shapes import as_float, check_shapes
from .softmax import softmax


def dot_product_variance(d_k: int, num_samples: int = 100_000, rng=None) -> tuple[float, float]:
    """Empirical Var(q·k) and Var(q·k/√d_k) for q, k ~ N(0, I_{d_k}): ≈ d_k and ≈ 1."""
    rng = np.random.default_rng(rng)
    q = rng.standard_normal((num_samples, d_k))
    k = rng.standard_normal((num_samples, d_k))
    dots = np.sum(q * k, axis=-1)
    return float(np.var(dots)), float(np.var(dots / np.sqrt(d_k)))


@dataclass(frozen=True)
class DotProductMoments:
    """variance: Var(q·k); scaled_std: the standard deviation of q·k/√d_k."""

    variance: float
    scaled_std: float


def dot_product_moments(d_k: int, var_q: float = 1.0, var_k: float = 1.0) -> DotProductMoments:
    """Var(q·k) = Σ_i Var(q_i k_i) = d_k σ_q² σ_k² for independent zero-mean components of
    variances σ_q², σ_k²; after the 1/√d_k scale the standard deviation is σ_q σ_k — 1 only
    for unit-variance components, the case the scale is designed for."""
    if d_k < 1 or var_q < 0 or var_k < 0:
        raise ValueError(f"dot_product_moments: expected d_k ≥ 1 and variances ≥ 0, got {d_k}, {var_q}, {var_k}")
    variance = float(d_k * var_q * var_k)
    return DotProductMoments(variance, float(np.sqrt(variance / d_k)))


def attention_entropy(weights) -> np.ndarray:
    """H(p) = −Σ_j p_j log p_j in nats, per row (0·log 0 = 0). Shapes: (..., S) → (...)."""
    p = as_float(weights, "weights")
    log_p = np.log(p, out=np.zeros_like(p), where=p > 0)
    return -np.sum(p * log_p, axis=-1)


def softmax_jacobian(p) -> np.ndarray:
    """∂softmax/∂z = diag(p) − ppᵀ. Shapes: p (..., n) → (..., n, n)."""
    p = as_float(p, "p")
    return p[..., :, None] * np.eye(p.shape[-1]) - p[..., :, None] * p[..., None, :]


@dataclass(frozen=True)
class ScalingReport:
    """Row means with and without the 1/√d_k scale."""

    max_weight_unscaled: float
    max_weight_scaled: float
    entropy_unscaled: float
    entropy_scaled: float
    jacobian_norm_unscaled: float
    jacobian_norm_scaled: float


def scaling_comparison(Q, K) -> ScalingReport:
    """Compare softmax(QKᵀ) with softmax(QKᵀ/√d_k): mean max weight, mean entropy (nats) and
    mean Frobenius norm of the softmax Jacobian per query row. Q (..., L, d_k), K (..., S, d_k)."""
    Q, K = as_float(Q, "Q"), as_float(K, "K")
    d_k = check_shapes(Q=(Q, "... L d_k"), K=(K, "... S d_k"))["d_k"]
    raw = Q @ np.swapaxes(K, -1, -2)
    stats = []
    for scores in (raw, raw / np.sqrt(d_k)):
        p = softmax(scores, axis=-1)
        stats.append((float(p.max(axis=-1).mean()), float(attention_entropy(p).mean()),
                      float(np.linalg.norm(softmax_jacobian(p), axis=(-2, -1)).mean())))
    (m0, h0, j0), (m1, h1, j1) = stats
    return ScalingReport(m0, m1, h0, h1, j0, j1)
