"""Plausible wrong code for the implement families: each function is what a student might
hand in, with the problem's signature and one mistake, written here in plain NumPy."""

from __future__ import annotations

import numpy as np

from .mistakes_base import blocked, code_mistake, naive_softmax, softmax

# --- implement_masked_attention ----------------------------------------------------------------

MASKED = "implement_masked_attention"
ACCEPT_NO_MAX = ["sdpa_no_max_subtraction", "softmax_no_max_subtraction"]


def _sdpa(Q, K, V, mask=None, scale=None, axis=-1, fill=-np.inf, soft=softmax, transpose_mask=False):
    """A student's masked attention with the knobs its mistakes turn."""
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scale = 1 / np.sqrt(Q.shape[-1]) if scale is None else scale
    scores = Q @ np.swapaxes(K, -1, -2) * scale
    if mask is not None:
        mask = np.swapaxes(mask, -1, -2) if transpose_mask else mask
        scores = blocked(scores, mask, fill)
    return soft(scores, axis=axis) @ V


@code_mistake(MASKED, "scaled by √d_v (V's width) instead of √d_k",
              accept=["sdpa_scale_by_sqrt_d_v"])
def masked_scale_sqrt_dv(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, 1 / np.sqrt(np.shape(V)[-1]))


@code_mistake(MASKED, "scaled by √S (the number of keys)", accept=["sdpa_scale_by_sqrt_seq_len"])
def masked_scale_sqrt_s(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, 1 / np.sqrt(np.shape(K)[-2]))


@code_mistake(MASKED, "no scale at all", accept=["sdpa_no_scale"])
def masked_no_scale(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, 1.0)


@code_mistake(MASKED, "the mask ignored",
              accept=["sdpa_mask_ignored"])
def masked_mask_ignored(Q, K, V, mask=None):
    return _sdpa(Q, K, V)


@code_mistake(MASKED, "the mask read as True = blocked (nn.MultiheadAttention's convention)",
              accept=["sdpa_inverted_mask"])
def masked_mask_inverted(Q, K, V, mask=None):
    return _sdpa(Q, K, V, None if mask is None else ~np.asarray(mask, dtype=bool))


@code_mistake(MASKED, "softmax with axis=1 (the lecture demo's), the queries' axis for a batch",
              accept=["softmax_axis_1", "sdpa_softmax_axis_1"])
def masked_softmax_axis_1(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, axis=1)


@code_mistake(MASKED, "the scale applied after the softmax, to the weights",
              accept=["sdpa_scale_after_softmax"])
def masked_scale_after_softmax(Q, K, V, mask=None):
    Q = np.asarray(Q, dtype=float)
    return _sdpa(Q, K, V, mask, 1.0) / np.sqrt(Q.shape[-1])


@code_mistake(MASKED, "exp(x)/Σexp(x) without the max subtracted (NaN on large scores)",
              accept=ACCEPT_NO_MAX)
def masked_no_max_subtraction(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, soft=naive_softmax)


@code_mistake(MASKED, "the mask transposed (applied with keys as rows; a square mask only)",
              accept=["sdpa_mask_transposed"])
def masked_mask_transposed(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, transpose_mask=mask is not None and np.ndim(mask) >= 2)


@code_mistake(MASKED, "blocked scores set to 0 instead of −inf", accept=["sdpa_mask_with_zero"])
def masked_zero_fill(Q, K, V, mask=None):
    return _sdpa(Q, K, V, mask, fill=0.0)


@code_mistake(MASKED, "the boolean mask added to the scores (True counts as 1) instead of −∞ where blocked",
              accept=["sdpa_mask_added"])
def masked_bool_mask_added(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = scores + np.asarray(mask, dtype=float)
    return softmax(scores) @ V


@code_mistake(MASKED, "K.T on a batch: every axis reversed (a 2-D case is right)", accept=["sdpa_k_dot_t"])
def masked_k_dot_t(Q, K, V, mask=None):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    scores = Q @ K.T / np.sqrt(Q.shape[-1])
    if mask is not None:
        scores = blocked(scores, mask, -np.inf)
    return softmax(scores) @ V


# --- implement_causal_attention ----------------------------------------------------------------

CAUSAL = "implement_causal_attention"


def _causal(Q, K, V, k=0, scale=None, axis=-1, soft=softmax, bottom_right=False, causal=True,
            upper=False):
    Q = np.asarray(Q, dtype=float)
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    shift = S - L if bottom_right else 0
    mask = np.tril(np.ones((L, S), dtype=bool), k=k + shift)
    mask = np.triu(np.ones((L, S), dtype=bool)) if upper else mask
    return _sdpa(Q, K, V, mask if causal else None, scale, axis, soft=soft)


@code_mistake(CAUSAL, "the mask off by one: tril(…, k=1), each token also sees the next one",
              accept=["causal_attention_mask_shifted_by_one"])
def causal_off_by_one(Q, K, V):
    return _causal(Q, K, V, k=1)


@code_mistake(CAUSAL, "the diagonal excluded: tril(…, k=−1), the first row fully masked (NaN)",
              accept=["causal_mask_no_diagonal", "causal_attention_mask_no_diagonal"])
def causal_no_diagonal(Q, K, V):
    return _causal(Q, K, V, k=-1)


@code_mistake(CAUSAL, "no causal mask at all", accept=["causal_attention_unmasked"])
def causal_unmasked(Q, K, V):
    return _causal(Q, K, V, causal=False)


@code_mistake(CAUSAL, "triu instead of tril", accept=["causal_attention_triu", "causal_mask_triu"])
def causal_upper(Q, K, V):
    return _causal(Q, K, V, upper=True)


@code_mistake(CAUSAL, "the triangle anchored bottom-right (tril with k = S − L)", accept=["causal_attention_bottom_right"])
def causal_bottom_right(Q, K, V):
    return _causal(Q, K, V, bottom_right=True)


@code_mistake(CAUSAL, "no 1/√d_k scale", accept=["sdpa_no_scale", "causal_attention_no_scale"])
def causal_no_scale(Q, K, V):
    return _causal(Q, K, V, scale=1.0)


@code_mistake(CAUSAL, "the softmax without the max subtracted",
              accept=[*ACCEPT_NO_MAX, "causal_attention_no_max_subtraction"])
def causal_no_max_subtraction(Q, K, V):
    return _causal(Q, K, V, soft=naive_softmax)


@code_mistake(CAUSAL, "the softmax over the queries (axis −2)", accept=["sdpa_softmax_over_queries", "causal_attention_softmax_over_queries"])
def causal_over_queries(Q, K, V):
    return _causal(Q, K, V, axis=-2)


# --- implement_additive_attention ---------------------------------------------------------------

ADD = "implement_additive_attention"


def _additive(s_prev, H, W, U, v, mask=None, literal=False, act=np.tanh, raw_context=False,
              fill=-np.inf, soft=softmax, use_mask=True):
    s_prev, H = np.asarray(s_prev, dtype=float), np.asarray(H, dtype=float)
    decoder = np.einsum("ab,...b->...a", W, s_prev) if literal else s_prev @ W
    scores = act(decoder[..., None, :] + H @ U) @ v
    if mask is not None and use_mask:
        scores = blocked(scores, mask, fill)
    weights = soft(scores, axis=-1)
    blend = scores if raw_context else weights
    return weights, (blend[..., None, :] @ H)[..., 0, :]


@code_mistake(ADD, "W s_{i−1} written as W @ s_prev (only square W runs)",
              accept=["bahdanau_step_W_transposed", "additive_score_W_transposed"])
def additive_literal_w_s(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, literal=True)


@code_mistake(ADD, "no tanh", accept=["bahdanau_step_no_tanh", "additive_score_no_tanh"])
def additive_no_tanh(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, act=lambda x: x)


@code_mistake(ADD, "the context from the raw scores e", accept=["bahdanau_step_unnormalised"])
def additive_raw_context(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, raw_context=True)


@code_mistake(ADD, "the padding mask ignored",
              accept=["sdpa_mask_ignored", "bahdanau_step_mask_ignored"])
def additive_mask_ignored(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, use_mask=False)


@code_mistake(ADD, "padded scores set to 0 instead of −inf", accept=["sdpa_mask_with_zero", "bahdanau_step_mask_with_zero"])
def additive_zero_fill(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, fill=0.0)


@code_mistake(ADD, "the softmax without the max subtracted (NaN on the large scores)",
              accept=[*ACCEPT_NO_MAX, "bahdanau_step_no_max_subtraction"])
def additive_no_max_subtraction(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, soft=naive_softmax)


@code_mistake(ADD, "a sigmoid in place of the tanh", accept=["bahdanau_step_sigmoid"])
def additive_sigmoid(s_prev, H, W, U, v, mask=None):
    return _additive(s_prev, H, W, U, v, mask, act=lambda x: 1 / (1 + np.exp(-x)))


def _additive_weights(e, mask=None):
    if mask is not None:
        e = np.where(mask, e, -np.inf)
    return softmax(e, axis=-1)


def _additive_blend(weights, H):
    return np.einsum("...s,...sn->...n", weights, H)


@code_mistake(ADD, "the paper's column form typed as printed: W @ s_prev and U @ h_j (square W, U only)",
              accept=["bahdanau_step_W_U_transposed"])
def additive_column_form(s_prev, H, W, U, v, mask=None):
    s_prev, H = np.asarray(s_prev, dtype=float), np.asarray(H, dtype=float)
    decoder = np.einsum("ab,...b->...a", W, s_prev)           # W s_{i-1}
    encoder = np.einsum("ab,...sb->...sa", U, H)              # U h_j for every j
    e = np.tanh(decoder[..., None, :] + encoder) @ v
    weights = _additive_weights(e, mask)
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the softmax over axis 0 (the batch axis, for batched input)",
              accept=["bahdanau_step_softmax_over_batch"])
def additive_softmax_axis_0(s_prev, H, W, U, v, mask=None):
    e = np.tanh((s_prev @ W)[..., None, :] + H @ U) @ v
    if mask is not None:
        e = np.where(mask, e, -np.inf)
    weights = softmax(e, axis=0)
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the padding zeroed after the softmax (weights not renormalised)",
              accept=["bahdanau_step_mask_after_softmax"])
def additive_mask_after_softmax(s_prev, H, W, U, v, mask=None):
    e = np.tanh((s_prev @ W)[..., None, :] + H @ U) @ v
    weights = softmax(e, axis=-1)
    if mask is not None:
        weights = weights * mask
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the decoder state left out: e = v · tanh(h_j U)",
              accept=["bahdanau_step_without_state"])
def additive_without_state(s_prev, H, W, U, v, mask=None):
    weights = _additive_weights(np.tanh(H @ U) @ v, mask)
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the tanh taken after v: tanh((s W + h U) @ v)", accept=["bahdanau_step_tanh_after_v"])
def additive_tanh_after_v(s_prev, H, W, U, v, mask=None):
    weights = _additive_weights(np.tanh(((s_prev @ W)[..., None, :] + H @ U) @ v), mask)
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the hidden units summed, v forgotten", accept=["bahdanau_step_no_v"])
def additive_no_v(s_prev, H, W, U, v, mask=None):
    weights = _additive_weights(np.tanh((s_prev @ W)[..., None, :] + H @ U).sum(axis=-1), mask)
    return weights, _additive_blend(weights, H)


@code_mistake(ADD, "the context blended from H @ U instead of H",
              accept=["bahdanau_step_context_from_projected"])
def additive_context_projected(s_prev, H, W, U, v, mask=None):
    weights = _additive_weights(np.tanh((s_prev @ W)[..., None, :] + H @ U) @ v, mask)
    return weights, _additive_blend(weights, H @ U)


@code_mistake(ADD, "the scores divided by √n_a before the softmax",
              accept=["bahdanau_step_scaled_by_sqrt_n_a"])
def additive_scaled(s_prev, H, W, U, v, mask=None):
    e = np.tanh((s_prev @ W)[..., None, :] + H @ U) @ v
    weights = _additive_weights(e / np.sqrt(len(v)), mask)
    return weights, _additive_blend(weights, H)


# --- implement_multihead_attention ---------------------------------------------------------------

MHA = "implement_multihead_attention"


def _project(x, params, name, biases=True):
    out = np.asarray(x, dtype=float) @ params[f"W_{name}"]
    bias = params.get(f"b_{name}")
    return out + bias if (bias is not None and biases) else out


def _split(x, h, transpose=True, strided=False):
    *lead, L, d = x.shape
    if strided:
        return np.stack([x[..., i::h] for i in range(h)], axis=-3)
    if not transpose:
        return x.reshape(*lead, h, L, d // h)
    return np.swapaxes(x.reshape(*lead, L, h, d // h), -2, -3)


def mha_with_flags(query, key, value, params, num_heads, mask=None, transpose=True, strided=False,
                   merge_transpose=True, scale=None, out_proj=True, biases=True, use_mask=True,
                   invert=False, keys_from_query=False):
    """Multi-head attention as a student might write it, one flag per step they can get
    wrong (the corpus's implement mistakes, and ``mistakes_layers``'s)."""
    q = _split(_project(query, params, "Q", biases), num_heads, transpose, strided)
    k_in = query if keys_from_query else key
    k = _split(_project(k_in, params, "K", biases), num_heads, transpose, strided)
    v = _split(_project(value, params, "V", biases), num_heads, transpose, strided)
    allowed = None
    if mask is not None and use_mask:
        allowed = np.asarray(mask, dtype=bool)
        allowed = ~allowed if invert else allowed
        allowed = allowed[..., None, :, :] if allowed.ndim == 3 else allowed
    heads = _sdpa(q, k, v, allowed, scale)
    *lead, h, L, d = heads.shape
    merged = (np.swapaxes(heads, -2, -3).reshape(*lead, L, h * d) if merge_transpose
              else heads.reshape(*lead, L, h * d))
    return _project(merged, params, "O", biases) if out_proj else merged


@code_mistake(MHA, "heads split with reshape alone (no transpose)", accept=["mha_split_without_transpose", "split_heads_without_transpose"])
def mha_split_no_transpose(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, transpose=False, merge_transpose=False)


@code_mistake(MHA, "heads merged without transposing back", accept=["mha_merge_without_transpose", "merge_heads_without_transpose"])
def mha_merge_no_transpose(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, merge_transpose=False)


@code_mistake(MHA, "scores scaled by 1/√d_model", accept=["mha_scale_by_d_model"])
def mha_scale_d_model(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, scale=1 / np.sqrt(np.shape(query)[-1]))


@code_mistake(MHA, "no output projection W_O", accept=["mha_no_output_projection"])
def mha_no_w_o(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, out_proj=False)


@code_mistake(MHA, "the biases ignored", accept=["mha_no_biases"])
def mha_no_biases(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, biases=False)


@code_mistake(MHA, "the mask ignored",
              accept=["mha_mask_ignored", "sdpa_mask_ignored"])
def mha_mask_ignored(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, use_mask=False)


@code_mistake(MHA, "the mask read as True = blocked", accept=["sdpa_inverted_mask", "mha_inverted_mask"])
def mha_mask_inverted(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, invert=True)


@code_mistake(MHA, "head i takes the strided columns i, i + h, … instead of a block",
              accept=["split_heads_interleaved_columns", "mha_interleaved_heads"])
def mha_strided_heads(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, strided=True)


@code_mistake(MHA, "no 1/√d_k scale", accept=["sdpa_no_scale", "mha_no_scale"])
def mha_no_scale(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, scale=1.0)


@code_mistake(MHA, "the keys projected from the query (cross-attention read as self-attention)")
def mha_keys_from_query(query, key, value, params, num_heads, mask=None):
    return mha_with_flags(query, key, value, params, num_heads, mask, keys_from_query=True)


# --- softmax_gradient --------------------------------------------------------------------------

SOFTMAX = "softmax_gradient"


@code_mistake(SOFTMAX, "the Jacobian's diagonal only: dp·p(1 − p)", accept=["softmax_backward_diagonal_only"])
def softmax_grad_diagonal(dp, cache):
    return dp * cache * (1 - cache)


@code_mistake(SOFTMAX, "dp·p: the row-sum term forgotten",
              accept=["softmax_backward_no_sum_term"])
def softmax_grad_no_row_term(dp, cache):
    return dp * cache


@code_mistake(SOFTMAX, "the row sum over axis 0 instead of the last axis",
              accept=["softmax_backward_sum_over_axis_0"])
def softmax_grad_wrong_axis(dp, cache):
    return cache * (dp - np.sum(dp * cache, axis=0, keepdims=True))


@code_mistake(SOFTMAX, "Σ dp instead of Σ dp·p in the row term", accept=["softmax_backward_sum_without_p"])
def softmax_grad_sum_without_p(dp, cache):
    return cache * (dp - np.sum(dp, axis=-1, keepdims=True))


@code_mistake(SOFTMAX, "the outer p not multiplied in: dp − Σ dp·p", accept=["softmax_backward_no_outer_p"])
def softmax_grad_no_outer_p(dp, cache):
    return dp - np.sum(dp * cache, axis=-1, keepdims=True)


@code_mistake(SOFTMAX, "the sign flipped: p(Σ dp·p − dp)", accept=["softmax_backward_sign_flipped"])
def softmax_grad_sign(dp, cache):
    return cache * (np.sum(dp * cache, axis=-1, keepdims=True) - dp)


@code_mistake(CAUSAL, "a square mask tril(ones((L, L))) (right only when L = S; raises otherwise)",
              accept=["causal_attention_square_mask"])
def causal_square_mask(Q, K, V):
    Q = np.asarray(Q, dtype=float)
    L = np.shape(Q)[-2]
    return _sdpa(Q, K, V, np.tril(np.ones((L, L), dtype=bool)))


@code_mistake(CAUSAL, "the boolean causal mask added to the scores instead of −∞ on the future",
              accept=["causal_attention_mask_added", "sdpa_mask_added"])
def causal_bool_mask_added(Q, K, V):
    Q, K, V = (np.asarray(a, dtype=float) for a in (Q, K, V))
    L, S = Q.shape[-2], K.shape[-2]
    scores = Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1]) + np.tril(np.ones((L, S)))
    return softmax(scores) @ V

