"""Twins of generation and training: the key–value cache, the shifted targets, cross-attention,
positional encodings, label smoothing and LayerNorm's gradient — each registered with ``twin``
so that TWINS stays the one registry.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np

from .._shapes import as_float
from ..attention import scaled_dot_product_attention
from ..decoding import cached_attention, causal_mask_bottom_right
from ..losses import IGNORE_INDEX, softmax_cross_entropy_forward
from ..masks import causal_mask, combine_masks
from ..multihead import multi_head_attention
from ..positional import positional_encoding
from .registry import twin


# --- the key–value cache ----------------------------------------------------------------------
# The reference appends the new keys and values, then attends with the bottom-right causal mask.

def _appended(k, v, K_cache, V_cache):
    return (np.concatenate([as_float(K_cache, "K_cache"), as_float(k, "k")], axis=-2),
            np.concatenate([as_float(V_cache, "V_cache"), as_float(v, "v")], axis=-2))


@twin("cached_attention",
      "attention over the cache before the new key and value were appended: the new token does not see itself",
      "Append first, then attend: position t's query must meet its own key k_t (the causal mask "
      "allows j ≤ t). Attending over the old cache and appending afterwards leaves out the "
      "diagonal, so step t no longer equals row t of the parallel pass.",
      "Z = attend(q, K_cache, V_cache); K_cache = append(K_cache, k)   # should append k, v first, then attend")
def cached_attention_appended_after_use(q, k, v, K_cache, V_cache):
    K, V = _appended(k, v, K_cache, V_cache)
    q, K_cache, V_cache = as_float(q, "q"), as_float(K_cache, "K_cache"), as_float(V_cache, "V_cache")
    if K_cache.shape[-2] == 0:                # nothing to attend to: no weight anywhere
        return np.zeros(q.shape[:-1] + V.shape[-1:]), K, V
    return scaled_dot_product_attention(q, K_cache, V_cache), K, V


@twin("cached_attention",
      "the cache read with the top-left causal mask: the new query sees only the first key(s)",
      "With a cache the L new queries are the *last* L positions of S keys: query i is position "
      "S − L + i and may see keys 0 … S − L + i (the mask aligned bottom-right). causal_mask(L, S) "
      "is aligned top-left, as for training with L = S: one new query then sees key 0 only.",
      "mask = causal_mask(L, S)   # should be np.tril(np.ones((L, S)), k=S - L): aligned bottom-right")
def cached_attention_top_left_mask(q, k, v, K_cache, V_cache):
    K, V = _appended(k, v, K_cache, V_cache)
    L = np.shape(q)[-2]
    return scaled_dot_product_attention(q, K, V, mask=causal_mask(L, K.shape[-2])), K, V


# --- teacher forcing ------------------------------------------------------------------------

@twin("shift_right",
      "the targets not shifted: the decoder reads y itself instead of <bos> + y[:-1]",
      "Position t must predict y_t from y_0 … y_{t−1} only. Feeding y unshifted puts y_t itself "
      "at position t, where the causal mask lets the decoder see it: it learns to copy its "
      "input and has nothing to read at generation time.",
      "tgt = targets            # should be [bos] + targets[:-1]")
def shift_right_not_shifted(targets, bos):
    return np.asarray(targets).copy()


# --- cross-attention ------------------------------------------------------------------------

@twin("cross_attention",
      "cross-attention with the queries from the encoder and the keys and values from the decoder",
      "In the decoder's cross-attention each *target* position asks (Q = y W_Q) and the *source* "
      "answers (K = memory W_K, V = memory W_V): the output has one row per target token "
      "(T × d_model) and its weights are T × S. Swapped, every source token asks the decoder.",
      "multi_head_attention(memory, y, y, ...)   # should be multi_head_attention(y, memory, memory, ...)")
def cross_attention_query_from_encoder(y, memory, params, num_heads, memory_mask=None):
    return multi_head_attention(memory, y, y, params, num_heads)


@twin("cross_attention",
      "a causal mask in the cross-attention: target position t sees source positions ≤ t only",
      "The whole source is known before decoding starts, so every target position may look at "
      "every (non-padding) source token: only the padding mask belongs there. The causal mask "
      "belongs to the decoder's self-attention, over the tokens not yet generated.",
      "mask = combine_masks(memory_mask, causal_mask(T, S))   # should be memory_mask alone")
def cross_attention_causal_mask(y, memory, params, num_heads, memory_mask=None):
    T, S = np.shape(y)[-2], np.shape(memory)[-2]
    mask = causal_mask(T, S) if memory_mask is None else combine_masks(memory_mask, causal_mask(T, S))
    return multi_head_attention(y, memory, memory, params, num_heads, mask)


# --- positional encodings -------------------------------------------------------------------

@twin("positional_self_attention",
      "the positional encoding added after the projections (XW + PE) instead of to X",
      "PE is added to the embeddings, x_i + PE(i), before anything else: then Q, K and V are "
      "(X + PE) W. Added after the projections the positions skip W_Q, W_K and W_V, and the "
      "scores mix them differently (and d_k need not equal d_model).",
      "Q = X @ W_Q + PE        # should be (X + PE) @ W_Q")
def positional_after_projections(X, W_Q, W_K, W_V):
    X = as_float(X, "X")
    L = X.shape[-2]
    Q, K, V = (X @ as_float(W, name) for W, name in ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V")))
    return scaled_dot_product_attention(Q + positional_encoding(L, Q.shape[-1]),
                                        K + positional_encoding(L, K.shape[-1]),
                                        V + positional_encoding(L, V.shape[-1]))


@twin("positional_self_attention",
      "self-attention without the positional encoding: order-blind",
      "Attention is a weighted average over a set: permute the input and the output rows are "
      "permuted the same way. Only X + PE tells it where each token stands.",
      "P = X                   # should be X + positional_encoding(L, d_model)")
def positional_self_attention_without_pe(X, W_Q, W_K, W_V):
    X = as_float(X, "X")
    return scaled_dot_product_attention(X @ as_float(W_Q, "W_Q"), X @ as_float(W_K, "W_K"),
                                        X @ as_float(W_V, "W_V"))


# --- the loss and LayerNorm's gradient --------------------------------------------------------

@twin("cross_entropy",
      "label smoothing spread over every class, the padding token included",
      "The smoothing mass ε goes to the classes a target could be; <pad> never is one (its "
      "positions are not even scored). Spread over all C classes, ε/C of every target goes to "
      "<pad> and the model is pulled towards predicting padding. (This is the Annotated "
      "Transformer's convention; PyTorch's label_smoothing spreads over all C.)",
      "q = (1 - eps) * onehot(y) + eps / C        # should be eps / (C - 1) on every class but <pad>")
def cross_entropy_smoothing_over_pad(logits, targets, ignore_index=IGNORE_INDEX, label_smoothing=0.0):
    C = np.shape(logits)[-1]
    _, cache = softmax_cross_entropy_forward(logits, targets, ignore_index)
    picked = np.take_along_axis(cache.log_p, cache.safe_targets[..., None], axis=-1)[..., 0]
    mixed = (1.0 - label_smoothing) * picked + label_smoothing * cache.log_p.sum(axis=-1) / C
    return -float(np.sum(mixed, where=cache.valid)) / cache.count


@twin("layer_norm_backward",
      "LayerNorm's gradient without the mean term: dx = r (g − x̂ mean(g ⊙ x̂))",
      "μ depends on every x_j, so dx has three terms: (r / D)(D g − Σ g − x̂ Σ g ⊙ x̂). "
      "Dropping −Σ g forgets that moving one x_j moves the mean, which every output subtracts: "
      "the gradient no longer sums to 0 over the features.",
      "dx = r * (g - x_hat * (g * x_hat).mean(-1, keepdims=True))   # should also subtract g.mean(-1, keepdims=True)")
def layer_norm_backward_without_mean_term(dy, cache):
    x_hat, r, gamma = cache
    dy = as_float(dy, "dy")
    g = dy * gamma
    dx = r * (g - x_hat * np.mean(g * x_hat, axis=-1, keepdims=True))
    axes = tuple(range(dy.ndim - 1))
    return dx, np.sum(dy * x_hat, axis=axes), np.sum(dy, axis=axes)


# --- one decoding step of a self-attention head -----------------------------------------------

def _step_projections(cache, x_new, W_Q, W_K, W_V):
    x_new = as_float(x_new, "x_new")
    return (x_new @ as_float(W_Q, "W_Q"), x_new @ as_float(W_K, "W_K"), x_new @ as_float(W_V, "W_V"),
            as_float(cache[0], "K_cache"), as_float(cache[1], "V_cache"))


@twin("self_attention_decode_step",
      "the step attends over the cache before appending the new keys and values",
      "Append first, then attend: the new token's query must meet its own key (the causal mask "
      "allows j ≤ t). Attending over the old cache leaves out the diagonal, and the first step "
      "has nothing to attend to at all.",
      "Z = attend(q, K_cache, V_cache); K = append(K_cache, k)   # should append, then attend")
def decode_step_appended_after_use(cache, x_new, W_Q, W_K, W_V):
    Z, K, V = cached_attention_appended_after_use(*_step_projections(cache, x_new, W_Q, W_K, W_V))
    return Z, (K, V)


@twin("self_attention_decode_step",
      "the step masks with the top-left causal mask: a new query sees the first key(s) only",
      "The L new queries are the last L of t + L positions, so query i may see keys 0 … t + i: "
      "the triangle is aligned bottom-right (np.tril(..., k=S − L)). The top-left mask of "
      "training (L = S) lets one new query see key 0 alone.",
      "mask = np.tril(np.ones((L, S)))   # should be np.tril(np.ones((L, S)), k=S - L)")
def decode_step_top_left_mask(cache, x_new, W_Q, W_K, W_V):
    Z, K, V = cached_attention_top_left_mask(*_step_projections(cache, x_new, W_Q, W_K, W_V))
    return Z, (K, V)


@twin("self_attention_decode_step",
      "the new keys and values used but not kept: the cache returned unchanged",
      "The next step needs this step's key and value too: a cache that is not extended makes "
      "every later step forget the tokens generated since it was first filled.",
      "return Z, cache                  # should return Z, (K, V) with the new rows appended")
def decode_step_cache_not_extended(cache, x_new, W_Q, W_K, W_V):
    q, k, v, K_cache, V_cache = _step_projections(cache, x_new, W_Q, W_K, W_V)
    Z, _, _ = cached_attention(q, k, v, K_cache, V_cache)
    return Z, (K_cache, V_cache)


@twin("self_attention_decode_step",
      "the step's scores not scaled by 1/√d_k",
      "A cached step computes the same scores as the parallel pass, q·k/√d_k: without the scale "
      "its softmax is sharper, and its row no longer equals the parallel pass's.",
      "scores = q @ K.T                 # should be q @ K.T / np.sqrt(d_k)")
def decode_step_no_scale(cache, x_new, W_Q, W_K, W_V):
    q, k, v, K_cache, V_cache = _step_projections(cache, x_new, W_Q, W_K, W_V)
    K, V = _appended(k, v, K_cache, V_cache)
    mask = causal_mask_bottom_right(q.shape[-2], K.shape[-2])
    return scaled_dot_product_attention(q, K, V, mask=mask, scale=1.0), (K, V)


@twin("self_attention_decode_step",
      "no mask: the new tokens of a chunk see each other's future",
      "With one new token every cached key is in its past, so no mask is needed; fed several at "
      "once, new token i must still not see new tokens after it (the bottom-right triangle).",
      "weights = softmax(q @ K.T / np.sqrt(d_k))   # should mask keys after t + i")
def decode_step_unmasked(cache, x_new, W_Q, W_K, W_V):
    q, k, v, K_cache, V_cache = _step_projections(cache, x_new, W_Q, W_K, W_V)
    K, V = _appended(k, v, K_cache, V_cache)
    return scaled_dot_product_attention(q, K, V), (K, V)
