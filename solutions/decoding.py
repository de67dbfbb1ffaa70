"""Left-to-right generation with a key–value cache, and the parallel training pass it equals.

Training is teacher-forced: the decoder reads the targets shifted right (``shift_right``:
<bos> + y[:-1]) and predicts every position at once under a causal mask. Generation makes one
token at a time; each step projects only the new token and appends its key and value to the
cache (``cached_attention``), so step t's output row equals row t of the parallel pass. When
L new queries meet S ≥ L keys, the causal mask is aligned bottom-right: query i is position
S − L + i and sees keys 0 … S − L + i (``causal_mask_bottom_right``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from ._shapes import as_float
from .attention import scaled_dot_product_attention
from .layer_norm import layer_norm
from .linear import linear
from .masks import padding_mask
from .multihead import merge_heads, multi_head_attention, project_qkv, split_heads
from .positional import embed, positional_encoding
from .softmax import log_softmax
from .transformer_layers import decoder_layer_after_self_attention


def shift_right(targets, bos: int) -> np.ndarray:
    """The decoder's teacher-forced input: <bos> + targets[..., :-1]. Shapes (..., T) → (..., T)."""
    targets = np.asarray(targets)
    if targets.ndim < 1 or targets.shape[-1] < 1:
        raise ValueError(f"shift_right: expected targets (..., T) with T ≥ 1, got shape {targets.shape}")
    return np.concatenate([np.full(targets.shape[:-1] + (1,), bos, dtype=targets.dtype),
                           targets[..., :-1]], axis=-1)


def causal_mask_bottom_right(L: int, S: int) -> np.ndarray:
    """(L, S) bool: the last L of S positions as queries, each seeing itself and every key
    before it — query i sees keys 0 … S − L + i. For L = S it is ``causal_mask(L)``."""
    if not 1 <= L <= S:
        raise ValueError(f"causal_mask_bottom_right: expected 1 ≤ L ≤ S, got L={L}, S={S}")
    return np.tril(np.ones((L, S), dtype=bool), k=S - L)


def cached_attention(q, k, v, K_cache, V_cache):
    """Append the new keys and values to the cache, then attend: K = [K_cache; k],
    V = [V_cache; v], Z = softmax(q Kᵀ/√d_k + M) V with M the bottom-right causal mask.

    Shapes: q (..., L, d_k), k (..., L, d_k), v (..., L, d_v) for the L new positions;
    K_cache (..., t, d_k), V_cache (..., t, d_v) for the t before them.
    Returns (Z (..., L, d_v), K (..., t + L, d_k), V (..., t + L, d_v))."""
    K = np.concatenate([as_float(K_cache, "K_cache"), as_float(k, "k")], axis=-2)
    V = np.concatenate([as_float(V_cache, "V_cache"), as_float(v, "v")], axis=-2)
    L = np.shape(q)[-2]
    return scaled_dot_product_attention(q, K, V, mask=causal_mask_bottom_right(L, K.shape[-2])), K, V


def self_attention_decode_step(cache, x_new, W_Q, W_K, W_V):
    """One step of generation in one self-attention head with a key–value cache: project the
    L new tokens, append their keys and values to the cache, attend with the bottom-right
    causal mask. cache = (K_cache (t, d_k), V_cache (t, d_v)), x_new (L, d_model).
    Returns (Z (L, d_v), (K (t + L, d_k), V (t + L, d_v))): Z equals rows t … t + L − 1 of
    the parallel causal pass over all t + L tokens."""
    K_cache, V_cache = cache
    x_new = as_float(x_new, "x_new")
    Z, K, V = cached_attention(x_new @ as_float(W_Q, "W_Q"), x_new @ as_float(W_K, "W_K"),
                               x_new @ as_float(W_V, "W_V"), K_cache, V_cache)
    return Z, (K, V)


def cross_attention(y, memory, params, num_heads: int, memory_mask=None):
    """The decoder's cross-attention: queries from the decoder's states y (..., T, d_model),
    keys and values from the encoder's output memory (..., S, d_model); the source padding
    mask only (every source token is known before decoding starts: no causal mask).
    Returns (out (..., T, d_model), weights (..., h, T, S))."""
    return multi_head_attention(y, memory, memory, params, num_heads, memory_mask)


def positional_self_attention(X, W_Q, W_K, W_V):
    """Self-attention over X + PE: positions are added to the embeddings before the
    projections, so Q, K and V all carry them. Shapes: X (..., L, d_model), W (d_model, d)."""
    X = as_float(X, "X")
    P = X + positional_encoding(X.shape[-2], X.shape[-1])
    return scaled_dot_product_attention(P @ as_float(W_Q, "W_Q"), P @ as_float(W_K, "W_K"),
                                        P @ as_float(W_V, "W_V"))


class DecoderCache(NamedTuple):
    """Per decoder layer, the self-attention's keys and values of every position so far:
    keys[i] (B, h, t, d_k), values[i] (B, h, t, d_v); ``length`` = t, the next position (kept
    on its own: a model without decoder layers has no keys to count)."""
    keys: list
    values: list
    length: int = 0


def empty_cache(model, batch: int) -> DecoderCache:
    c = model.config
    d_k = c.d_model // c.num_heads
    empty = [np.zeros((batch, c.num_heads, 0, d_k)) for _ in range(c.num_decoder_layers)]
    return DecoderCache(empty, [e.copy() for e in empty])


def _self_attention_step(y, params, num_heads, K_cache, V_cache):
    q, k, v = (split_heads(x, num_heads) for x in project_qkv(y, y, y, params))
    Z, K, V = cached_attention(q, k, v, K_cache, V_cache)
    return linear(merge_heads(Z), params["W_O"], params.get("b_O")), K, V


def decode_step(model, memory, cache: DecoderCache, tokens, src_lengths=None):
    """One generation step: the next tokens (B,) at position t = ``cache.length``, through
    every decoder layer with the cached keys and values of positions 0 … t − 1. Returns the
    log-probabilities (B, V_tgt) of the token after them, and the cache with position t."""
    config, tree = model.config, model._tree.get("decoder", {})
    t = cache.length
    y = embed(np.asarray(tokens)[:, None], model.weights["tgt_embedding"])
    y += positional_encoding(t + 1, config.d_model)[t]
    memory_mask = None if src_lengths is None else padding_mask(src_lengths, memory.shape[-2])
    keys, values = [], []
    for i in range(config.num_decoder_layers):
        layer = tree["layers"][str(i)]
        attended, K, V = _self_attention_step(y, layer["self_attn"], config.num_heads,
                                              cache.keys[i], cache.values[i])
        keys.append(K)
        values.append(V)
        y, _ = decoder_layer_after_self_attention(y, attended, memory, layer, config.num_heads,
                                                  memory_mask, config.layer_norm_eps)
    if config.final_layer_norm:
        y = layer_norm(y, **tree["norm"], eps=config.layer_norm_eps)
    logits = linear(y[:, 0], model.generator_weight(), model.weights["generator.b"])
    return log_softmax(logits, axis=-1), DecoderCache(keys, values, t + 1)


def cached_greedy_decode(model, src, bos_id: int, eos_id: int, max_len: int, src_lengths=None) -> np.ndarray:
    """``Transformer.greedy_decode`` with a key–value cache: each step runs the new token only.
    The same tokens (B, 1 + generated), <bos> first."""
    memory = model.encode(src, src_lengths)
    cache = empty_cache(model, memory.shape[0])
    out = np.full((memory.shape[0], 1), bos_id, dtype=np.int64)
    done = np.zeros(memory.shape[0], dtype=bool)
    for _ in range(max_len):
        log_probs, cache = decode_step(model, memory, cache, out[:, -1], src_lengths)
        next_token = np.where(done, eos_id, np.argmax(log_probs, axis=-1))
        out = np.concatenate([out, next_token[:, None]], axis=1)
        done |= next_token == eos_id
        if done.all():
            break
    return out
