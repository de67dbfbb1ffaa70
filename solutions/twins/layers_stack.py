"""Generated twins of the encoder and decoder layers, continued from ``layers``: a step
skipped or done wrong, a sublayer computed wrong, the attention weights read wrong, and
log-probabilities."""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._shapes import as_float
from ..feed_forward import ffn
from ..layer_norm import layer_norm
from ..linear import linear
from .common import mha_with_scale
from .core_layers import layer_norm_over_tokens, layer_norm_unbiased_std
from .registry import add_twin
from ..multihead import mha_weights, multi_head_attention
from ..softmax import softmax
from .layers import mha_interleaved_heads


# --- encoder and decoder layers: a step skipped or done wrong -------------------------------

def _post_ln(norm: Callable | None, residual: bool):
    """Add & Norm as one twin does it: ``norm`` None skips the LayerNorm, ``residual`` False
    skips the x +."""
    def add_norm(x, out, params, eps):
        total = x + out if residual else out
        return total if norm is None else norm(total, params["gamma"], params["beta"], eps)
    return add_norm


def layer_twins(words: str, norm: Callable | None, residual: bool, summary: str,
                explanation: str, code: str):
    """Register the encoder- and the decoder-layer twin (``encoder_layer_<words>``,
    ``decoder_layer_<words>``) whose every Add & Norm makes the same mistake."""
    add_norm = _post_ln(norm, residual)

    def encoder(x, params, num_heads, mask=None, eps=1e-5, return_weights=False):
        x = as_float(x, "x")
        attended, weights = multi_head_attention(x, x, x, params["self_attn"], num_heads, mask)
        h = add_norm(x, attended, params["norm1"], eps)
        out = add_norm(h, ffn(h, **params["ffn"]), params["norm2"], eps)
        return (out, {"self_attn": weights}) if return_weights else out

    def decoder(y, memory, params, num_heads, self_mask=None, memory_mask=None, eps=1e-5,
                return_weights=False):
        return _decoder(y, memory, params, num_heads, self_mask, memory_mask, eps,
                        return_weights, add_norm)

    add_twin(f"encoder_layer_{words}", "encoder_layer", encoder, f"an encoder layer with {summary}",
             explanation, code)
    add_twin(f"decoder_layer_{words}", "decoder_layer", decoder, f"a decoder layer with {summary}",
             explanation, code)


def _decoder(y, memory, params, num_heads, self_mask, memory_mask, eps, return_weights, add_norm,
             attention=multi_head_attention, feed_forward=ffn):
    """The decoder layer with ``add_norm`` for each of its three Add & Norm steps (and
    ``attention``, ``feed_forward`` for its sublayers)."""
    y = as_float(y, "y")
    attended, self_weights = attention(y, y, y, params["self_attn"], num_heads, self_mask)
    h1 = add_norm(y, attended, params["norm1"], eps)
    crossed, cross_weights = attention(h1, memory, memory, params["cross_attn"], num_heads,
                                       memory_mask)
    h2 = add_norm(h1, crossed, params["norm2"], eps)
    out = add_norm(h2, feed_forward(h2, **params["ffn"]), params["norm3"], eps)
    if return_weights:
        return out, {"self_attn": self_weights, "cross_attn": cross_weights}
    return out


layer_twins("no_residual", layer_norm, False,
            "no residual connections: LayerNorm(Sublayer(x)) instead of LayerNorm(x + Sublayer(x))",
            "Add & Norm adds the sublayer's input back before normalising; the residual path "
            "keeps the token's own information and lets gradients through deep stacks.",
            "h = layer_norm(attn(x))               # should be h = layer_norm(x + attn(x))")
layer_twins("no_layer_norm", None, True,
            "no layer normalisation: x + Sublayer(x) left unnormalised",
            "Post-LN normalises every residual sum, LayerNorm(x + Sublayer(x)), so each token's "
            "features have mean 0 and variance 1 (times γ, plus β) going into the next step.",
            "h = x + attn(x)                        # should be h = layer_norm(x + attn(x))")
layer_twins("norm_over_tokens", layer_norm_over_tokens, True,
            "its layer norms taken over the tokens (axis -2) instead of each token's features",
            "LayerNorm normalises each token's d_model features (axis=-1); statistics over the "
            "sequence mix the tokens and depend on the sentence's length.",
            "mu = h.mean(axis=-2, keepdims=True)    # should be axis=-1")
layer_twins("norm_unbiased_std", layer_norm_unbiased_std, True,
            "its layer norms dividing by the unbiased std + ε (Annotated-Transformer style)",
            "nn.LayerNorm divides by √(σ² + ε) with the biased variance (÷D); the unbiased std "
            "(÷(D−1)) shrinks every normalised value by √((D−1)/D).",
            "(h - mu) / (h.std(-1, ddof=1) + eps)   # should be (h - mu) / np.sqrt(h.var(-1) + eps)")


def _decoder_no_causal_mask(y, memory, params, num_heads, self_mask=None, memory_mask=None,
                            eps=1e-5, return_weights=False):
    return _decoder(y, memory, params, num_heads, None, memory_mask, eps, return_weights,
                    _post_ln(layer_norm, True))


add_twin("decoder_layer_no_causal_mask", "decoder_layer", _decoder_no_causal_mask,
         "a decoder layer whose masked self-attention has no causal mask (each position sees the future)",
         "The decoder's self-attention must hide the later target tokens (causal_mask(T)): "
         "without the mask every position also sees the words after it, including the one it "
         "has to predict. The last position has no later words, so only the earlier rows show "
         "the mistake.",
         "self_attn(y, y, y)                     # should be self_attn(y, y, y, mask=causal_mask(T))")


# --- encoder and decoder layers: a sublayer computed wrong ----------------------------------

def sublayer_twins(words: str, attention: Callable, feed_forward: Callable, summary: str,
                   explanation: str, code: str):
    """Register the encoder- and the decoder-layer twin (``encoder_layer_<words>``,
    ``decoder_layer_<words>``) whose every attention sublayer is ``attention`` and whose FFN
    is ``feed_forward`` (post-LN Add & Norm done right): the layer a student builds from a
    wrong multi-head attention or FFN."""
    add_norm = _post_ln(layer_norm, True)

    def encoder(x, params, num_heads, mask=None, eps=1e-5, return_weights=False):
        x = as_float(x, "x")
        attended, weights = attention(x, x, x, params["self_attn"], num_heads, mask)
        h = add_norm(x, attended, params["norm1"], eps)
        out = add_norm(h, feed_forward(h, **params["ffn"]), params["norm2"], eps)
        return (out, {"self_attn": weights}) if return_weights else out

    def decoder(y, memory, params, num_heads, self_mask=None, memory_mask=None, eps=1e-5,
                return_weights=False):
        return _decoder(y, memory, params, num_heads, self_mask, memory_mask, eps,
                        return_weights, add_norm, attention, feed_forward)

    add_twin(f"encoder_layer_{words}", "encoder_layer", encoder, f"an encoder layer with {summary}",
             explanation, code)
    add_twin(f"decoder_layer_{words}", "decoder_layer", decoder, f"a decoder layer with {summary}",
             explanation, code)


def _ffn_no_relu(x, W1, b1, W2, b2):
    return linear(linear(x, W1, b1), W2, b2)


def _mha_one_head(query, key, value, params, num_heads, mask=None):
    return multi_head_attention(query, key, value, params, 1, mask)


def _mha_no_w_o(query, key, value, params, num_heads, mask=None):
    d_k = np.shape(params["W_Q"])[1] // num_heads
    return mha_with_scale(query, key, value, params, num_heads, mask, 1.0 / np.sqrt(d_k))


def _mha_scale_d_model(query, key, value, params, num_heads, mask=None):
    concat, weights = mha_with_scale(query, key, value, params, num_heads, mask,
                                      1.0 / np.sqrt(np.shape(query)[-1]))
    return linear(concat, params["W_O"], params.get("b_O")), weights


sublayer_twins("ffn_no_relu", multi_head_attention, _ffn_no_relu,
               "an FFN without its ReLU: (hW₁ + b₁)W₂ + b₂",
               "FFN(h) = max(0, hW₁ + b₁)W₂ + b₂: without the ReLU the two linear maps collapse "
               "into one, and the sublayer adds no non-linearity.",
               "(h @ W1 + b1) @ W2 + b2               # should be np.maximum(0, h @ W1 + b1) @ W2 + b2")
sublayer_twins("one_head", _mha_one_head, ffn,
               "one attention head of width d_model instead of h heads of d_model/h",
               "Multi-head attention splits the d_model columns of Q, K, V into h heads of "
               "d_k = d_model/h, each with its own softmax (scaled by 1/√d_k); one head over all "
               "columns mixes what the heads would attend to separately.",
               "attention(Q, K, V)                     # should be Concat(head_1, …, head_h) W_O")
sublayer_twins("no_output_projection", _mha_no_w_o, ffn,
               "its attention sublayers returning Concat(heads) without W_O",
               "MultiHead = Concat(head_1, …, head_h) W_O: the output projection mixes the heads' "
               "outputs before the residual sum.",
               "attended = concat                      # should be concat @ W_O")
sublayer_twins("scale_by_d_model", _mha_scale_d_model, ffn,
               "its attention scores scaled by 1/√d_model instead of 1/√d_k",
               "Each head attends in its own d_k = d_model/h dimensions, so its scores are "
               "divided by √d_k; √d_model is too large by √h.",
               "scores / np.sqrt(d_model)              # should be / np.sqrt(d_model // num_heads)")

sublayer_twins("interleaved_heads", mha_interleaved_heads, ffn,
               "its attention heads built from interleaved columns (head i = columns i, i+h, …)",
               "Head i takes the block of columns i·d_k … (i+1)·d_k − 1 of Q, K and V (with "
               "d_model = 4 and 2 heads: columns 0–1 and 2–3), not every h-th column (0, 2 and 1, 3).",
               "q[:, i::h]                             # should be q[:, i*d_k:(i+1)*d_k]")


# --- reading the attention weights ------------------------------------------------------------

def _mha_weights_by_column(cache):
    return np.swapaxes(mha_weights(cache), -1, -2)


add_twin("mha_weights_read_by_column", "mha_weights", _mha_weights_by_column,
         "the attention-weight matrix read by columns (row = key) instead of by rows (row = query)",
         "Row i of a head's attention-weight matrix holds query i's weights over the keys, so the "
         "key that query i attends to most is the largest entry of row i (argmax over the last "
         "axis). The largest entry of column j is something else: the query that attends most "
         "to key j.",
         "A.argmax(axis=0)                       # should be A.argmax(axis=-1)")

# --- log-probabilities ----------------------------------------------------------------------

def _log_softmax_probabilities(x, axis=-1):
    return softmax(x, axis=axis)


add_twin("log_softmax_gives_probabilities", "log_softmax", _log_softmax_probabilities,
         "the probabilities softmax(z) given instead of their logarithms",
         "log softmax(z)_i = z_i − log Σ_j exp(z_j): every value is ≤ 0. The softmax itself "
         "gives the probabilities (between 0 and 1); the log-probabilities are their logarithms.",
         "np.exp(z) / np.exp(z).sum()            # should be z - np.log(np.exp(z).sum())")
