"""Twins of the gradients reference functions, for the build's mistake search: each registered with
``add_twin``/``twin`` so that TWINS stays the one registry.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np  # noqa: F401

from ..scaling import DotProductMoments
from .registry import add_twin, twin  # noqa: F401

from .._shapes import as_float
from ..attention import attention_backward
from .common import scale_twin


# --- the softmax's backward pass ------------------------------------------------------------
# The reference: dx = p ⊙ (dp − Σ_j dp_j p_j), the Jacobian diag(p) − ppᵀ applied to dp.

@twin("softmax_backward",
      "the softmax gradient with Σ dp in the row term instead of Σ dp·p",
      "dx_j = Σ_i dp_i p_i(δ_ij − p_j) = p_j(dp_j − Σ_i dp_i p_i): the sum weights each dp_i by "
      "its probability p_i. Without the p it is no longer the expected upstream gradient.",
      "dx = p * (dp - dp.sum(-1, keepdims=True))  # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_sum_without_p(dp, cache):
    dp = as_float(dp, "dp")
    return cache * (dp - np.sum(dp, axis=-1, keepdims=True))


@twin("softmax_backward",
      "the factor p_i in front dropped: 1 − p_i instead of p_i(1 − p_i) (for a whole row, dp − Σ dp·p instead of p ⊙ (dp − Σ dp·p))",
      "You dropped the factor p_i: the softmax's derivative ∂p_i/∂z_j = p_i(δ_ij − p_j) starts "
      "with p_i, so ∂p_i/∂z_i = p_i(1 − p_i). For a whole row the bracket is multiplied by p: "
      "dx = p ⊙ (dp − Σ dp·p).",
      "dx = dp - (dp * p).sum(-1, keepdims=True)  # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_no_outer_p(dp, cache):
    dp = as_float(dp, "dp")
    return dp - np.sum(dp * cache, axis=-1, keepdims=True)


@twin("softmax_backward",
      "the softmax gradient with its sign flipped: p ⊙ (Σ dp·p − dp)",
      "The Jacobian is diag(p) − ppᵀ: the diagonal term p_j dp_j is positive and the row term "
      "−p_j Σ dp·p negative. Swapping them negates the gradient, so descent climbs the loss.",
      "dx = p * ((dp * p).sum(-1, keepdims=True) - dp)  # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_sign_flipped(dp, cache):
    dp = as_float(dp, "dp")
    return cache * (np.sum(dp * cache, axis=-1, keepdims=True) - dp)


@twin("softmax_backward",
      "the softmax's backward step skipped: the gradient of its output (dp; dA in attention) passed on unchanged",
      "The scores reach the loss through the softmax, so their gradient is the output's gradient "
      "times the softmax's derivative: dx = p ⊙ (dp − Σ dp·p). Passing dp on treats the softmax "
      "as if it did nothing.",
      "dx = dp                                # should be p * (dp - (dp * p).sum(-1, keepdims=True))")
def softmax_backward_skipped(dp, cache):
    dp = as_float(dp, "dp")
    if dp.shape != np.shape(cache):
        raise ValueError(f"dp: expected shape {np.shape(cache)} (the forward output), got {dp.shape}")
    return dp.copy()


# --- the backward pass through attention -----------------------------------------------------
# The reference (S = QKᵀ·s, P = softmax(S), Z = PV): dV = Pᵀ dZ, dP = dZ Vᵀ,
# dS = P ⊙ (dP − rowsum(dP ⊙ P)), dQ = dS K·s, dK = dSᵀ Q·s.

def _T(x):
    return np.swapaxes(x, -1, -2)


@twin("attention_backward",
      "dQ and dK divided by d_k instead of multiplied by the forward scale 1/√d_k",
      "S = QKᵀ/√d_k, so the chain rule brings back the same factor: dQ = dS K/√d_k and "
      "dK = dSᵀQ/√d_k. 1/d_k is the variance's inverse, not the scale the forward pass used.",
      "dQ = dS @ K / d_k                      # should be dS @ K / np.sqrt(d_k)")
def attention_backward_divide_by_d_k(dZ, cache):
    dQ, dK, dV = attention_backward(dZ, cache)
    d_k = np.shape(cache.Q)[-1]
    return dQ / cache.scale / d_k, dK / cache.scale / d_k, dV


@twin("attention_backward",
      "dQ and dK computed from dA = dZ Vᵀ: the softmax's backward step skipped (dS = dA)",
      "The scores reach Z through the softmax: first dS = A ⊙ (dA − rowsum(dA ⊙ A)), then "
      "dQ = dS K/√d_k and dK = dSᵀQ/√d_k. Using dA in place of dS skips the softmax's Jacobian.",
      "dQ = (dZ @ V.T) @ K / np.sqrt(d_k)     # should be dS @ K / np.sqrt(d_k), dS from softmax_backward")
def attention_backward_softmax_skipped(dZ, cache):
    Q, K, V, P, scale = cache
    dQ, dK, dV = attention_backward(dZ, cache)
    dA = as_float(dZ, "dZ") @ _T(V)
    return dA @ K * scale, _T(dA) @ Q * scale, dV


@twin("attention_backward",
      "dV = dZᵀ A: the transpose on the wrong factor (the result is d_v × n_k, dV's transpose)",
      "Z = AV, so dV = Aᵀ dZ: each key's value gradient collects the upstream gradients of the "
      "queries that attended to it. dZᵀA is (Aᵀ dZ)ᵀ, with rows and columns swapped.",
      "dV = dZ.T @ A                          # should be A.T @ dZ")
def attention_backward_dv_transposed(dZ, cache):
    dQ, dK, _ = attention_backward(dZ, cache)
    return dQ, dK, _T(as_float(dZ, "dZ")) @ cache.P


@twin("attention_backward",
      "dV = Sᵀ dZ: the scores S = QKᵀ/√d_k used instead of the attention weights A",
      "Z = AV blends the values with the weights A = softmax(S), so dV = Aᵀ dZ. The scores are "
      "only the softmax's input; they never multiply V.",
      "dV = S.T @ dZ                          # should be A.T @ dZ, A = softmax(S)")
def attention_backward_dv_from_scores(dZ, cache):
    Q, K, V, P, scale = cache
    dQ, dK, _ = attention_backward(dZ, cache)
    S = Q @ _T(K) * scale
    return dQ, dK, _T(S) @ as_float(dZ, "dZ")


# --- the scale: Var(q·k) ----------------------------------------------------------------------

def _two_d_k(dims) -> float:
    """1/√(2 d_k); d_k = 2 raises: √4 = 2 = d_k, the twin sdpa_divide_by_d_k itself."""
    if dims["d_k"] == 2:
        raise ValueError("d_k = 2: 1/√(2 d_k) is 1/d_k")
    return 1.0 / np.sqrt(2 * dims["d_k"])


scale_twin(
    "sdpa_scale_by_sqrt_2d_k", _two_d_k,
    "softmax(QKᵀ/√(2d_k))V: the 2d_k components of q and k counted instead of the d_k products",
    "q·k = Σ_i q_i k_i is a sum of d_k products, each of variance E[q_i²]E[k_i²] = 1, so "
    "Var(q·k) = d_k and the scale is 1/√d_k. The 2d_k components pair up into d_k terms.",
    "scores = Q @ K.T / np.sqrt(2 * d_k)    # should be / np.sqrt(d_k)")


# --- the moments of q·k ------------------------------------------------------------------------

def _moments(variance: float, d_k: int) -> DotProductMoments:
    return DotProductMoments(float(variance), float(np.sqrt(variance / d_k)))


add_twin("dot_product_moments_unit_variances", "dot_product_moments",
         lambda d_k, var_q=1.0, var_k=1.0: DotProductMoments(float(d_k), 1.0),
         "the unit-variance results used anyway (Var(q·k) = d_k, standard deviation 1 after scaling): σ_q² and σ_k² left out",
         "Var(q_i k_i) = Var(q_i)·Var(k_i) for independent zero-mean factors, so the d_k terms "
         "give d_k σ_q² σ_k². Only for unit variances is it d_k — and only then does 1/√d_k bring "
         "the scores back to standard deviation 1.",
         "var = d_k                              # should be d_k * var_q * var_k")
add_twin("dot_product_moments_variances_added", "dot_product_moments",
         lambda d_k, var_q=1.0, var_k=1.0: _moments(d_k * (var_q + var_k), d_k),
         "Var(q·k) = d_k (σ_q² + σ_k²): the variances of the two factors added instead of multiplied",
         "The variance of a product of independent zero-mean variables is the product of their "
         "variances: Var(q_i k_i) = σ_q² σ_k², not σ_q² + σ_k².",
         "var = d_k * (var_q + var_k)            # should be d_k * var_q * var_k")
add_twin("dot_product_moments_std_not_rooted", "dot_product_moments",
         lambda d_k, var_q=1.0, var_k=1.0: DotProductMoments(float(d_k * var_q * var_k), float(var_q * var_k)),
         "the scaled score's variance σ_q² σ_k² given for its standard deviation (the square root forgotten)",
         "Dividing by √d_k divides the variance by d_k: what is left is σ_q² σ_k², and the "
         "standard deviation is its square root, σ_q σ_k.",
         "std = var / d_k                        # should be np.sqrt(var / d_k)")
add_twin("dot_product_moments_std_unscaled", "dot_product_moments",
         lambda d_k, var_q=1.0, var_k=1.0: DotProductMoments(float(d_k * var_q * var_k), float(np.sqrt(d_k * var_q * var_k))),
         "the standard deviation of the raw score q·k given, not of the scaled score q·k/√d_k",
         "The question is about the scaled score: dividing q·k by √d_k divides its standard "
         "deviation √(d_k σ_q² σ_k²) by √d_k, leaving σ_q σ_k.",
         "std = np.sqrt(var)                     # should be np.sqrt(var / d_k)")


# --- dP = dZ Vᵀ ----------------------------------------------------------------------------------

def _weights_backward_transposed(dZ, cache):
    _, _, V, _, _ = cache
    return np.asarray(V, dtype=float) @ np.swapaxes(np.asarray(dZ, dtype=float), -1, -2)


def _weights_backward_times_weights(dZ, cache):
    _, _, V, P, _ = cache
    return (np.asarray(dZ, dtype=float) @ np.swapaxes(V, -1, -2)) * P


add_twin("attention_weights_backward_transposed", "attention_weights_backward", _weights_backward_transposed,
         "V dZᵀ: the gradient with respect to the weights transposed (keys on the rows)",
         "Z = PV, so ∂ℓ/∂P = (∂ℓ/∂Z) Vᵀ: entry (i, j) pairs query i's output gradient with "
         "key j's value. V dZᵀ puts the keys on the rows; its shape fits only when L = S.",
         "dP = V @ dZ.T                          # should be dZ @ V.T")
add_twin("attention_weights_backward_times_weights", "attention_weights_backward", _weights_backward_times_weights,
         "dZ Vᵀ multiplied by the weights P: the softmax's backward step started one step too early",
         "∂ℓ/∂P is the plain product dZ Vᵀ; multiplying by P belongs to the next step, the "
         "softmax's backward pass dS = P ⊙ (dP − rowsum(dP ⊙ P)).",
         "dP = (dZ @ V.T) * P                    # should be dZ @ V.T")


# --- the cross-entropy's gradient into the logits ---------------------------------------------

def _ce_backward(dloss, cache, sign=1.0, onehot=True, over_all_rows=False):
    log_p, targets, valid, count = cache[:4]      # (the smoothing, not used by these twins, follows)
    dz = np.exp(log_p)
    if onehot:
        np.put_along_axis(dz, targets[..., None], np.take_along_axis(dz, targets[..., None], axis=-1) - 1.0, axis=-1)
    rows = valid.size if over_all_rows else count
    return sign * dz * valid[..., None] * (float(dloss) / rows)


add_twin("softmax_cross_entropy_backward_sign_flipped", "softmax_cross_entropy_backward",
         lambda dloss, cache: _ce_backward(dloss, cache, sign=-1.0),
         "onehot(y) − softmax(z): the gradient of the cross-entropy with its sign flipped",
         "CE = −log softmax(z)_y, so ∂CE/∂z = softmax(z) − onehot(y): positive on the wrong "
         "classes (pushing their logits down), −(1 − p_y) on the target.",
         "dz = onehot - p                        # should be p - onehot")
add_twin("softmax_cross_entropy_backward_no_onehot", "softmax_cross_entropy_backward",
         lambda dloss, cache: _ce_backward(dloss, cache, onehot=False),
         "softmax(z) alone: the target's −1 of softmax(z) − onehot(y) forgotten",
         "The −log p_y term contributes −1 at the target: ∂CE/∂z = p − onehot(y). Without it "
         "every logit, the target's too, is pushed down.",
         "dz = p / n                             # should be (p - onehot) / n")
add_twin("softmax_cross_entropy_backward_over_all_rows", "softmax_cross_entropy_backward",
         lambda dloss, cache: _ce_backward(dloss, cache, over_all_rows=True),
         "divided by every position instead of the positions counted in the loss",
         "The loss averages over the counted targets only (the MLM's selected positions, the "
         "labels ≠ −100): its gradient is divided by their number n, not by all T rows.",
         "dz = (p - onehot) / T                  # should be / n, the counted positions")


# --- the backward pass's scale, the variance of q·k: wrong answers no other twin names -------

def _weights_backward_scaled(dZ, cache):
    _, _, V, _, scale = cache
    return (np.asarray(dZ, dtype=float) @ np.swapaxes(V, -1, -2)) * scale


add_twin("attention_weights_backward_scaled", "attention_weights_backward", _weights_backward_scaled,
         "dZ Vᵀ multiplied by 1/√d_k: the scale put in one step too early (so dS is 1/√d_k too small as well)",
         "Z = AV, so dA is the plain product dZ Vᵀ, and dS = A ⊙ (dA − rowsum(dA ⊙ A)) has no "
         "scale either. The 1/√d_k sits between Q, K and the scores, S = QKᵀ/√d_k: it enters "
         "only at the last step, dQ = dS K/√d_k and dK = dSᵀQ/√d_k.",
         "dA = dZ @ V.T / np.sqrt(d_k)           # should be dZ @ V.T (the scale comes in dQ and dK)")


@twin("attention_backward",
      "dV = Aᵀ dZ multiplied by 1/√d_k: the scale applied to the values' gradient too",
      "Z = AV does not contain the scale: dV = Aᵀ dZ. The 1/√d_k is part of the scores "
      "S = QKᵀ/√d_k, so only dQ and dK carry it.",
      "dV = A.T @ dZ / np.sqrt(d_k)           # should be A.T @ dZ")
def attention_backward_dv_scaled(dZ, cache):
    dQ, dK, dV = attention_backward(dZ, cache)
    return dQ, dK, dV * cache.scale


def _check_moments(d_k, var_q, var_k):
    if d_k < 2:
        raise ValueError("d_k = 1: a single product, nothing to sum")


def _moments_std_for_variance(d_k, var_q=1.0, var_k=1.0):
    _check_moments(d_k, var_q, var_k)
    return DotProductMoments(float(np.sqrt(d_k * var_q * var_k)), float(np.sqrt(var_q * var_k)))


def _moments_one_term(d_k, var_q=1.0, var_k=1.0):
    _check_moments(d_k, var_q, var_k)
    return DotProductMoments(float(var_q * var_k), float(np.sqrt(var_q * var_k)))


add_twin("dot_product_moments_std_for_variance", "dot_product_moments", _moments_std_for_variance,
         "the standard deviation √(d_k σ_q² σ_k²) given for the variance (the square root taken once too often)",
         "The variance is d_k σ_q² σ_k² itself: each of the d_k products q_i k_i has variance "
         "σ_q² σ_k², and variances of independent terms add. Its square root is the standard "
         "deviation, a different number.",
         "var = np.sqrt(d_k * var_q * var_k)     # should be d_k * var_q * var_k")
add_twin("dot_product_moments_one_term", "dot_product_moments", _moments_one_term,
         "σ_q² σ_k²: the variance of one product q_i k_i, not of the sum of all d_k of them",
         "q·k = q_1 k_1 + … + q_{d_k} k_{d_k} adds d_k independent products, each of variance "
         "σ_q² σ_k², so the variances add up to d_k σ_q² σ_k².",
         "var = var_q * var_k                    # should be d_k * var_q * var_k")


# --- the softmax Jacobian by hand: ∂p_i/∂z_j = p_i(δ_ij − p_j) -----------------------------------

@twin("softmax_jacobian",
      "the factor p_i dropped: 1 − p_i instead of p_i(1 − p_i)",
      "You dropped the factor p_i in front: ∂p_i/∂z_j = p_i(δ_ij − p_j), so on the diagonal "
      "∂p_i/∂z_i = p_i(1 − p_i), a product of two numbers below 1.",
      "J = np.eye(n) - p                      # should be np.diag(p) - np.outer(p, p)")
def softmax_jacobian_no_outer_p(p):
    p = as_float(p, "p")
    return np.eye(p.shape[-1]) - np.ones(p.shape[-1])[:, None] * p[..., None, :]


# --- the gradient check: (ℓ(Q + hE) − ℓ(Q − hE)) / 2h -----------------------------------------

def _loss(Q, K, V, dZ):
    from ..attention import scaled_dot_product_attention
    return float(np.sum(scaled_dot_product_attention(Q, K, V) * as_float(dZ, "dZ")))


def _unit(shape, row, col):
    if not (0 <= row < shape[-2] and 0 <= col < shape[-1]):
        raise ValueError(f"entry ({row}, {col}) is outside a matrix of shape {shape}")
    E = np.zeros(shape)
    E[..., row, col] = 1.0
    return E


def _check_one_sided(Q, K, V, dZ, row, col, h):
    Q = as_float(Q, "Q")
    return (_loss(Q + h * _unit(Q.shape, row, col), K, V, dZ) - _loss(Q, K, V, dZ)) / h


def _check_over_h(Q, K, V, dZ, row, col, h):
    Q = as_float(Q, "Q")
    E = _unit(Q.shape, row, col)
    return (_loss(Q + h * E, K, V, dZ) - _loss(Q - h * E, K, V, dZ)) / h


def _check_on_keys(Q, K, V, dZ, row, col, h):
    K = as_float(K, "K")
    E = _unit(K.shape, row, col)
    return (_loss(Q, K + h * E, V, dZ) - _loss(Q, K - h * E, V, dZ)) / (2 * h)


def _check_analytic(Q, K, V, dZ, row, col, h):
    from ..attention import attention_forward
    _, cache = attention_forward(Q, K, V)
    return float(attention_backward(as_float(dZ, "dZ"), cache)[0][..., row, col])


add_twin("gradient_check_one_sided", "gradient_check", _check_one_sided,
         "a one-sided difference (ℓ(Q + hE) − ℓ(Q)) / h instead of the centred one",
         "The check asked for runs the forward pass at Q + hE and at Q − hE and divides the "
         "difference by 2h. The one-sided difference from ℓ(Q) is a different estimate, with "
         "an error of order h instead of h².",
         "(loss(Q + h * E) - loss(Q)) / h       # should be (loss(Q + h * E) - loss(Q - h * E)) / (2 * h)")
add_twin("gradient_check_over_h", "gradient_check", _check_over_h,
         "the centred difference divided by h instead of 2h (twice the estimate)",
         "Q + hE and Q − hE are 2h apart, so their difference is divided by 2h.",
         "(loss(Q + h * E) - loss(Q - h * E)) / h  # should be / (2 * h)")
add_twin("gradient_check_on_keys", "gradient_check", _check_on_keys,
         "the entry of K perturbed instead of the entry of Q",
         "The check is of dQ[i, j]: move that entry of Q by ±h and keep K, V and dZ as they are.",
         "loss(Q, K + h * E) …                 # should perturb Q: loss(Q + h * E, K)")
add_twin("gradient_check_analytic", "gradient_check", _check_analytic,
         "the analytic dQ entry given instead of the finite difference",
         "The check runs the forward pass twice more and divides: with this large h its value "
         "differs from dQ[i, j] by an O(h²) error — that difference is what the next part asks.",
         "dQ[i, j]                               # should be (loss(Q + h * E) - loss(Q - h * E)) / (2 * h)")
