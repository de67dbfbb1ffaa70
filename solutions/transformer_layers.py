"""Encoder and decoder layers, post-LN as in the paper and the lecture: LayerNorm(x + Sublayer(x)).

Layer parameters are nested dicts:
  encoder layer: self_attn (MHA params), norm1 {gamma, beta}, ffn {W1, b1, W2, b2}, norm2
  decoder layer: self_attn, norm1, cross_attn, norm2, ffn, norm3
Dropout is left out: these are the evaluation-mode equations (PyTorch's ``.eval()``).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .feed_forward import FFNCache, ffn, ffn_backward, ffn_forward
from .layer_norm import LayerNormCache, layer_norm_backward, layer_norm_forward, layer_norm_in_place
from .multihead import MHACache, mha_backward, mha_forward, multi_head_attention


def add_and_norm(x, sublayer_out, norm, eps: float = 1e-5) -> np.ndarray:
    """LayerNorm(x + Sublayer(x)): the residual connection, then layer normalization."""
    return layer_norm_in_place(x + sublayer_out, norm["gamma"], norm["beta"], eps)


def _add_and_norm_into(sublayer_out: np.ndarray, x, norm, eps: float) -> np.ndarray:
    """``add_and_norm(x, sublayer_out, …)`` in the memory of ``sublayer_out``: a fresh output
    of this layer's own sublayer, not needed again (x + s = s + x, bit for bit)."""
    sublayer_out += x
    return layer_norm_in_place(sublayer_out, norm["gamma"], norm["beta"], eps)


def encoder_layer(x, params, num_heads: int, mask=None, eps: float = 1e-5,
                  return_weights: bool = False):
    """h = LayerNorm(x + SelfAttention(x));  out = LayerNorm(h + FFN(h)).

    Shapes: x (..., L, d_model) → (..., L, d_model). ``mask``: e.g. a padding mask (..., 1, L).
    With ``return_weights`` returns ``(out, {"self_attn": (..., h, L, L)})``.
    """
    attended, weights = multi_head_attention(x, x, x, params["self_attn"], num_heads, mask)
    h = _add_and_norm_into(attended, x, params["norm1"], eps)
    out = _add_and_norm_into(ffn(h, **params["ffn"]), h, params["norm2"], eps)
    return (out, {"self_attn": weights}) if return_weights else out


def decoder_layer(y, memory, params, num_heads: int, self_mask=None, memory_mask=None,
                  eps: float = 1e-5, return_weights: bool = False):
    """h₁ = LayerNorm(y + MaskedSelfAttention(y));
    h₂ = LayerNorm(h₁ + CrossAttention(query=h₁, key=value=memory));
    out = LayerNorm(h₂ + FFN(h₂)).

    Shapes: y (..., T, d_model), memory (..., S, d_model) → (..., T, d_model).
    ``self_mask`` is normally ``causal_mask(T)``; ``memory_mask`` the source padding (..., 1, S).
    With ``return_weights`` returns ``(out, {"self_attn": (..., h, T, T), "cross_attn": (..., h, T, S)})``.
    """
    attended, self_weights = multi_head_attention(y, y, y, params["self_attn"], num_heads, self_mask)
    out, cross_weights = decoder_layer_after_self_attention(y, attended, memory, params, num_heads,
                                                            memory_mask, eps)
    if return_weights:
        return out, {"self_attn": self_weights, "cross_attn": cross_weights}
    return out


def decoder_layer_after_self_attention(y, attended, memory, params, num_heads: int, memory_mask=None,
                                       eps: float = 1e-5):
    """The decoder layer from its self-attention's output ``attended`` (a fresh array, used up)
    on: h₁ = LayerNorm(y + attended), the cross-attention and the FFN. Returns (out, the
    cross-attention's weights). Generation with a cache computes ``attended`` its own way."""
    h1 = _add_and_norm_into(attended, y, params["norm1"], eps)
    crossed, cross_weights = multi_head_attention(h1, memory, memory, params["cross_attn"],
                                                  num_heads, memory_mask)
    h2 = _add_and_norm_into(crossed, h1, params["norm2"], eps)
    return _add_and_norm_into(ffn(h2, **params["ffn"]), h2, params["norm3"], eps), cross_weights


# --- forward passes kept for backprop, and their backward passes ------------------------------

class AddNormCache(NamedTuple):
    """What ``add_and_norm_backward`` needs: the LayerNorm's cache of z = x + Sublayer(x)."""
    norm: LayerNormCache


def add_and_norm_forward(x, sublayer_out, norm, eps: float = 1e-5):
    """LayerNorm(x + Sublayer(x)), returning ``(out, cache)``."""
    out, cache = layer_norm_forward(x + sublayer_out, norm["gamma"], norm["beta"], eps)
    return out, AddNormCache(cache)


def add_and_norm_backward(dout, cache):
    """dz = LayerNorm'(dout); the residual hands dz to both x and the sublayer's output.
    Returns ``(dz, {"gamma": dγ, "beta": dβ})``."""
    dz, dgamma, dbeta = layer_norm_backward(dout, cache.norm)
    return dz, {"gamma": dgamma, "beta": dbeta}


class EncoderLayerCache(NamedTuple):
    self_attn: MHACache
    norm1: AddNormCache
    ffn: FFNCache
    norm2: AddNormCache


def encoder_layer_forward(x, params, num_heads: int, mask=None, eps: float = 1e-5):
    """``encoder_layer``, returning ``(out, cache)`` for ``encoder_layer_backward``; the
    attention weights are ``mha_weights(cache.self_attn)``."""
    attended, attn = mha_forward(x, x, x, params["self_attn"], num_heads, mask)
    h, norm1 = add_and_norm_forward(x, attended, params["norm1"], eps)
    fed, feed = ffn_forward(h, **params["ffn"])
    out, norm2 = add_and_norm_forward(h, fed, params["norm2"], eps)
    return out, EncoderLayerCache(attn, norm1, feed, norm2)


def encoder_layer_backward(dout, cache):
    """dx of ``encoder_layer``, and the gradients of its params (nested like them)."""
    grads = {}
    dh, grads["norm2"] = add_and_norm_backward(dout, cache.norm2)
    dh_ffn, *dffn = ffn_backward(dh, cache.ffn)
    grads["ffn"] = dict(zip(("W1", "b1", "W2", "b2"), dffn))
    dx, grads["norm1"] = add_and_norm_backward(dh + dh_ffn, cache.norm1)
    dq, dk, dv, grads["self_attn"] = mha_backward(dx, cache.self_attn)
    return dx + dq + dk + dv, grads


class DecoderLayerCache(NamedTuple):
    self_attn: MHACache
    norm1: AddNormCache
    cross_attn: MHACache
    norm2: AddNormCache
    ffn: FFNCache
    norm3: AddNormCache


def decoder_layer_forward(y, memory, params, num_heads: int, self_mask=None, memory_mask=None,
                          eps: float = 1e-5):
    """``decoder_layer``, returning ``(out, cache)`` for ``decoder_layer_backward``."""
    attended, self_attn = mha_forward(y, y, y, params["self_attn"], num_heads, self_mask)
    h1, norm1 = add_and_norm_forward(y, attended, params["norm1"], eps)
    crossed, cross_attn = mha_forward(h1, memory, memory, params["cross_attn"], num_heads, memory_mask)
    h2, norm2 = add_and_norm_forward(h1, crossed, params["norm2"], eps)
    fed, feed = ffn_forward(h2, **params["ffn"])
    out, norm3 = add_and_norm_forward(h2, fed, params["norm3"], eps)
    return out, DecoderLayerCache(self_attn, norm1, cross_attn, norm2, feed, norm3)


def decoder_layer_backward(dout, cache):
    """(dy, dmemory, grads) of ``decoder_layer``: the memory's gradient comes from the
    cross-attention's keys and values only."""
    grads = {}
    dh2, grads["norm3"] = add_and_norm_backward(dout, cache.norm3)
    dh2_ffn, *dffn = ffn_backward(dh2, cache.ffn)
    grads["ffn"] = dict(zip(("W1", "b1", "W2", "b2"), dffn))
    dh1, grads["norm2"] = add_and_norm_backward(dh2 + dh2_ffn, cache.norm2)
    dh1_q, dmemory_k, dmemory_v, grads["cross_attn"] = mha_backward(dh1, cache.cross_attn)
    dy, grads["norm1"] = add_and_norm_backward(dh1 + dh1_q, cache.norm1)
    dq, dk, dv, grads["self_attn"] = mha_backward(dy, cache.self_attn)
    return dy + dq + dk + dv, dmemory_k + dmemory_v, grads
