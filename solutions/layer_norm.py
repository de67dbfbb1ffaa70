"""Layer normalization over the feature axis of each token (as ``nn.LayerNorm``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float, check_shapes


class LayerNormCache(NamedTuple):
    """What ``layer_norm_backward`` needs: x̂ = (x − μ) r (..., D), r = (σ² + ε)^−½ (..., 1)
    and γ (D,)."""
    x_hat: np.ndarray
    r: np.ndarray
    gamma: np.ndarray


def layer_norm_forward(x, gamma, beta, eps: float = 1e-5) -> tuple[np.ndarray, LayerNormCache]:
    """y = γ ⊙ (x − μ) / √(σ² + ε) + β, with μ, σ² over the last axis (biased variance,
    ε inside the square root, as PyTorch). Shapes: x (..., D), γ (D,), β (D,) → y (..., D).
    Returns ``(y, cache)``."""
    x, gamma, beta = as_float(x, "x"), as_float(gamma, "gamma"), as_float(beta, "beta")
    check_shapes(x=(x, "... D"), gamma=(gamma, "D"), beta=(beta, "D"))
    x_hat = x - mean(x)
    r = 1.0 / np.sqrt(variance_of_centred(x_hat) + eps)
    x_hat *= r
    y = x_hat * gamma
    y += beta
    return y, LayerNormCache(x_hat, r, gamma)


def mean(x: np.ndarray) -> np.ndarray:
    """μ = Σ_i x_i / D over the last axis, (..., 1)."""
    return x.sum(axis=-1, keepdims=True) / x.shape[-1]


def variance_of_centred(x_hat: np.ndarray) -> np.ndarray:
    """σ² = Σ_i x̂_i² / D of x̂ = x − μ (biased: divides by D, as PyTorch), (..., 1). The sum of
    squares in one pass, with no (..., D) temporary for x̂²: einsum's dot per row, where
    ``np.mean(x_hat * x_hat)`` would write and read a second array of x's size (and LayerNorm
    follows every sublayer of the mini encoder-decoder)."""
    return np.einsum("...i,...i->...", x_hat, x_hat)[..., None] / x_hat.shape[-1]


def layer_norm(x, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm(x) = γ ⊙ (x − μ)/√(σ² + ε) + β per token. Shapes: x (..., D) → (..., D)."""
    return layer_norm_in_place(as_float(x, "x").copy(), gamma, beta, eps)


def layer_norm_in_place(x: np.ndarray, gamma, beta, eps: float = 1e-5) -> np.ndarray:
    """``layer_norm`` computed in x's own memory (x: a float64 array the caller owns and no
    longer needs, e.g. a fresh residual sum). Returns x; the same steps as ``layer_norm_forward``:
    x − μ, ÷ √(σ² + ε), ⊙ γ, + β, each overwriting x."""
    gamma, beta = as_float(gamma, "gamma"), as_float(beta, "beta")
    check_shapes(x=(x, "... D"), gamma=(gamma, "D"), beta=(beta, "D"))
    x -= mean(x)
    x *= 1.0 / np.sqrt(variance_of_centred(x) + eps)
    x *= gamma
    x += beta
    return x


def layer_norm_backward(dy, cache) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """With x̂ = (x − μ) r, r = (σ² + ε)^−½ and g = dy ⊙ γ:

    dβ = Σ dy,  dγ = Σ dy ⊙ x̂,  dx = (r / D) (D g − Σ_D g − x̂ Σ_D g ⊙ x̂).

    Shapes: dy (..., D) → dx (..., D), dγ (D,), dβ (D,).
    """
    x_hat, r, gamma = cache
    dy = as_float(dy, "dy")
    check_shapes(y=(x_hat, "... D"), dy=(dy, "... D"))
    D = x_hat.shape[-1]
    g = dy * gamma
    dx = (r / D) * (D * g - g.sum(axis=-1, keepdims=True)
                    - x_hat * np.sum(g * x_hat, axis=-1, keepdims=True))
    dgamma = np.sum(dy * x_hat, axis=tuple(range(dy.ndim - 1)))
    dbeta = np.sum(dy, axis=tuple(range(dy.ndim - 1)))
    return dx, dgamma, dbeta
