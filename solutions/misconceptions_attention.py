"""Misconception twins of attention itself: scores, scale, softmax, masks, causal attention,
the softmax's backward pass, and Bahdanau/Luong scoring.

Most are generated: a family of mistakes that differ in one choice (the scale, the softmax's
axis, what is done to the mask, which diagonal the causal mask keeps) is one factory and a
table of its variants, so the space of mistakes is searched systematically instead of written
twin by twin. Every twin registers in ``solutions.misconceptions.MISCONCEPTIONS``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from ._shapes import as_float
from .alignment import AlignmentStep, additive_score, attend, content_score
from .attention import AttentionSteps, attention_shapes, scaled_dot_product_attention
from .masks import apply_mask, causal_mask, padding_mask
from .misconceptions import MISCONCEPTIONS, _bool_mask, add_twin, scale_twin
from .softmax import softmax

SDPA = "scaled_dot_product_attention"


def _steps(raw, scale, scaled, masked, weights, V, return_steps):
    """The twin's own steps (or just its output), so a worked part can be diagnosed too.
    Unnormalised or overflowing weights may give inf/NaN outputs: that is the mistake, quietly."""
    with np.errstate(over="ignore", invalid="ignore"):
        output = weights @ V
    return AttentionSteps(raw, scale, scaled, masked, weights, output) if return_steps else output


def _default_scale(dims, scale):
    return 1.0 / np.sqrt(dims["d_k"]) if scale is None else float(scale)


# --- another scale ---------------------------------------------------------------------------

scale_twin(
    "sdpa_multiply_by_sqrt_d_k", lambda dims: np.sqrt(dims["d_k"]),
    "softmax(QKᵀ·√d_k)V: multiplied by √d_k instead of divided",
    "Multiplying makes the scores' spread grow like d_k, so the softmax saturates even faster "
    "than with no scale at all. The scores are divided by √d_k.",
    "weights = softmax(Q @ K.T * np.sqrt(d_k))  # should be / np.sqrt(d_k)")


# The per-head d_k of both models the lecture describes: BERT-base (768 / 12 heads) and the
# Transformer base model (512 / 8 heads). A student who has learnt "divide by √64 = 8" uses
# it whatever d_k the exercise gives.
HEAD_DIM = 64
MODEL_DIM = 768   # BERT-base's width, the lecture's d_k for one full-width attention


def _divisor(n, what: str) -> float:
    """√n as a scale's divisor; n = 1 raises: dividing by √1 is not dividing at all, which
    is the twin ``sdpa_no_scale`` itself, not another mistake."""
    if n == 1:
        raise ValueError(f"{what} = 1: the same as no scale")
    return float(np.sqrt(n))


scale_twin(
    "sdpa_scale_by_sqrt_d_v", lambda dims: 1.0 / _divisor(dims["d_v"], "d_v"),
    "softmax(QKᵀ/√d_v)V: scaled by the value dimension d_v instead of d_k",
    "The scale comes from Var(q·k) = d_k: the queries' and keys' dimension. The values' "
    "dimension d_v never enters the scores; it only sets the output's width.",
    "weights = softmax(Q @ K.T / np.sqrt(V.shape[-1]))  # should be / np.sqrt(Q.shape[-1])")
scale_twin(
    "sdpa_scale_by_sqrt_head_dim", lambda dims: 1.0 / np.sqrt(HEAD_DIM),
    f"softmax(QKᵀ/√{HEAD_DIM})V: scaled by BERT-base's and the Transformer's per-head "
    f"√{HEAD_DIM} = {int(np.sqrt(HEAD_DIM))} instead of this exercise's √d_k",
    f"√{HEAD_DIM} = {int(np.sqrt(HEAD_DIM))} is right for a head of d_k = {HEAD_DIM} (768/12, "
    "512/8). The scale is always 1/√d_k of the vectors at hand: here d_k is the width of Q and K.",
    f"weights = softmax(Q @ K.T / {int(np.sqrt(HEAD_DIM))})   # should be / np.sqrt(d_k)")
scale_twin(
    "sdpa_scale_by_sqrt_model_dim", lambda dims: 1.0 / np.sqrt(MODEL_DIM),
    f"softmax(QKᵀ/√{MODEL_DIM})V: scaled by BERT-base's model width √{MODEL_DIM} instead of "
    "this head's √d_k",
    f"Each head attends in its own d_k = {MODEL_DIM}/12 = {HEAD_DIM} dimensions, and its scores' "
    f"variance is that d_k: the scale is 1/√d_k of the head, not of the model width {MODEL_DIM}.",
    f"weights = softmax(Q @ K.T / np.sqrt({MODEL_DIM}))  # should be / np.sqrt(d_k) of the head")


# --- the softmax over another axis ----------------------------------------------------------

def softmax_axis_twin(name: str, axis, summary: str, explanation: str, code: str):
    """Register an attention twin whose softmax runs over ``axis`` instead of the key axis."""
    def function(Q, K, V, mask=None, scale=None, return_steps=False):
        Q, K, V, dims = attention_shapes(Q, K, V)
        scale = _default_scale(dims, scale)
        raw = Q @ np.swapaxes(K, -1, -2)
        masked = apply_mask(raw * scale, mask)
        return _steps(raw, scale, raw * scale, masked, softmax(masked, axis=axis), V, return_steps)
    return add_twin(name, SDPA, function, summary, explanation, code)


softmax_axis_twin(
    "sdpa_softmax_axis_1", 1,
    "the softmax over axis=1: right for one (L, S) matrix, over the queries for a batch (B, L, S)",
    "axis=1 is the key axis only when the scores have two dimensions; with a batch axis in "
    "front it is the queries'. Use axis=-1, the last axis, which is the keys' for any batch.",
    "softmax(scores, axis=1)                # should be axis=-1")
softmax_axis_twin(
    "sdpa_softmax_over_all_entries", (-2, -1),
    "the softmax taken over the whole score matrix at once (all weights sum to 1, not each row)",
    "Each query gets its own distribution over the keys: normalise every row separately "
    "(axis=-1), not the matrix as a whole.",
    "e = np.exp(S); A = e / e.sum()          # should be e / e.sum(-1, keepdims=True)")


# --- other steps of the formula -------------------------------------------------------------

def _sdpa_twin(name, summary, explanation, code):
    """Decorator: register an attention twin with the reference's signature."""
    def register(function):
        return add_twin(name, SDPA, function, summary, explanation, code)
    return register


@_sdpa_twin(
    "sdpa_scale_after_softmax",
    "softmax(QKᵀ)·(1/√d_k) V: the scale applied to the weights after the softmax, not to the scores",
    "The scale must act before the softmax, where it controls how peaked each row is; after it "
    "merely shrinks every weight, and the rows sum to 1/√d_k.",
    "A = softmax(Q @ K.T) / np.sqrt(d_k)   # should be softmax(Q @ K.T / np.sqrt(d_k))")
def _sdpa_scale_after_softmax(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    # Asked for them, such a student writes the scaled (and masked) scores and their exp right;
    # the mistake is that the softmax is then taken of the unscaled scores.
    weights = softmax(apply_mask(raw, mask)) * scale
    return _steps(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


@_sdpa_twin(
    "sdpa_unnormalised",
    "exp(QKᵀ/√d_k)V: the exponentials used as weights without dividing by each row's sum",
    "The softmax is exp(s_ij) / Σ_j exp(s_ij): after exponentiating, divide every row by its "
    "sum so that each query's weights add up to 1.",
    "A = np.exp(S)                          # should be np.exp(S) / np.exp(S).sum(-1, keepdims=True)")
def _sdpa_unnormalised(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    masked = apply_mask(raw * scale, mask)
    with np.errstate(over="ignore"):
        weights = np.exp(masked)
    return _steps(raw, scale, raw * scale, masked, weights, V, return_steps)


@_sdpa_twin(
    "sdpa_scores_transposed",
    "attention computed from KQᵀ (row = key, column = query): the score matrix transposed",
    "Row i of the scores belongs to query i: S = QKᵀ, entry (i, j) = q_i·k_j. KQᵀ puts the "
    "keys on the rows, so every softmax runs over the wrong tokens.",
    "S = K @ Q.T                            # should be Q @ K.T")
def _sdpa_scores_transposed(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = K @ np.swapaxes(Q, -1, -2)
    masked = apply_mask(raw * scale, mask)
    return _steps(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_k_not_transposed",
    "attention computed from QK instead of QKᵀ (only possible when d_k equals the number of keys)",
    "q_i·k_j pairs query row i with key row j: S = QKᵀ. QK multiplies query rows with key "
    "columns, which mixes one feature of every key; its shape fits only by accident.",
    "S = Q @ K                              # should be Q @ K.T")
def _sdpa_k_not_transposed(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ K                     # raises unless d_k == S, as the student's code would
    masked = apply_mask(raw * scale, mask)
    return _steps(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_values_from_keys",
    "softmax(QKᵀ/√d_k)K: the weights applied to the keys instead of the values",
    "Keys decide how much each token counts; what is blended is the values: Z = AV. AK "
    "returns a mix of key vectors (with width d_k, not d_v).",
    "Z = A @ K                              # should be A @ V")
def _sdpa_values_from_keys(Q, K, V, mask=None, scale=None, return_steps=False):
    steps = scaled_dot_product_attention(Q, K, V, mask, scale, return_steps=True)
    return _steps(steps.raw_scores, steps.scale, steps.scaled_scores, steps.masked_scores,
                  steps.weights, as_float(K, "K"), return_steps)


@_sdpa_twin(
    "sdpa_q_transposed",
    "attention computed from QᵀK: the transpose put on Q instead of on K",
    "Entry (i, j) of the scores is q_i·k_j, query row i times key row j: S = QKᵀ. QᵀK pairs "
    "feature columns instead of tokens; its shape fits only when every dimension is equal.",
    "S = Q.T @ K                            # should be Q @ K.T")
def _sdpa_q_transposed(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = np.swapaxes(Q, -1, -2) @ K      # raises unless the shapes happen to fit, as the student's would
    masked = apply_mask(raw * scale, mask)
    return _steps(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_weights_transposed",
    "AᵀV: the attention weights transposed before they blend the values",
    "Row i of A is query i's distribution over the keys, so output row i is Σ_j A_ij v_j: "
    "Z = AV. Aᵀ mixes with the weights the keys gave each query — columns, which do not sum to 1.",
    "Z = A.T @ V                            # should be A @ V")
def _sdpa_weights_transposed(Q, K, V, mask=None, scale=None, return_steps=False):
    steps = scaled_dot_product_attention(Q, K, V, mask, scale, return_steps=True)
    weights = np.swapaxes(steps.weights, -1, -2)
    if return_steps:   # the weights are right; only the blend reads them transposed
        return AttentionSteps(steps.raw_scores, steps.scale, steps.scaled_scores, steps.masked_scores,
                              steps.weights, weights @ as_float(V, "V"))
    return weights @ as_float(V, "V")


@_sdpa_twin(
    "sdpa_k_dot_t",
    "K.T on a batch: .T reverses every axis, not only the last two (right for one matrix)",
    "For K of shape (B, S, d_k), K.T has shape (d_k, S, B): the batch axis ends up last. "
    "Swap only the last two axes: np.swapaxes(K, -1, -2) (or K.transpose(0, 2, 1)).",
    "scores = Q @ K.T                        # should be Q @ np.swapaxes(K, -1, -2)")
def _sdpa_k_dot_t(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ K.T                               # raises where the shapes do not fit
    masked = apply_mask(raw * scale, mask)
    return _steps(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_values_times_weights",
    "VA instead of AV: the values multiplied by the weights from the left (only possible when d_v "
    "equals the number of queries)",
    "Output row i is Σ_j A_ij v_j, query i's weights blending the value rows: Z = AV. VA pairs "
    "value features with queries; its shape fits only by accident.",
    "Z = V @ A                              # should be A @ V")
def _sdpa_values_times_weights(Q, K, V, mask=None, scale=None, return_steps=False):
    steps = scaled_dot_product_attention(Q, K, V, mask, scale, return_steps=True)
    V = as_float(V, "V")
    if V.shape[-1] != steps.weights.shape[-2]:
        raise ValueError("V A needs d_v = L")
    return replace(steps, output=V @ steps.weights) if return_steps else V @ steps.weights


@_sdpa_twin(
    "sdpa_mask_added",
    "the boolean mask added to the scores (True counts as +1) instead of blocking with −∞",
    "A True/False mask is not an additive mask: scores + mask only adds 1 where a key is "
    "allowed, and every blocked key keeps its weight. Set the blocked scores to −∞ "
    "(np.where(mask, S, -np.inf)), or add a mask of 0 and −∞.",
    "A = softmax(S + mask)                   # should be softmax(np.where(mask, S, -np.inf))")
def _sdpa_mask_added(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    if mask is None:
        return scaled_dot_product_attention(Q, K, V, None, scale, return_steps)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    masked = raw * scale + _bool_mask(mask).astype(float)
    return _steps(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_raw_scores_as_weights",
    "(QKᵀ)V: the raw scores used as weights, with neither the scale nor the softmax",
    "Scores are not weights: they must be scaled by 1/√d_k and turned into a distribution by "
    "the softmax (positive, each row summing to 1) before they blend the values.",
    "Z = (Q @ K.T) @ V                      # should be softmax(Q @ K.T / np.sqrt(d_k)) @ V")
def _sdpa_raw_scores_as_weights(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    weights = raw if mask is None else np.where(_bool_mask(mask), raw, 0.0)
    return _steps(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


@_sdpa_twin(
    "sdpa_scaled_scores_as_weights",
    "(QKᵀ/√d_k)V: the scaled scores used as weights, the softmax skipped",
    "The scaled scores still have to become a distribution: softmax makes every weight "
    "positive and each row sum to 1. Without it, negative scores subtract values and the "
    "output's size depends on the scores' scale.",
    "Z = (Q @ K.T / np.sqrt(d_k)) @ V         # should be softmax(Q @ K.T / np.sqrt(d_k)) @ V")
def _sdpa_scaled_scores_as_weights(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    weights = raw * scale if mask is None else np.where(_bool_mask(mask), raw * scale, 0.0)
    return _steps(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


@_sdpa_twin(
    "sdpa_uniform_weights",
    "the plain average of the (visible) values: every key weighted equally, the scores never used",
    "Attention weights come from the query's similarity to each key: softmax(qKᵀ/√d_k). "
    "Averaging the values gives every token the same context and ignores the query entirely.",
    "Z = V.mean(axis=-2)                    # should be softmax(Q @ K.T / np.sqrt(d_k)) @ V")
def _sdpa_uniform_weights(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = _default_scale(dims, scale)
    raw = Q @ np.swapaxes(K, -1, -2)
    masked = apply_mask(raw * scale, mask)
    visible = np.broadcast_to(True if mask is None else _bool_mask(mask), raw.shape).astype(float)
    with np.errstate(invalid="ignore"):
        weights = visible / visible.sum(axis=-1, keepdims=True)
    return _steps(raw, scale, raw * scale, masked, weights, V, return_steps)


# --- what is done to the mask ---------------------------------------------------------------

def _transposed_mask(mask, shape):
    """The mask with its last two axes swapped after broadcasting to the scores' shape: query i
    reads the mask's column i (a padding mask then blocks padded *queries*)."""
    full = np.broadcast_to(_bool_mask(mask), shape)
    return np.swapaxes(full, -1, -2)


def mask_twin(name: str, mutate: Callable, summary: str, explanation: str, code: str):
    """Register an attention twin that uses ``mutate(mask, scores_shape)`` as its mask (the
    reference's own steps otherwise): ignored, transposed, … — one definition per variant."""
    def function(Q, K, V, mask=None, scale=None, return_steps=False):
        if mask is not None:
            Qf, Kf, _, _ = attention_shapes(Q, K, V)
            mask = mutate(mask, Qf.shape[:-1] + (Kf.shape[-2],))
        return scaled_dot_product_attention(Q, K, V, mask, scale, return_steps)
    return add_twin(name, SDPA, function, summary, explanation, code)


mask_twin(
    "sdpa_mask_ignored", lambda mask, shape: None,
    "attention computed without the mask: every query attends to every key",
    "The mask argument must reach the scores: blocked entries are set to −∞ before the "
    "softmax. Accepting the mask and never using it lets padded or future tokens in.",
    "weights = softmax(Q @ K.T / np.sqrt(d_k))  # should first do np.where(mask, scores, -np.inf)")
mask_twin(
    "sdpa_mask_transposed", _transposed_mask,
    "the mask applied transposed (mask.T): query i uses the mask's column i",
    "Mask rows are queries and columns are keys. Transposed, a padding mask blocks the padded "
    "queries' rows instead of the padded keys, and a causal mask opens the future.",
    "np.where(mask.T, scores, -np.inf)      # should be np.where(mask, scores, -np.inf)")


# --- causal attention: the attention mistakes lifted, and the mask's diagonal --------------

def _causal(Q, K):
    return causal_mask(np.shape(Q)[-2], np.shape(K)[-2])


def causal_lift(name: str, sdpa_twin: str, summary: str, explanation: str, code: str):
    """Register the causal-attention twin that makes ``sdpa_twin``'s mistake under the causal
    mask: each attention mistake is also a causal-attention mistake."""
    wrong = MISCONCEPTIONS[sdpa_twin].function

    def function(Q, K, V, return_steps=False):
        return wrong(Q, K, V, mask=_causal(Q, K), return_steps=return_steps)
    return add_twin(name, "causal_attention", function, summary, explanation, code)


causal_lift(
    "causal_attention_no_scale", "sdpa_no_scale",
    "causal attention without the 1/√d_k scale",
    "The mask is right, but the scores must still be divided by √d_k before the softmax: "
    "unscaled, the weights come out too peaked (at a real model's d_k, nearly one-hot).",
    "softmax(np.where(mask, Q @ K.T, -np.inf))  # should divide Q @ K.T by np.sqrt(d_k)")
causal_lift(
    "causal_attention_mask_added", "sdpa_mask_added",
    "the boolean causal mask added to the scores (True counts as +1) instead of −∞ on the future",
    "scores + mask adds 1 to every visible score and leaves the future's scores as they are, so "
    "future tokens keep their weight. Set the future's scores to −∞: np.where(mask, S, -np.inf).",
    "softmax(S + np.tril(np.ones((L, S))))  # should be softmax(np.where(mask, S, -np.inf))")
causal_lift(
    "causal_attention_mask_after_softmax", "sdpa_mask_after_softmax",
    "the future zeroed after the softmax, so the rows no longer sum to 1",
    "Block the future before the softmax (scores → −∞) so that the visible keys share the "
    "whole weight; zeroing weights afterwards leaves each row summing to less than 1.",
    "softmax(scores) * mask                 # should be softmax(np.where(mask, scores, -np.inf))")
causal_lift(
    "causal_attention_inverted_mask", "sdpa_inverted_mask",
    "the causal mask read as True = blocked (nn.MultiheadAttention's attn_mask convention)",
    "With True = may attend, tril(ones) is the mask to keep; passed where True means blocked, "
    "it hides the past and the token itself and shows only the future.",
    "np.where(tril, -np.inf, scores)        # should be np.where(tril, scores, -np.inf)")
causal_lift(
    "causal_attention_softmax_over_queries", "sdpa_softmax_over_queries",
    "causal attention with the softmax over the queries (columns sum to 1)",
    "Each query's row is a distribution over the keys it may see: softmax over axis=-1.",
    "softmax(masked, axis=-2)               # should be axis=-1")
causal_lift(
    "causal_attention_no_max_subtraction", "sdpa_no_max_subtraction",
    "causal attention with a softmax that does not subtract the row max (NaN on large scores)",
    "exp overflows above ~709.8; subtract each row's max before exponentiating (blocked −∞ "
    "entries stay at weight 0).",
    "e = np.exp(masked)                     # should be np.exp(masked - masked.max(-1, keepdims=True))")


# --- the causal mask shifted by one ---------------------------------------------------------

def _shifted_causal(L, S, k):
    return np.tril(np.ones((L, S), dtype=bool), k=k)


def _causal_mask_shifted_by_one(L, S=None):
    return _shifted_causal(L, L if S is None else S, 1)


add_twin("causal_mask_shifted_by_one", "causal_mask", _causal_mask_shifted_by_one,
         "np.tril(…, k=1): the causal mask shifted by one, so each token also sees the next one",
         "Token i may attend to tokens 0 … i: the diagonal is the last allowed entry. k=1 opens "
         "one future token, which is exactly what a decoder must not see during training.",
         "np.tril(np.ones((L, L)), k=1)          # should be np.tril(np.ones((L, L)))")


def _causal_attention_mask_shifted_by_one(Q, K, V, return_steps=False):
    mask = _shifted_causal(np.shape(Q)[-2], np.shape(K)[-2], 1)
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


add_twin("causal_mask_all_visible", "causal_mask", lambda L, S=None: np.ones((L, L if S is None else S), dtype=bool),
         "no causal mask at all: every entry True, each token sees the whole sequence",
         "A decoder predicting token i+1 must not see tokens after i: True on and below the "
         "diagonal (np.tril), False above it.",
         "mask = np.ones((L, L), dtype=bool)     # should be np.tril(np.ones((L, L), dtype=bool))")


def _only_one_mask(keep: int):
    def function(*masks):
        arrays = [np.asarray(m, dtype=bool) for m in masks]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        return np.broadcast_to(arrays[keep], shape).copy()
    return function


add_twin("combine_masks_first_only", "combine_masks", _only_one_mask(0),
         "the masks not combined: only the first one (here: the causal mask) applied",
         "Every mask must hold at once: combine them with AND (np.logical_and). Using one mask "
         "forgets what the other blocks — the padding, or the future.",
         "mask = causal                          # should be causal & pad")
add_twin("combine_masks_last_only", "combine_masks", _only_one_mask(-1),
         "the masks not combined: only the last one (here: the padding mask) applied",
         "Every mask must hold at once: combine them with AND (np.logical_and). Using one mask "
         "forgets what the other blocks — the future, or the padding.",
         "mask = pad                             # should be causal & pad")


def _linear_weight_first(x, W, b=None):
    y = np.asarray(W, dtype=float) @ np.asarray(x, dtype=float)   # raises unless the shapes fit
    return y if b is None else y + np.asarray(b, dtype=float)


add_twin("linear_weight_first", "linear", _linear_weight_first,
         "W X instead of X W: the projection written with the weight matrix first",
         "The lecture's rows are tokens: Q = XW_Q multiplies each token's row by W_Q. W X "
         "(the column-vector habit) mixes the tokens instead, and fits only for square shapes.",
         "Q = W_Q @ X                            # should be X @ W_Q")


def _linear_skipped(x, W, b=None):
    x, W = np.asarray(x, dtype=float), np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or x.shape[-1] != W.shape[0]:
        raise ValueError("the projection can be left out only where it keeps the width")
    return x.copy()


add_twin("linear_skipped", "linear", _linear_skipped,
         "the projection left out: X itself used where X W was asked (W_O, or W_Q, W_K, W_V)",
         "Every projection is a learnt matrix product: Q = XW_Q, K = XW_K, V = XW_V, and after "
         "the heads output = [Z_0 | … | Z_h] W_O, which mixes the heads' features. Skipped, "
         "each head's features stay in their own columns, unmixed.",
         "out = concat                           # should be concat @ W_O")


def _merge_heads_reversed(x):
    from .multihead import merge_heads
    return merge_heads(np.asarray(x, dtype=float)[..., ::-1, :, :])


add_twin("merge_heads_reversed", "merge_heads", _merge_heads_reversed,
         "the heads concatenated in reverse order, [Z_h | … | Z_1 | Z_0]",
         "Concat(head_1, …, head_h) keeps the heads in order: head 0's output in the first "
         "d_head columns, head 1's in the next ones. W_O's rows are matched to that order.",
         "np.concatenate(heads[::-1], axis=-1)   # should be np.concatenate(heads, axis=-1)")


def _causal_attention_mask_no_diagonal(Q, K, V, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"])
    raw = Q @ np.swapaxes(K, -1, -2)
    masked = apply_mask(raw * scale, _shifted_causal(dims["L"], dims["S"], -1))
    # The first query sees no key at all: a student's softmax gives NaN there (−∞ − (−∞)),
    # not the reference's zeros for a fully masked row; the twin does what the student's does.
    with np.errstate(invalid="ignore"):
        e = np.exp(masked - masked.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
    return _steps(raw, scale, raw * scale, masked, weights, V, return_steps)


def _causal_attention_bottom_right(Q, K, V, return_steps=False):
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    return scaled_dot_product_attention(Q, K, V, mask=_shifted_causal(L, S, S - L), return_steps=return_steps)


add_twin("causal_attention_bottom_right", "causal_attention", _causal_attention_bottom_right,
         "the causal triangle anchored at the bottom right (np.tril(…, k=S−L)) instead of the top left",
         "Here query i is the i-th token of the same sequence as key i: it may see keys 0 … i, a "
         "triangle from the top-left corner (PyTorch's is_causal). Anchored bottom-right (the "
         "convention for a query block at the end of a longer cache), each query sees S−L more keys.",
         "np.tril(np.ones((L, S)), k=S - L)      # should be np.tril(np.ones((L, S)))")


def _causal_attention_square_mask(Q, K, V, return_steps=False):
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    if L != S:     # an (L, L) mask does not broadcast against (L, S) scores
        raise ValueError(f"operands could not be broadcast together with shapes ({L},{S}) ({L},{L})")
    return scaled_dot_product_attention(Q, K, V, mask=_causal(Q, K), return_steps=return_steps)


add_twin("causal_attention_square_mask", "causal_attention", _causal_attention_square_mask,
         "a square causal mask np.tril(np.ones((L, L))): right when L = S, an error otherwise",
         "The mask has one row per query and one column per key: shape (L, S), which is not "
         "square when the queries and keys have different lengths. Build it from both: "
         "np.tril(np.ones((L, S), dtype=bool)).",
         "mask = np.tril(np.ones((L, L)))       # should be np.tril(np.ones((L, S)))")


add_twin("causal_attention_mask_no_diagonal", "causal_attention", _causal_attention_mask_no_diagonal,
         "a causal mask without its diagonal (np.tril(…, k=-1)): no token attends to itself",
         "Token i may attend to tokens 0 … i, itself included: the diagonal belongs to the "
         "mask. Without it the first token sees nothing at all and every token ignores its own value.",
         "mask = np.tril(np.ones((L, S)), k=-1)  # should be np.tril(np.ones((L, S)))")


add_twin("causal_attention_mask_shifted_by_one", "causal_attention", _causal_attention_mask_shifted_by_one,
         "a causal mask shifted by one (np.tril(…, k=1)): each token also attends to the next one",
         "Token i may attend to tokens 0 … i. With k=1 every row sees one future token, so the "
         "model can copy the word it is meant to predict.",
         "mask = np.tril(np.ones((L, S)), k=1)   # should be np.tril(np.ones((L, S)))")


def _causal_mask_inverted(L, S=None):
    return ~np.tril(np.ones((L, L if S is None else S), dtype=bool))


add_twin(
    "causal_mask_inverted", "causal_mask", _causal_mask_inverted,
    "the causal mask with True = blocked (np.triu(…, k=1), PyTorch's attn_mask convention)",
    "torch.triu(ones, diagonal=1) marks the future as True because nn.MultiheadAttention reads "
    "True as blocked. This kit's masks mean True = may attend: the lower triangle is True.",
    "np.triu(np.ones((L, S), bool), k=1)   # should be np.tril(np.ones((L, S), bool))")


# --- padding masks --------------------------------------------------------------------------

def _lengths(lengths):
    return np.asarray(lengths).reshape(-1)


def padding_offset_twin(name: str, offset: int, summary: str, explanation: str):
    """Register a padding-mask twin that keeps the key positions j < length + offset."""
    def function(lengths, S):
        return (np.arange(S) < _lengths(lengths)[:, None] + offset)[:, None, :]
    code = f"np.arange(S) < lengths + {offset}   # should be np.arange(S) < lengths"
    return add_twin(name, "padding_mask", function, summary, explanation, code)


padding_offset_twin(
    "padding_mask_includes_first_pad", 1,
    "the padding mask off by one: the first <PAD> position is also allowed (j ≤ length)",
    "Positions are numbered from 0, so a sequence of length n occupies 0 … n−1: keep j < n.")
padding_offset_twin(
    "padding_mask_drops_last_token", -1,
    "the padding mask off by one: the last real token is blocked too (j < length − 1)",
    "A sequence of length n occupies positions 0 … n−1, all real tokens: keep j < n.")


def _padding_mask_inverted(lengths, S):
    return ~padding_mask(lengths, S)


add_twin(
    "padding_mask_inverted", "padding_mask", _padding_mask_inverted,
    "the padding mask with True at the <PAD> positions (key_padding_mask's True = ignore)",
    "nn.MultiheadAttention's key_padding_mask marks the pads as True (ignore). This kit's "
    "masks mean True = may attend: True on the real tokens, False on the pads.",
    "np.arange(S) >= lengths               # should be np.arange(S) < lengths")


def _padding_mask_on_query_rows(lengths, S):
    return (np.arange(S) < _lengths(lengths)[:, None])[:, :, None]


add_twin(
    "padding_mask_on_query_rows", "padding_mask", _padding_mask_on_query_rows,
    "the padding applied to the query rows (shape (B, S, 1)) instead of the key columns",
    "Padding hides the <PAD> *keys* from every query: the mask is (B, 1, S), one row "
    "broadcast over all queries. (B, S, 1) blocks the pads' own rows and leaves their keys open.",
    "mask[:, :, None]                       # should be mask[:, None, :]")


def _combine_masks_padding_on_query_rows(*masks):
    # a (B, 1, S) padding mask turned into (B, S, 1): it blocks the pads' query rows
    arrays = [np.asarray(m, dtype=bool) for m in masks]
    arrays = [np.swapaxes(m, -1, -2) if m.ndim == 3 and m.shape[-2] == 1 else m for m in arrays]
    return np.logical_and.reduce(np.broadcast_arrays(*arrays))


add_twin(
    "combine_masks_padding_on_query_rows", "combine_masks", _combine_masks_padding_on_query_rows,
    "the padding combined along the query rows (pad[:, :, None]) instead of the key columns",
    "Padding hides the <PAD> *keys* from every query: it blocks columns j ≥ length, in every "
    "row. Applied to the rows, it blanks the pads' own rows and leaves their keys visible.",
    "causal & pad[:, :, None]              # should be causal & pad[:, None, :]")


def _combine_masks_or(*masks):
    arrays = [np.asarray(m, dtype=bool) for m in masks]
    return np.logical_or.reduce(np.broadcast_arrays(*arrays))


add_twin(
    "combine_masks_or", "combine_masks", _combine_masks_or,
    "the masks combined with OR: a key is visible if either mask allows it",
    "A key may be attended to only if every mask allows it (causal AND padding): with OR the "
    "future shows wherever it is not padding, and the pads wherever they are in the past.",
    "causal | pad                           # should be causal & pad")


# --- softmax and log-softmax ----------------------------------------------------------------

def softmax_axis_variant(name: str, axis, summary: str, explanation: str, code: str):
    """Register a softmax twin normalising over ``axis`` (None: every entry) instead of the
    axis it is given (the key or class axis, -1 by default)."""
    def function(x, axis=-1):
        return softmax(x, axis=wrong_axis)
    wrong_axis = axis
    return add_twin(name, "softmax", function, summary, explanation, code)


softmax_axis_variant(
    "softmax_axis_0", 0,
    "softmax over axis 0: each column (one class or key across all the rows) sums to 1",
    "Every row is one distribution (one example's classes, one query's keys): normalise "
    "along the last axis, axis=-1, so that each row sums to 1.",
    "np.exp(z) / np.exp(z).sum(axis=0)      # should be .sum(axis=-1, keepdims=True)")
softmax_axis_variant(
    "softmax_over_all_entries", None,
    "softmax over every entry at once: the whole array sums to 1, not each row",
    "Each row is its own distribution: divide by the row's sum, not by the grand total.",
    "np.exp(z) / np.exp(z).sum()            # should be .sum(axis=-1, keepdims=True)")


def _softmax_unnormalised(x, axis=-1):
    with np.errstate(over="ignore"):
        return np.exp(as_float(x, "x"))


add_twin(
    "softmax_unnormalised", "softmax", _softmax_unnormalised,
    "exp(x) alone: the exponentials not divided by their sum",
    "softmax(x)_i = exp(x_i) / Σ_j exp(x_j): without the division the numbers are not "
    "probabilities and do not sum to 1.",
    "p = np.exp(z)                          # should be np.exp(z) / np.exp(z).sum(-1, keepdims=True)")


def _log_softmax_base_10(x, axis=-1):
    return np.log10(softmax(x, axis=axis))


def _log_softmax_without_normaliser(x, axis=-1):
    return as_float(x, "x").copy()


add_twin(
    "log_softmax_base_10", "log_softmax", _log_softmax_base_10,
    "the logarithm taken to base 10 (a calculator's log key) instead of the natural log",
    "Cross-entropy uses the natural logarithm, ln p (np.log). log₁₀ p is ln p / 2.303, so "
    "every loss comes out 2.3 times too small.",
    "-np.log10(p[y])                        # should be -np.log(p[y])")
add_twin(
    "log_softmax_without_normaliser", "log_softmax", _log_softmax_without_normaliser,
    "log p taken as the logit itself, z_y, without subtracting log Σ exp(z)",
    "log softmax(z)_y = z_y − log Σ_j exp(z_j): the log-sum-exp term is what makes it a "
    "log-probability. Without it the 'loss' −z_y can even be negative.",
    "loss = -z[y]                           # should be -(z[y] - np.log(np.exp(z).sum()))")


# --- the softmax's backward pass ------------------------------------------------------------

def _softmax_backward_no_sum_term(dp, cache):
    return cache * as_float(dp, "dp")


add_twin(
    "softmax_backward_no_sum_term", "softmax_backward", _softmax_backward_no_sum_term,
    "dz = p ⊙ dp: the −p (p·dp) term of the Jacobian left out",
    "∂p_i/∂z_j = p_i(δ_ij − p_j), so dz = p ⊙ (dp − Σ_j p_j dp_j). Dropping the sum treats "
    "each probability as if it did not depend on the other inputs.",
    "dz = p * dp                            # should be p * (dp - (dp * p).sum(-1, keepdims=True))")


def softmax_backward_axis_twin(name: str, axis, summary: str):
    """Register a softmax-backward twin that sums Σ p·dp over ``axis`` instead of the last."""
    def function(dp, cache):
        dp = as_float(dp, "dp")
        return cache * (dp - np.sum(dp * cache, axis=axis, keepdims=True))
    code = (f"p * (dp - (dp * p).sum(axis={axis}, keepdims=True))  # should be axis=-1")
    explanation = ("The sum Σ_j p_j dp_j runs over the entries of one softmax, the last axis; "
                   "summed over another axis it mixes different rows' distributions.")
    return add_twin(name, "softmax_backward", function, summary, explanation, code)


softmax_backward_axis_twin("softmax_backward_sum_over_axis_0", 0,
                           "the softmax gradient with Σ p·dp summed over axis 0 instead of each row")
softmax_backward_axis_twin("softmax_backward_sum_over_all_entries", None,
                           "the softmax gradient with Σ p·dp summed over every entry instead of each row")


# --- Bahdanau and content scores ------------------------------------------------------------

def _additive_score_W_transposed(s, H, W, U, v):
    W = as_float(W, "W")
    return additive_score(s, H, W.T, U, v)    # raises unless W is square, as W @ s would


add_twin(
    "additive_score_W_transposed", "additive_score", _additive_score_W_transposed,
    "additive scores with W s computed as W @ s (column vector) on data laid out for s @ W",
    "The data is in the row layout, s W: W has one row per entry of s. Reading the paper's "
    "W s literally as W @ s uses Wᵀ instead; square W hides the slip from the shapes.",
    "np.tanh(W @ s + H @ U) @ v             # should be np.tanh(s @ W + H @ U) @ v")


def _bahdanau_step_W_transposed(s_prev, H, W, U, v, mask=None):
    scores = _additive_score_W_transposed(s_prev, H, W, U, v)
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


add_twin(
    "bahdanau_step_W_transposed", "bahdanau_step", _bahdanau_step_W_transposed,
    "the Bahdanau step with W s_{i−1} computed as W @ s_prev on data laid out for s_prev @ W",
    "The data is in the row layout, s_{i−1} W: W has one row per entry of the state. W @ s "
    "uses Wᵀ instead, so every score, weight and the context change.",
    "e = np.tanh(W @ s_prev + H @ U) @ v    # should be np.tanh(s_prev @ W + H @ U) @ v")


def _content_score_without_s_norm(s, H):
    s = as_float(s, "s")
    return content_score(s, H) * np.linalg.norm(s, axis=-1, keepdims=True)


add_twin(
    "content_score_without_s_norm", "content_score", _content_score_without_s_norm,
    "cosine scores divided only by ‖h_j‖, not by ‖s‖ (sᵀh_j / ‖h_j‖)",
    "cos(s, h_j) = sᵀh_j / (‖s‖ ‖h_j‖): both vectors are normalised, so every score lies in "
    "[−1, 1]. Leaving out ‖s‖ scales all scores by ‖s‖ (the ranking survives, the values not).",
    "H @ s / np.linalg.norm(H, axis=-1)      # should also divide by np.linalg.norm(s)")
