"""Twins of the layers built on attention: multi-head attention, splitting and
merging heads, parameter counts, positional encodings, and the encoder and decoder layers.

As in ``solutions.twins.attention``, families are generated from one definition each (another
scale or mask in multi-head attention; a step of a Transformer layer skipped or done wrong),
and every twin registers in ``solutions.twins.registry.TWINS``.
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from .._shapes import as_float
from ..linear import linear
from .common import bool_mask, mha_with_scale
from .registry import add_twin
from ..attention import scaled_dot_product_attention
from ..multihead import head_mask, head_projection, merge_heads, multi_head_attention
from ..param_counts import mha_param_count

MHA = "multi_head_attention"


# --- multi-head attention: another scale, another mask --------------------------------------

def mha_twin(name: str, scale_of: Callable, mask_of: Callable, summary: str, explanation: str,
             code: str):
    """Register a multi-head twin that scales each head's scores by ``scale_of(d_head, d_model)``
    and uses ``mask_of(mask)``: one definition for the scale and mask mistakes of every head."""
    def function(query, key, value, params, num_heads, mask=None):
        d_head = np.shape(params["W_Q"])[1] // num_heads
        concat, weights = mha_with_scale(query, key, value, params, num_heads,
                                          None if mask is None else mask_of(mask),
                                          scale_of(d_head, np.shape(query)[-1]))
        return linear(concat, params["W_O"], params.get("b_O")), weights
    return add_twin(name, MHA, function, summary, explanation, code)


def _per_head(d_head, d_model):
    return 1.0 / np.sqrt(d_head)


def _same(mask):
    return mask


mha_twin("mha_no_scale", lambda d_head, d_model: 1.0, _same,
         "multi-head attention without the 1/√d_head scale",
         "Each head computes scaled dot-product attention: its scores are divided by √d_head "
         "(the head's own key width) before the softmax. Without it the scores are too large "
         "and each row's weights pile up on one key.",
         "softmax(q @ k.T)                       # should be softmax(q @ k.T / np.sqrt(d_head))")
mha_twin("mha_divide_by_d_head", lambda d_head, d_model: 1.0 / d_head, _same,
         "multi-head scores divided by d_head instead of √d_head",
         "The scale is the inverse standard deviation of q·k, 1/√d_head; dividing by d_head "
         "flattens every head's rows towards uniform.",
         "softmax(q @ k.T / d_head)              # should be / np.sqrt(d_head)")
mha_twin("mha_mask_ignored", _per_head, lambda mask: None,
         "multi-head attention that never applies the mask",
         "The mask must reach every head's scores (broadcast over the head axis) before the "
         "softmax; accepted and unused, it lets padded or future tokens in.",
         "attention(q, k, v)                     # should be attention(q, k, v, mask=mask[:, None])")
def _mha_inverted_mask(query, key, value, params, num_heads, mask=None):
    if mask is None:
        return multi_head_attention(query, key, value, params, num_heads)
    blocked = ~bool_mask(mask)
    out, weights = multi_head_attention(query, key, value, params, num_heads, blocked)
    # The student's softmax of a row that is −inf everywhere: exp(−inf − (−inf)) = NaN, in
    # that query's weights and output (the kit's own softmax gives zeros there instead).
    empty = np.broadcast_to(~blocked.any(axis=-1), np.shape(out)[:-1])
    out = np.where(empty[..., None], np.nan, out)
    weights = np.where(np.expand_dims(empty, -2)[..., None], np.nan, weights)
    return out, weights


add_twin("mha_inverted_mask", MHA, _mha_inverted_mask,
         "multi-head attention with the mask read as True = blocked (nn.MultiheadAttention's attn_mask)",
         "nn.MultiheadAttention's attn_mask and key_padding_mask mean True = blocked; this kit "
         "(and F.scaled_dot_product_attention) mean True = may attend. Mixed up, every head "
         "attends exactly where it must not (and a query that may attend everywhere gets NaN).",
         "np.where(mask, -np.inf, scores)        # should be np.where(mask, scores, -np.inf)")


def _mha_no_biases(query, key, value, params, num_heads, mask=None):
    weights_only = {n: params[n] for n in ("W_Q", "W_K", "W_V", "W_O")}
    return multi_head_attention(query, key, value, weights_only, num_heads, mask)


add_twin("mha_no_biases", MHA, _mha_no_biases,
         "multi-head attention with the biases b_Q, b_K, b_V, b_O left out",
         "Each projection is x @ W + b when the layer has biases (nn.MultiheadAttention's "
         "default): Q = query W_Q + b_Q, …, and out = Concat(heads) W_O + b_O.",
         "q = query @ params[\"W_Q\"]              # should be query @ params[\"W_Q\"] + params[\"b_Q\"]")


def _mha_no_output_bias(query, key, value, params, num_heads, mask=None):
    without = {n: v for n, v in params.items() if n != "b_O"}
    return multi_head_attention(query, key, value, without, num_heads, mask)


add_twin("mha_no_output_bias", MHA, _mha_no_output_bias,
         "multi-head attention with the output bias b_O left out (b_Q, b_K, b_V used)",
         "The output projection has a bias too: out = Concat(heads) W_O + b_O. Without b_O "
         "every output row is off by the same vector, -b_O.",
         "out = concat @ params[\"W_O\"]            # should be concat @ params[\"W_O\"] + params[\"b_O\"]")


def mha_interleaved_heads(query, key, value, params, num_heads, mask=None):
    q, k, v = (_split_interleaved(linear(x, params[f"W_{n}"], params.get(f"b_{n}")), num_heads)
               for x, n in ((query, "Q"), (key, "K"), (value, "V")))
    steps = scaled_dot_product_attention(q, k, v, mask=head_mask(mask), return_steps=True)
    return linear(merge_heads(steps.output), params["W_O"], params.get("b_O")), steps.weights


add_twin("mha_interleaved_heads", MHA, mha_interleaved_heads,
         "each head built from interleaved columns of Q, K, V (head i = columns i, i+h, i+2h, …)",
         "The projection's columns come in contiguous blocks: head i is columns "
         "i·d_k … (i+1)·d_k − 1 of XW_Q, XW_K and XW_V (reshape to (…, L, h, d_k), then swap "
         "L and h), not every h-th column.",
         "q[..., i::h]                          # should be q[..., i*d_k:(i+1)*d_k]")


# --- splitting and merging heads ------------------------------------------------------------

def _split_without_transpose(x, num_heads):
    x = as_float(x, "x")
    *lead, L, d = x.shape
    return x.reshape(*lead, num_heads, L, d // num_heads)


def _split_no_swap(x, num_heads):
    x = as_float(x, "x")
    *lead, L, d = x.shape
    return x.reshape(*lead, L, num_heads, d // num_heads)


def _split_interleaved(x, num_heads):
    x = as_float(x, "x")
    *lead, L, d = x.shape
    return np.moveaxis(x.reshape(*lead, L, d // num_heads, num_heads), -1, -3)


add_twin("split_heads_without_transpose", "split_heads", _split_without_transpose,
         "heads split by reshaping (…, L, h·d_k) straight to (…, h, L, d_k), without the transpose",
         "Head i owns columns i·d_k … (i+1)·d_k − 1 of every token. Reshape to (…, L, h, d_k) "
         "first, then swap L and h; the direct reshape cuts the tokens across heads.",
         "x.reshape(h, L, d_k)                  # should be x.reshape(L, h, d_k).transpose(1, 0, 2)")
add_twin("split_heads_no_swap", "split_heads", _split_no_swap,
         "heads reshaped to (…, L, h, d_k) but the L and h axes never swapped",
         "After the reshape to (…, L, h, d_k) the head axis must come before the tokens, "
         "(…, h, L, d_k), so that each head is an L × d_k matrix.",
         "x.reshape(L, h, d_k)                  # should be x.reshape(L, h, d_k).transpose(1, 0, 2)")
add_twin("split_heads_interleaved_columns", "split_heads", _split_interleaved,
         "heads built from interleaved columns (head i = columns i, i+h, i+2h, …)",
         "The projection's columns come in contiguous blocks: head i is columns "
         "i·d_k … (i+1)·d_k − 1, not every h-th column.",
         "x[:, i::h]                             # should be x[:, i*d_k:(i+1)*d_k]")


def _split_full_width(x, num_heads):
    x = as_float(x, "x")
    *lead, L, d = x.shape
    return np.broadcast_to(x[..., None, :, :], (*lead, num_heads, L, d)).copy()


add_twin("split_heads_full_width", "split_heads", _split_full_width,
         "every head given all d_model features, (…, h, L, d_model), instead of its own d_k = d_model/h",
         "Multi-head attention splits the d_model features among the heads: head i gets the "
         "d_k = d_model/h columns i·d_k … (i+1)·d_k − 1, so h heads cost what one full-width head does.",
         "np.stack([x] * h)                     # should be x.reshape(L, h, d // h).transpose(1, 0, 2)")


def _split_width_times_heads(x, num_heads):
    x = as_float(x, "x")
    *lead, L, d = x.shape
    return np.broadcast_to(np.tile(x, num_heads)[..., None, :, :], (*lead, num_heads, L, d * num_heads)).copy()


add_twin("split_heads_width_times_heads", "split_heads", _split_width_times_heads,
         "a head size of d_model·h instead of d_model/h: multiplied by the number of heads, not divided",
         "The h heads share the d_model features: each head gets d_k = d_model/h of them. "
         "d_model·h would make every head wider than the whole layer.",
         "d_k = d_model * h                      # should be d_k = d_model // h")


def _merge_without_transpose(x):
    x = as_float(x, "x")
    *lead, H, L, d = x.shape
    return x.reshape(*lead, L, H * d)


def _merge_averaged(x):
    return as_float(x, "x").mean(axis=-3)


def _merge_summed(x):
    return as_float(x, "x").sum(axis=-3)


def _merge_on_token_axis(x):
    x = as_float(x, "x")
    *lead, H, L, d = x.shape
    return x.reshape(*lead, H * L, d)


add_twin("merge_heads_without_transpose", "merge_heads", _merge_without_transpose,
         "heads merged by reshaping (…, h, L, d) straight to (…, L, h·d), without the transpose",
         "Concat puts token t's outputs of head 0, head 1, … side by side: transpose back to "
         "(…, L, h, d) first, then reshape. The direct reshape puts several tokens in one row.",
         "heads.reshape(L, h * d)               # should be heads.transpose(1, 0, 2).reshape(L, h * d)")
add_twin("merge_heads_averaged", "merge_heads", _merge_averaged,
         "the heads averaged instead of concatenated (each row has d, not h·d, entries)",
         "MultiHead = Concat(head_1, …, head_h) W_O: the heads' outputs are placed side by side, "
         "and W_O learns how to mix them. Averaging throws away what differs between heads.",
         "heads.mean(axis=0)                    # should be np.concatenate(heads, axis=-1)")
add_twin("merge_heads_summed", "merge_heads", _merge_summed,
         "the heads added up instead of concatenated (each row has d, not h·d, entries)",
         "Concat places the heads' outputs side by side, so each head keeps its own columns "
         "and W_O decides how to mix them. Adding them up mixes the heads before W_O and loses "
         "which head said what.",
         "sum(heads)                             # should be np.concatenate(heads, axis=-1)")
add_twin("merge_heads_concatenated_on_token_axis", "merge_heads", _merge_on_token_axis,
         "the heads concatenated along the token axis (np.concatenate's default axis=0)",
         "Concat joins the heads feature by feature, axis=-1: one row per token with h·d "
         "entries. Along axis 0 the heads are stacked as extra tokens.",
         "np.concatenate(heads)                 # should be np.concatenate(heads, axis=-1)")


def _merge_interleaved(x):
    x = as_float(x, "x")
    *lead, H, L, d = x.shape
    return np.moveaxis(x, -3, -1).reshape(*lead, L, d * H)


add_twin("merge_heads_interleaved", "merge_heads", _merge_interleaved,
         "the heads merged feature by feature (head 0's f0, head 1's f0, …, then the f1s): interleaved",
         "Concat puts each token's heads side by side in head order: all d features of head 0, "
         "then all of head 1, …, the inverse of taking head i's columns i·d … (i+1)·d − 1.",
         "heads.transpose(1, 2, 0).reshape(L, -1)  # should be heads.transpose(1, 0, 2).reshape(L, -1)")


# --- one head's block of columns -------------------------------------------------------------

def _head_projection_from_one(W, num_heads, i):
    if i < 1:
        raise ValueError("head_projection: counting heads from 1, there is no head 0")
    return head_projection(W, num_heads, i - 1)


def _head_projection_full_width(W, num_heads, i):
    head_projection(W, num_heads, i)              # the same checks
    return as_float(W, "W")


add_twin("head_projection_numbered_from_one", "head_projection", _head_projection_from_one,
         "heads counted from 1: head i taken as the i-th block of columns (columns of head i − 1)",
         "Heads are numbered from 0 here: head i owns columns i·d_k … (i+1)·d_k − 1, so head 1 "
         "is the second block of columns. (The formula's head_1 is head 0.)",
         "W[:, (i - 1) * d_k:i * d_k]            # should be W[:, i * d_k:(i + 1) * d_k]")
add_twin("head_projection_full_width", "head_projection", _head_projection_full_width,
         "head i given every column instead of its own block of d_k = d_model/h columns",
         "Each head owns only its block of d_k = d_model/h columns, i·d_k … (i+1)·d_k − 1; "
         "all the columns together are every head at once.",
         "W                                      # should be W[:, i * d_k:(i + 1) * d_k]")


# --- parameter counts -----------------------------------------------------------------------

def _mha_count_no_output_projection(d_model, num_heads=1, d_k=None, d_v=None, bias=True):
    d_v_ = d_model // num_heads if d_v is None else d_v
    full = mha_param_count(d_model, num_heads, d_k, d_v, bias)
    return full - num_heads * d_v_ * d_model - (d_model if bias else 0)


def _mha_count_per_head(d_model, num_heads=1, d_k=None, d_v=None, bias=True):
    return num_heads * mha_param_count(d_model, 1, None, None, bias)


def _mha_count_no_bias(d_model, num_heads=1, d_k=None, d_v=None, bias=True):
    return mha_param_count(d_model, num_heads, d_k, d_v, bias=False)


add_twin("mha_param_count_no_output_projection", "mha_param_count", _mha_count_no_output_projection,
         "the parameters of W_Q, W_K, W_V only: W_O (and its bias) left out",
         "The output projection W_O (h·d_v × d_model, plus a bias of d_model) belongs to the "
         "layer: 4d² + 4d in all, not 3d² + 3d (without biases 4d², not 3d²).",
         "3 * d * d + 3 * d                      # should be 4 * d * d + 4 * d")
add_twin("mha_param_count_per_head", "mha_param_count", _mha_count_per_head,
         "h times the one-head count, as if every head had its own d_model × d_model W_Q, W_K, W_V, W_O",
         "Each head projects to d_k = d_model/h dimensions, so the h heads together have one "
         "d_model × d_model matrix per projection: 4d² + 4d whatever h is.",
         "h * (4 * d * d + 4 * d)               # should be 4 * d * d + 4 * d")
def _mha_count_full_width_heads(d_model, num_heads=1, d_k=None, d_v=None, bias=True):
    per_projection = d_model * d_model + (d_model if bias else 0)
    return 3 * num_heads * per_projection + per_projection


add_twin("mha_param_count_no_bias", "mha_param_count", _mha_count_no_bias,
         "the weights alone, 4d², with the biases left out",
         "Each of the four projections has a bias vector (3·h·d_k + d = 4d entries in all): "
         "with biases the count is 4d² + 4d.",
         "4 * d * d                              # should be 4 * d * d + 4 * d")
add_twin("mha_param_count_full_width_heads", "mha_param_count", _mha_count_full_width_heads,
         "every head with its own d_model × d_model W_Q, W_K, W_V (3h(d² + d)) and one W_O (d² + d)",
         "Each head projects to d_k = d_model/h columns only: the h heads' W_Q^i together are one "
         "d_model × d_model matrix (likewise W_K, W_V), so the count is 4d² + 4d whatever h is.",
         "3 * h * (d * d + d) + d * d + d       # should be 4 * d * d + 4 * d")


# --- positions -------------------------------------------------------------------------------

def _positional_encoding_omitted(L, d_model):
    return np.zeros((L, d_model))


add_twin("positional_encoding_omitted", "positional_encoding", _positional_encoding_omitted,
         "no positional encoding added (the embeddings alone go into the layer)",
         "Attention is blind to order: without PE(pos) added to each embedding, a permuted "
         "sentence gives permuted but otherwise identical outputs.",
         "x = embed(tokens, E)                  # should be embed(tokens, E) + positional_encoding(L, d)")


def _positional_encoding_one_based(L, d_model):
    pos = np.arange(1, L + 1)[:, None]
    angle = pos / 10000.0 ** (np.arange(0, d_model, 2)[None, :] / d_model)
    pe = np.empty((L, d_model))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


add_twin("positional_encoding_one_based", "positional_encoding", _positional_encoding_one_based,
         "positions counted from 1 in the positional encoding (the first token gets PE(1), not PE(0))",
         "The first token is position 0: its encoding is PE(0) = [sin 0, cos 0, …] = [0, 1, 0, 1, …]. "
         "Counting from 1 gives every token the encoding of the next position.",
         "pos = np.arange(1, L + 1)              # should be np.arange(L)")
