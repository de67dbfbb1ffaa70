"""Encoder and decoder layers, post-LN as in the paper and the lecture: LayerNorm(x + Sublayer(x)).

Layer parameters are nested dicts:
  encoder layer: self_attn (MHA params), norm1 {gamma, beta}, ffn {W1, b1, W2, b2}, norm2
  decoder layer: self_attn, norm1, cross_attn, norm2, ffn, norm3
Dropout is left out: these are the evaluation-mode equations (PyTorch's ``.eval()``).
"""

from __future__ import annotations

import numpy as np

from .feed_forward import ffn
from .layer_norm import layer_norm_in_place
from .multihead import multi_head_attention


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
    h1 = _add_and_norm_into(attended, y, params["norm1"], eps)
    crossed, cross_weights = multi_head_attention(h1, memory, memory, params["cross_attn"],
                                                  num_heads, memory_mask)
    h2 = _add_and_norm_into(crossed, h1, params["norm2"], eps)
    out = _add_and_norm_into(ffn(h2, **params["ffn"]), h2, params["norm3"], eps)
    if return_weights:
        return out, {"self_attn": self_weights, "cross_attn": cross_weights}
    return out
