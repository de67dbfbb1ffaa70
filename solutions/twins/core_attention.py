"""The hand-written twins of attention itself: the scale, the softmax's axis, the mask applied
at the wrong place or with the wrong value, causal attention, the causal mask, multi-head
attention's split and merge, and PyTorch's weight layout.
"""

from __future__ import annotations


import numpy as np

from .._shapes import as_float
from ..attention import AttentionSteps, attention_shapes, scaled_dot_product_attention
from ..masks import causal_mask
from ..linear import linear
from ..masks import apply_mask, check_mask_shape
from ..multihead import head_mask, split_heads
from ..softmax import softmax
from .common import bool_mask, mha_with_scale, scale_twin
from .registry import twin


def _attention_result(Q, K, V, raw, scale, masked, weights, return_steps):
    output = weights @ V
    if return_steps:
        return AttentionSteps(raw, scale, raw * scale, masked, weights, output)
    return output


def _raw_scores(Q, K, V, scale):
    """Validated Q, K, V, the raw scores QKᵀ and the scale in use (1/√d_k by default)."""
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"]) if scale is None else scale
    return Q, K, V, Q @ np.swapaxes(K, -1, -2), scale


# --- scaled dot-product attention ---------------------------------------------------------


scale_twin(
    "sdpa_no_scale", lambda dims: 1.0,
    "softmax(QKᵀ)V without the 1/√d_k scale",
    "Divide the scores QKᵀ by √d_k before the softmax. Unscaled, they spread more the larger "
    "d_k is (their variance grows like d_k), so the weights come out too peaked; at a real "
    "model's d_k = 64 the rows are nearly one-hot and the gradients vanish.",
    "weights = softmax(Q @ K.T)            # should be softmax(Q @ K.T / np.sqrt(d_k))")
scale_twin(
    "sdpa_divide_by_d_k", lambda dims: 1.0 / dims["d_k"],
    "softmax(QKᵀ/d_k)V: divided by d_k instead of √d_k",
    "The scale is 1/√d_k, the inverse standard deviation of q·k; dividing by d_k flattens "
    "every row towards uniform.",
    "weights = softmax(Q @ K.T / d_k)      # should be / np.sqrt(d_k)")
scale_twin(
    "sdpa_scale_by_sqrt_seq_len", lambda dims: 1.0 / np.sqrt(dims["S"]),
    "softmax(QKᵀ/√S)V: scaled by the sequence length instead of the key dimension d_k",
    "The scale comes from Var(q·k) = d_k, the dimension of the query/key vectors, not from "
    "how many tokens there are (a slip some tutorials make, writing √n for the length).",
    "weights = softmax(Q @ K.T / np.sqrt(S))  # should be / np.sqrt(d_k)")


@twin("scaled_dot_product_attention",
      "weights normalised over the queries (columns sum to 1) instead of over the keys",
      "Each query's row of weights is a distribution over the keys, so the softmax runs over "
      "the last axis (axis=-1); over axis 0/-2 the columns sum to 1 and the rows do not.",
      "weights = softmax(scores, axis=0)     # should be axis=-1")
def sdpa_softmax_over_queries(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    if Q.shape[-2] == 1:      # one query: no axis of queries to normalise over by mistake
        raise ValueError("one query: the softmax has no queries' axis to run over")
    masked = apply_mask(raw * scale, mask)
    weights = softmax(masked, axis=-2)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


@twin("scaled_dot_product_attention",
      "the mask applied after the softmax (masked weights zeroed, rows no longer sum to 1)",
      "Masking must happen before the softmax, by setting blocked scores to −inf, so that the "
      "remaining weights are renormalised; zeroing weights afterwards leaves rows summing to < 1.",
      "weights = softmax(scores) * mask      # should be softmax(np.where(mask, scores, -np.inf))")
def sdpa_mask_after_softmax(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    weights = softmax(raw * scale)
    if mask is not None:
        check_mask_shape(np.asarray(mask), weights.shape)
        weights = weights * bool_mask(mask)
    return _attention_result(Q, K, V, raw, scale, raw * scale, weights, return_steps)


@twin("scaled_dot_product_attention",
      "blocked scores set to 0 instead of −inf (masked positions still get weight)",
      "A score of 0 is an ordinary score: exp(0) = 1, so 'masked' positions keep a share of "
      "the weight. Blocked positions need −inf (or a very large negative number).",
      "scores[~mask] = 0                     # should be scores[~mask] = -np.inf")
def sdpa_mask_with_zero(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    masked = raw * scale
    if mask is not None:
        check_mask_shape(np.asarray(mask), masked.shape)
        masked = np.where(bool_mask(mask), masked, 0.0)
    weights = softmax(masked)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


@twin("scaled_dot_product_attention",
      "the mask read the other way round (True = blocked, the nn.MultiheadAttention convention)",
      "F.scaled_dot_product_attention and this kit use True = may attend; nn.MultiheadAttention's "
      "attn_mask uses True = blocked. Mixing them attends exactly where it should not.",
      "scores = np.where(mask, -np.inf, scores)  # should be np.where(mask, scores, -np.inf)")
def sdpa_inverted_mask(Q, K, V, mask=None, scale=None, return_steps=False):
    inverted = None if mask is None else ~bool_mask(mask)
    return scaled_dot_product_attention(Q, K, V, inverted, scale, return_steps)


@twin("scaled_dot_product_attention",
      "softmax(QKᵀ/√d_k)V with a softmax that does not subtract the row max (NaN on large scores)",
      "exp overflows above ~709.8 in float64, so large scores give inf/inf = NaN. Subtract each "
      "row's max before exponentiating: the weights are unchanged and never overflow.",
      "e = np.exp(scores)                     # should be np.exp(scores - scores.max(-1, keepdims=True))")
def sdpa_no_max_subtraction(Q, K, V, mask=None, scale=None, return_steps=False):
    Q, K, V, raw, scale = _raw_scores(Q, K, V, scale)
    masked = raw * scale if mask is None else apply_mask(raw * scale, mask)
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(masked)
        weights = e / np.sum(e, axis=-1, keepdims=True)
    return _attention_result(Q, K, V, raw, scale, masked, weights, return_steps)


# --- causal attention -----------------------------------------------------------------------

def _causal(Q, K):
    return causal_mask(np.shape(Q)[-2], np.shape(K)[-2])


@twin("causal_attention",
      "attention with no causal mask: every token also attends to the tokens after it",
      "A decoder is trained on all positions at once; without the mask, position i sees the "
      "very tokens it must predict, so training leaks the answer and generation breaks.",
      "weights = softmax(Q @ K.T / np.sqrt(d_k))   # should block j > i: np.where(np.tril(ones), s, -inf)")
def causal_attention_unmasked(Q, K, V, return_steps=False):
    return scaled_dot_product_attention(Q, K, V, return_steps=return_steps)


@twin("causal_attention",
      "the mask built with triu instead of tril: each token attends to itself and the future",
      "np.triu keeps j ≥ i — the future. The causal mask keeps j ≤ i: np.tril(np.ones((L, S), bool)).",
      "mask = np.triu(np.ones((L, S), bool))   # should be np.tril(...)")
def causal_attention_triu(Q, K, V, return_steps=False):
    mask = np.triu(np.ones(_causal(Q, K).shape, dtype=bool))
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


@twin("causal_attention",
      "future scores set to 0 instead of −∞, so future tokens still get weight",
      "exp(0) = 1: a zeroed score still takes part in the softmax. Blocked scores must be −∞ "
      "(or a very negative number) so that their weight is exactly 0.",
      "scores = scores * mask                  # should be np.where(mask, scores, -np.inf)")
def causal_attention_mask_with_zero(Q, K, V, return_steps=False):
    return sdpa_mask_with_zero(Q, K, V, mask=_causal(Q, K), return_steps=return_steps)


# --- softmax --------------------------------------------------------------------------------

@twin("softmax",
      "softmax computed as exp(x)/Σexp(x) without subtracting the max (overflows to NaN)",
      "exp overflows above ~709.8 in float64 (~88.7 in float32), giving inf/inf = NaN. "
      "Subtract the row max first: it changes nothing mathematically.",
      "e = np.exp(x)                          # should be np.exp(x - x.max(axis, keepdims=True))")
def softmax_no_max_subtraction(x, axis=-1):
    x = as_float(x, "x")
    with np.errstate(over="ignore", invalid="ignore"):
        e = np.exp(x)
        return e / np.sum(e, axis=axis, keepdims=True)


@twin("softmax",
      "softmax over axis=1 (as in the lecture demo), which for a batch (B, L, S) normalises over the queries",
      "axis=1 is the key axis only for a single (L, S) matrix; with a batch axis in front it is "
      "the query axis. Use axis=-1, which is the key axis whatever the batch shape.",
      "softmax(scores, axis=1)                # should be axis=-1")
def softmax_axis_1(x, axis=-1):
    return softmax(x, axis=1)


# --- masks ----------------------------------------------------------------------------------

@twin("causal_mask",
      "np.triu instead of np.tril: each token sees the future, not the past",
      "Query i may attend to keys j ≤ i: the lower triangle. With triu, the first token sees "
      "the whole sentence and the last token only itself.",
      "np.triu(np.ones((L, S), bool))         # should be np.tril(...)")
def causal_mask_triu(L, S=None):
    S = L if S is None else S
    return np.triu(np.ones((L, S), dtype=bool))


@twin("causal_mask",
      "the diagonal excluded: a token may not attend to itself (first row fully masked)",
      "Causal masking hides only the future (j > i); position i itself is known. Excluding the "
      "diagonal leaves the first row with nothing to attend to.",
      "np.tril(np.ones((L, S), bool), k=-1)   # should be k=0")
def causal_mask_no_diagonal(L, S=None):
    S = L if S is None else S
    return np.tril(np.ones((L, S), dtype=bool), k=-1)


# --- multi-head attention -------------------------------------------------------------------

def _split_without_transpose(x, num_heads):
    *lead, L, d = x.shape
    return x.reshape(*lead, num_heads, L, d // num_heads)


def _merge_without_transpose(x):
    *lead, H, L, d_head = x.shape
    return x.reshape(*lead, L, H * d_head)


@twin("multi_head_attention",
      "heads split and merged with reshape alone, without the transpose (tokens are mixed across heads)",
      "(…, L, h·d) must be reshaped to (…, L, h, d) and then transposed to (…, h, L, d); "
      "reshaping straight to (…, h, L, d) cuts tokens across heads.",
      "q.reshape(B, h, L, d_head)             # should be q.reshape(B, L, h, d_head).transpose(0, 2, 1, 3)")
def mha_split_without_transpose(query, key, value, params, num_heads, mask=None):
    q = linear(query, params["W_Q"], params.get("b_Q"))
    k = linear(key, params["W_K"], params.get("b_K"))
    v = linear(value, params["W_V"], params.get("b_V"))
    steps = scaled_dot_product_attention(
        _split_without_transpose(q, num_heads), _split_without_transpose(k, num_heads),
        _split_without_transpose(v, num_heads), mask=head_mask(mask), return_steps=True)
    out = linear(_merge_without_transpose(steps.output), params["W_O"], params.get("b_O"))
    return out, steps.weights


@twin("multi_head_attention",
      "heads split correctly but merged with reshape alone, without transposing back (tokens mixed)",
      "Concat needs (…, h, L, d_head) transposed back to (…, L, h, d_head) before the reshape to "
      "(…, L, h·d_head); reshaping directly puts head 0's outputs for tokens 0 and 1 side by side "
      "in row 0.",
      "heads.reshape(B, L, h * d_head)         # should be heads.transpose(0, 2, 1, 3).reshape(B, L, -1)")
def mha_merge_without_transpose(query, key, value, params, num_heads, mask=None):
    heads = [linear(x, params[f"W_{n}"], params.get(f"b_{n}")) for x, n in
             ((query, "Q"), (key, "K"), (value, "V"))]
    steps = scaled_dot_product_attention(*(split_heads(h, num_heads) for h in heads),
                                         mask=head_mask(mask), return_steps=True)
    out = linear(_merge_without_transpose(steps.output), params["W_O"], params.get("b_O"))
    return out, steps.weights


@twin("multi_head_attention",
      "scores scaled by 1/√d_model instead of 1/√d_head",
      "Each head attends in its own d_head = d_model/h dimensions, so the scale is 1/√d_head; "
      "1/√d_model is too small by a factor √h and flattens every head.",
      "scores / np.sqrt(d_model)              # should be / np.sqrt(d_model // num_heads)")
def mha_scale_by_d_model(query, key, value, params, num_heads, mask=None):
    d_model = np.shape(query)[-1]
    concat, weights = mha_with_scale(query, key, value, params, num_heads, mask,
                                      1.0 / np.sqrt(d_model))
    return linear(concat, params["W_O"], params.get("b_O")), weights


@twin("multi_head_attention",
      "the concatenated heads returned without the output projection W_O",
      "MultiHead = Concat(head_1, …, head_h) W_O: the final projection mixes the heads' "
      "outputs and is part of the layer.",
      "return concat                          # should be return concat @ W_O + b_O")
def mha_no_output_projection(query, key, value, params, num_heads, mask=None):
    d_k = np.shape(params["W_Q"])[1] // num_heads
    return mha_with_scale(query, key, value, params, num_heads, mask, 1.0 / np.sqrt(d_k))


# --- PyTorch layout -------------------------------------------------------------------------

@twin("mha_params_from_torch",
      "PyTorch weights used as x @ W without the transpose (PyTorch computes x @ W.T)",
      "nn.Linear stores weight as (d_out, d_in) and computes x Wᵀ + b; to write x @ W you "
      "must transpose it. Square weights hide the mistake from the shapes.",
      "W_Q = w_q                              # should be W_Q = w_q.T")
def mha_params_from_torch_no_transpose(in_proj_weight, in_proj_bias, out_proj_weight, out_proj_bias):
    w_q, w_k, w_v = np.split(as_float(in_proj_weight, "in_proj_weight"), 3, axis=0)
    b_q, b_k, b_v = np.split(as_float(in_proj_bias, "in_proj_bias"), 3)
    return {"W_Q": w_q, "b_Q": b_q, "W_K": w_k, "b_K": b_k, "W_V": w_v, "b_V": b_v,
            "W_O": as_float(out_proj_weight, "out_proj_weight"),
            "b_O": as_float(out_proj_bias, "out_proj_bias")}
