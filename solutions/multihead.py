"""Multi-head attention: MultiHead(Q, K, V) = Concat(head_1, …, head_h) W_O,
head_i = Attention(Q W_Q^i, K W_K^i, V W_V^i).

The per-head projections W_Q^i are the column blocks i·d_k:(i+1)·d_k of one (d_model, h·d_k)
matrix, so all heads are projected with one matmul and then split — the same layout as
``nn.MultiheadAttention``; in self-attention Q, K and V even share one matmul with
[W_Q | W_K | W_V] (its ``in_proj_weight``), see ``project_qkv``. Parameters are a dict with keys
W_Q, b_Q, W_K, b_K, W_V, b_V (projections) and W_O, b_O (output), every W in (d_in, d_out) layout.
The biases are optional (the lecture's equations have none; PyTorch's layers do).
"""

from __future__ import annotations

from itertools import accumulate
from typing import NamedTuple

import numpy as np

from ._shapes import as_float, check_shapes
from .attention import AttentionCache, attention_backward, attention_forward, attention_weights
from .linear import LinearCache, affine, linear_backward, linear_forward
from .masks import check_mask_shape

MHA_PARAM_NAMES = ("W_Q", "b_Q", "W_K", "b_K", "W_V", "b_V", "W_O", "b_O")
MHA_WEIGHT_NAMES = ("W_Q", "W_K", "W_V", "W_O")


def split_heads(x, num_heads: int) -> np.ndarray:
    """(..., L, h·d_head) → (..., h, L, d_head): head i takes columns i·d_head:(i+1)·d_head.

    The reshape alone would give (..., L, h, d_head); the transpose moves heads in front of
    the tokens so each head sees all L tokens.
    """
    x = as_float(x, "x")
    if x.ndim < 2 or num_heads < 1 or x.shape[-1] % num_heads:
        raise ValueError(f"split_heads: expected shape (..., L, h·d_head) with h={num_heads} "
                         f"dividing the last axis, got {x.shape}")
    x = x.reshape(*x.shape[:-1], num_heads, x.shape[-1] // num_heads)
    return x.swapaxes(-2, -3)


def merge_heads(x) -> np.ndarray:
    """(..., h, L, d_head) → (..., L, h·d_head): the inverse of ``split_heads`` (Concat)."""
    x = as_float(x, "x")
    if x.ndim < 3:
        raise ValueError(f"merge_heads: expected shape (..., h, L, d_head), got {x.shape}")
    x = x.swapaxes(-2, -3)
    return x.reshape(*x.shape[:-2], -1)


def head_projection(W, num_heads: int, i: int) -> np.ndarray:
    """Head i's own projection W^i: columns i·d_k:(i+1)·d_k of W (d_model, h·d_k) → (d_model, d_k)."""
    W = as_float(W, "W")
    if W.ndim != 2 or num_heads < 1 or W.shape[1] % num_heads or not 0 <= i < num_heads:
        raise ValueError(f"head_projection: expected W (d_model, h·d_k) with h={num_heads} dividing "
                         f"its columns and 0 ≤ i < h, got shape {W.shape} and i={i}")
    d_k = W.shape[1] // num_heads
    return W[:, i * d_k:(i + 1) * d_k]


def _check_mha(query, key, value, params, num_heads):
    unknown = [n for n in params if n not in MHA_PARAM_NAMES]
    missing = [n for n in MHA_WEIGHT_NAMES if n not in params]
    if missing or unknown:
        raise ValueError(f"params: missing {missing or 'none'}, unknown {unknown or 'none'} "
                         f"(expected {', '.join(MHA_WEIGHT_NAMES)} and optional biases)")
    spec = {"W_Q": "d_model hd_k", "b_Q": "hd_k", "W_K": "d_model hd_k", "b_K": "hd_k",
            "W_V": "d_model hd_v", "b_V": "hd_v", "W_O": "hd_v d_model", "b_O": "d_model"}
    dims = check_shapes(
        query=(query, "... L d_model"), key=(key, "... S d_model"), value=(value, "... S d_model"),
        **{name: (array, spec[name]) for name, array in params.items() if array is not None})
    if num_heads < 1 or dims["hd_k"] % num_heads or dims["hd_v"] % num_heads:
        raise ValueError(f"num_heads={num_heads} must divide the projection widths "
                         f"h·d_k={dims['hd_k']} and h·d_v={dims['hd_v']}")


def head_mask(mask):
    """A mask for (..., L, S) scores → one for (..., h, L, S): the same mask for every head.
    A batched mask gets a head axis of size 1; an (L, S) or (S,) mask already fits every head."""
    if mask is None:
        return None
    mask = np.asarray(mask)
    return mask[..., None, :, :] if mask.ndim >= 3 else mask


class MHACache(NamedTuple):
    """What ``mha_backward`` needs: the caches of the projections q = query W_Q + b_Q, k, v and
    out = concat W_O + b_O, of the per-head attention, the number of heads h, and which biases
    the forward pass had (name → bool)."""
    q_projection: LinearCache
    k_projection: LinearCache
    v_projection: LinearCache
    attention: AttentionCache
    out_projection: LinearCache
    num_heads: int
    has_bias: dict


def mha_forward(query, key, value, params, num_heads: int, mask=None):
    """Multi-head attention forward pass.

    Shapes: query (..., L, d_model); key, value (..., S, d_model); ``mask`` bool
    (True = may attend) or additive, broadcastable to (..., L, S) and shared by all heads.
    Returns ``(out, cache)`` with out (..., L, d_model); ``cache``, an ``MHACache``, feeds
    ``mha_backward`` and ``mha_weights(cache)`` gives the per-head weights (..., h, L, S).
    """
    query, key, value = as_float(query, "query"), as_float(key, "key"), as_float(value, "value")
    _check_mha(query, key, value, params, num_heads)
    if mask is not None:  # checked before the head axis is added, so errors show the user's shape
        check_mask_shape(np.asarray(mask), query.shape[:-1] + key.shape[-2:-1])
    q, cache_q = linear_forward(query, params["W_Q"], params.get("b_Q"))
    k, cache_k = linear_forward(key, params["W_K"], params.get("b_K"))
    v, cache_v = linear_forward(value, params["W_V"], params.get("b_V"))
    heads, cache_attn = attention_forward(split_heads(q, num_heads), split_heads(k, num_heads),
                                          split_heads(v, num_heads), mask=head_mask(mask))
    out, cache_o = linear_forward(merge_heads(heads), params["W_O"], params.get("b_O"))
    has_bias = {name: params.get(name) is not None for name in ("b_Q", "b_K", "b_V", "b_O")}
    return out, MHACache(cache_q, cache_k, cache_v, cache_attn, cache_o, num_heads, has_bias)


def mha_weights(cache) -> np.ndarray:
    """The per-head attention weights (..., h, L, S) stored in an ``mha_forward`` cache."""
    return cache.attention.P


def project_qkv(query, key, value, params) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Q = query W_Q + b_Q,  K = key W_K + b_K,  V = value W_V + b_V  (shapes as in
    ``mha_forward``; float64 arrays already checked by the caller).

    Inputs that are one array share one matmul: self-attention (query = key = value = x) is
    x [W_Q | W_K | W_V] + [b_Q | b_K | b_V] split back into its column blocks, and
    cross-attention (key = value = memory) computes K and V together — one wide GEMM instead
    of two or three narrow ones. Each column block holds the same dot products either way.
    """
    if query is key is value:
        return stacked_projection(query, params, "QKV")
    Q = affine(query, params["W_Q"], params.get("b_Q"))
    if key is value:
        return (Q, *stacked_projection(key, params, "KV"))
    return Q, affine(key, params["W_K"], params.get("b_K")), affine(value, params["W_V"],
                                                                     params.get("b_V"))


def stacked_projection(x, params, names: str) -> list[np.ndarray]:
    """x [W_a | W_b | …] + [b_a | b_b | …] split into x W_a + b_a, x W_b + b_b, … for the
    letters a, b, … of ``names`` (e.g. "KV"); a missing bias counts as 0."""
    Ws = [params["W_" + name] for name in names]
    biases = [params.get("b_" + name) for name in names]
    b = None if all(b is None for b in biases) else np.concatenate(
        [np.zeros(W.shape[1]) if b is None else b for W, b in zip(Ws, biases)])
    y = affine(x, np.concatenate(Ws, axis=1), b)
    ends = accumulate(W.shape[1] for W in Ws)
    return [y[..., end - W.shape[1]:end] for W, end in zip(Ws, ends)]


def multi_head_attention(query, key, value, params, num_heads: int, mask=None):
    """Concat(head_1, …, head_h) W_O + b_O with head_i = softmax(Q_i K_iᵀ/√d_k) V_i.

    Self-attention: ``query = key = value = x``. Cross-attention: query from the decoder,
    key = value = the encoder output. Returns ``(out, weights)``: out (..., L, d_model),
    weights (..., h, L, S) per head (not averaged, unlike PyTorch's default).

    The evaluation pass: what ``mha_forward`` computes, without keeping a cache for backprop.
    """
    query, key, value = as_float(query, "query"), as_float(key, "key"), as_float(value, "value")
    _check_mha(query, key, value, params, num_heads)
    if mask is not None:  # checked before the head axis is added, so errors show the user's shape
        check_mask_shape(np.asarray(mask), query.shape[:-1] + key.shape[-2:-1])
    params = {name: as_float(array, name) for name, array in params.items() if array is not None}
    Q, K, V = (split_heads(x, num_heads) for x in project_qkv(query, key, value, params))
    weights = attention_weights(Q, K, head_mask(mask))
    concat = np.empty(query.shape[:-1] + (num_heads * V.shape[-1],))  # Concat(head_1, …, head_h)
    np.matmul(weights, V, out=split_heads(concat, num_heads))        # head_i = P_i V_i, in place
    out = affine(concat, params["W_O"], params.get("b_O"))
    return out, weights


def mha_backward(dout, cache):
    """Backward pass of ``mha_forward``.

    Returns ``(dquery, dkey, dvalue, grads)`` with ``grads`` keyed like the params (dW_Q → "W_Q";
    biases only where the forward pass had them). Shapes: dout (..., L, d_model) → dquery
    (..., L, d_model), dkey and dvalue (..., S, d_model). For self-attention the gradient w.r.t.
    x is dquery + dkey + dvalue.
    """
    cache_q, cache_k, cache_v, cache_attn, cache_o, num_heads, has_bias = cache
    grads = {}
    dconcat, grads["W_O"], grads["b_O"] = linear_backward(dout, cache_o)
    dQh, dKh, dVh = attention_backward(split_heads(dconcat, num_heads), cache_attn)
    dquery, grads["W_Q"], grads["b_Q"] = linear_backward(merge_heads(dQh), cache_q)
    dkey, grads["W_K"], grads["b_K"] = linear_backward(merge_heads(dKh), cache_k)
    dvalue, grads["W_V"], grads["b_V"] = linear_backward(merge_heads(dVh), cache_v)
    return dquery, dkey, dvalue, {n: g for n, g in grads.items() if has_bias.get(n, True)}
