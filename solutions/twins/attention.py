"""Twins of attention itself: scores, scale, softmax, masks, causal attention,
the softmax's backward pass, and Bahdanau/Luong scoring.

Most are generated: a family of mistakes that differ in one choice (the scale, the softmax's
axis, what is done to the mask, which diagonal the causal mask keeps) is one factory and a
table of its variants, so the space of mistakes is searched systematically instead of written
twin by twin. Every twin registers in ``solutions.twins.registry.TWINS``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Callable

import numpy as np

from .._shapes import as_float
from ..attention import AttentionSteps, attention_shapes, scaled_dot_product_attention
from ..masks import apply_mask, causal_mask
from .common import bool_mask, scale_twin
from .registry import TWINS, add_twin
from ..softmax import softmax

SDPA = "scaled_dot_product_attention"


def steps_or_output(raw, scale, scaled, masked, weights, V, return_steps):
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
        return steps_or_output(raw, scale, raw * scale, masked, softmax(masked, axis=axis), V, return_steps)
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
    return steps_or_output(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


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
    return steps_or_output(raw, scale, raw * scale, masked, weights, V, return_steps)


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
    return steps_or_output(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


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
    return steps_or_output(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


@_sdpa_twin(
    "sdpa_values_from_keys",
    "softmax(QKᵀ/√d_k)K: the weights applied to the keys instead of the values",
    "Keys decide how much each token counts; what is blended is the values: Z = AV. AK "
    "returns a mix of key vectors (with width d_k, not d_v).",
    "Z = A @ K                              # should be A @ V")
def _sdpa_values_from_keys(Q, K, V, mask=None, scale=None, return_steps=False):
    steps = scaled_dot_product_attention(Q, K, V, mask, scale, return_steps=True)
    return steps_or_output(steps.raw_scores, steps.scale, steps.scaled_scores, steps.masked_scores,
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
    return steps_or_output(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


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
    return steps_or_output(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


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
    masked = raw * scale + bool_mask(mask).astype(float)
    return steps_or_output(raw, scale, raw * scale, masked, softmax(masked), V, return_steps)


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
    weights = raw if mask is None else np.where(bool_mask(mask), raw, 0.0)
    return steps_or_output(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


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
    weights = raw * scale if mask is None else np.where(bool_mask(mask), raw * scale, 0.0)
    return steps_or_output(raw, scale, raw * scale, apply_mask(raw * scale, mask), weights, V, return_steps)


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
    visible = np.broadcast_to(True if mask is None else bool_mask(mask), raw.shape).astype(float)
    with np.errstate(invalid="ignore"):
        weights = visible / visible.sum(axis=-1, keepdims=True)
    return steps_or_output(raw, scale, raw * scale, masked, weights, V, return_steps)


# --- what is done to the mask ---------------------------------------------------------------

def _transposed_mask(mask, shape):
    """The mask with its last two axes swapped after broadcasting to the scores' shape: query i
    reads the mask's column i (a padding mask then blocks padded *queries*)."""
    full = np.broadcast_to(bool_mask(mask), shape)
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

def causal_of(Q, K):
    return causal_mask(np.shape(Q)[-2], np.shape(K)[-2])


def causal_lift(name: str, sdpa_twin: str, summary: str, explanation: str, code: str):
    """Register the causal-attention twin that makes ``sdpa_twin``'s mistake under the causal
    mask: each attention mistake is also a causal-attention mistake."""
    wrong = TWINS[sdpa_twin].function

    def function(Q, K, V, return_steps=False):
        return wrong(Q, K, V, mask=causal_of(Q, K), return_steps=return_steps)
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
