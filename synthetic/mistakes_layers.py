"""More of the corpus's plausible mistakes (see synthetic.mistakes): layers.

Issue 36's held-out findings on the layer templates (encoder_decoder_step's new input parts,
multihead_perspectives, multihead_shapes, implement_multihead_attention): positions counted
from 1, no causal mask, interleaved head columns, the output bias forgotten, a head size of
d_model·h, the heads averaged. Plain NumPy from the lecture's equations, like the rest of
the corpus (the encoder-decoder model is ``mistakes_transformer``'s).
"""

from __future__ import annotations

import numpy as np  # noqa: F401

from .mistakes_base import Givens, code_mistake, lower, mistake, softmax  # noqa: F401
from .mistakes_encoder_decoder import ENCDEC
from .mistakes_implement import MHA as IMPLEMENT_MHA, mha_with_flags
from .mistakes_transformer import CORRECT, embedded_inputs, encdec_forward, feed_forward, multihead, sublayer

PERSP = "multihead_perspectives"
SHAPES = "multihead_shapes"


# --- encoder_decoder_step: the inputs X and Y ----------------------------------------------

def _source(**changes):
    def wrong(g):
        return embedded_inputs(g, g.src, g.E_src, {**CORRECT, **changes})
    return wrong


def _target(**changes):
    def wrong(g):
        return embedded_inputs(g, g.tgt, g.E_tgt, {**CORRECT, **changes})
    return wrong


def _self_weights(**changes):
    """The decoder's masked self-attention weights (2, T, T) with ``changes``."""
    def wrong(g):
        flags = {**CORRECT, **changes}
        y = embedded_inputs(g, g.tgt, g.E_tgt, {**CORRECT})
        T = len(y)
        allowed = (np.triu(np.ones((T, T), dtype=bool)) if flags.get("upper")
                   else lower(T) if flags["causal"] else None)
        W = (g.self_W_Q, g.self_W_K, g.self_W_V, g.self_W_O)
        return multihead(y, y, W, flags, allowed)[1]
    return wrong


def _register(part, name, description, accept, wrong):
    wrong.__name__ = name
    wrong.__doc__ = description
    mistake(ENCDEC, part, description, accept)(wrong)


_INPUT_MISTAKES = [
    ("no_positions", "the positional encoding not added", ["positional_encoding_omitted"], {"pe": False}),
    ("pe_from_one", "positions counted from 1 (the first token gets PE(1))",
     ["positional_encoding_one_based"], {"pe_from": 1}),
    ("no_embed_scale", "the embeddings not multiplied by √d_model = 2", ["embed_no_sqrt_d_model"],
     {"embed_scale": False}),
    ("pe_swapped", "cos on the even columns, sin on the odd ones", ["positional_encoding_sin_cos_swapped"],
     {"pe_swapped": True}),
    ("pe_halves", "the sines in columns 0–1 and the cosines in 2–3 instead of interleaved",
     ["positional_encoding_concatenated"], {"pe_halves": True}),
    ("pe_exponent_j", "the column index j as the exponent, 10000^(j/4), instead of 2⌊j/2⌋/4",
     ["positional_encoding_exponent_j"], {"pe_exponent_j": True}),
]

for _key, _description, _accept, _changes in _INPUT_MISTAKES:
    _register("X", f"encdec_x_{_key}", f"encoder input: {_description}", _accept, _source(**_changes))
for _key, _description, _accept, _changes in _INPUT_MISTAKES[:4]:
    _register("Y", f"encdec_y_{_key}", f"decoder input: {_description}", _accept, _target(**_changes))

_register("self_weights", "encdec_self_no_causal_mask",
          "the decoder's self-attention without the causal mask (every position sees the whole prefix)",
          ["decoder_layer_no_causal_mask", "causal_attention_unmasked"], _self_weights(causal=False))
_register("self_weights", "encdec_self_mask_upper",
          "the causal mask built with triu: each position sees itself and the later ones",
          ["causal_mask_triu"], _self_weights(upper=True))
_register("self_weights", "encdec_self_interleaved_heads",
          "head 1 on columns 0 and 2, head 2 on columns 1 and 3 (interleaved instead of blocks)",
          ["decoder_layer_interleaved_heads"], _self_weights(strided=True))


def _memory(**changes):
    def wrong(g):
        return encdec_forward(g, **changes)[0]
    return wrong


def _next(**changes):
    def wrong(g):
        return encdec_forward(g, **changes)[2]
    return wrong


_register("memory", "encdec_memory_interleaved_heads",
          "the encoder's heads on interleaved columns (0, 2 and 1, 3) instead of blocks",
          ["encoder_layer_interleaved_heads"], _memory(strided=True))
_register("next_log_probs", "encdec_next_decoder_one_head",
          "the decoder's attention with one head of width 4 (the encoder done right)",
          ["decoder_layer_one_head"], _next(dec_heads=1))
_register("next_log_probs", "encdec_next_decoder_interleaved",
          "the decoder's heads on interleaved columns (the encoder done right)",
          ["decoder_layer_interleaved_heads"], lambda g: _decoder_strided(g)[2])


def _decoder_strided(g):
    """(memory, cross weights, log-probabilities) with the encoder right, the decoder strided."""
    from .mistakes_base import log_softmax
    right = {**CORRECT}
    flags = {**CORRECT, "strided": True}
    memory = encdec_forward(g)[0]
    y = embedded_inputs(g, g.tgt, g.E_tgt, right)
    T = len(y)
    W_self = (g.self_W_Q, g.self_W_K, g.self_W_V, g.self_W_O)
    W_cross = (g.cross_W_Q, g.cross_W_K, g.cross_W_V, g.cross_W_O)
    h1 = sublayer(y, lambda z: multihead(z, z, W_self, flags, lower(T))[0], flags, True)
    cross = multihead(h1, memory, W_cross, flags)[1]
    h2 = sublayer(h1, lambda z: multihead(z, memory, W_cross, flags)[0], flags, True)
    out = sublayer(h2, lambda z: feed_forward(z, g.dec_W1, g.dec_W2, flags), flags, True)
    return memory, cross, log_softmax((out @ g.E_tgt.T)[-1])


_register("cross_weights", "encdec_cross_decoder_interleaved",
          "the decoder's heads on interleaved columns: the cross-attention weights",
          ["decoder_layer_interleaved_heads"], lambda g: _decoder_strided(g)[1])


# --- multihead_perspectives ------------------------------------------------------------------

def _persp_heads(g, columns):
    """(weights, output) per head, head h on ``columns[h]`` of the one-hot projections."""
    out = []
    for cols in columns:
        Q, K, V = g.W_Q[:, cols], g.W_K[:, cols], g.W_V[:, cols]
        A = softmax(Q @ K.T / np.sqrt(2))
        out.append((A, A @ V))
    return out


_BLOCKS = [[0, 1], [2, 3]]


@mistake(PERSP, "weights_0", "head 0 on columns 0 and 2 (every second column) instead of 0–1",
         accept=["split_heads_interleaved_columns", "mha_interleaved_heads"])
def persp_weights_interleaved(g):
    return _persp_heads(g, [[0, 2], [1, 3]])[0][0]


@mistake(PERSP, "weights_0", "head 0's softmax taken down each column (over the queries)",
         accept=["sdpa_softmax_over_queries"])
def persp_weights_softmax_over_queries(g):
    Q, K = g.W_Q[:, 0:2], g.W_K[:, 0:2]
    s = Q @ K.T / np.sqrt(2)
    e = np.exp(s - s.max(axis=0, keepdims=True))
    return e / e.sum(axis=0, keepdims=True)


@mistake(PERSP, "concat", "the two heads' outputs summed instead of placed side by side",
         accept=["merge_heads_summed"])
def persp_concat_summed(g):
    (_, Z0), (_, Z1) = _persp_heads(g, _BLOCKS)
    return Z0 + Z1


@mistake(PERSP, "concat", "the heads merged feature by feature: Z_0's column 0, Z_1's column 0, …",
         accept=["merge_heads_interleaved"])
def persp_concat_interleaved(g):
    (_, Z0), (_, Z1) = _persp_heads(g, _BLOCKS)
    return np.stack([Z0[:, 0], Z1[:, 0], Z0[:, 1], Z1[:, 1]], axis=1)


# --- multihead_shapes --------------------------------------------------------------------------

def _width(g):
    return g.number(r"d_\{\\text\{model\}\} = (\d+)")


def _heads(g):
    return g.number(r"\$h = (\d+)\$ heads")


@mistake(SHAPES, "q_shape", "(B, h, L, d_model · h): the head size multiplied by h, not divided",
         accept=["split_heads_width_times_heads"])
def shapes_q_width_times_heads(g):
    B, L = g.number(r"\$B = (\d+)\$", "q_shape"), g.number(r"\$L = (\d+)\$", "q_shape")
    return [B, _heads(g), L, _width(g) * _heads(g)]


@mistake(SHAPES, "merged", "the heads averaged instead of concatenated: a 3 × 2 matrix",
         accept=["merge_heads_averaged"])
def shapes_merged_averaged(g):
    return g.heads.mean(axis=0)


@mistake(SHAPES, "merged", "np.concatenate(heads) along axis 0: the heads stacked as extra tokens",
         accept=["merge_heads_concatenated_on_token_axis"])
def shapes_merged_token_axis(g):
    return np.concatenate(list(g.heads), axis=0)


@mistake(SHAPES, "head_block", "every head given the whole row of x (no split at all)",
         accept=["split_heads_full_width"])
def shapes_block_full_width(g):
    return g.x


# --- implement_multihead_attention --------------------------------------------------------------

@code_mistake(IMPLEMENT_MHA, "only the output bias b_O forgotten (b_Q, b_K, b_V added)",
              accept=["mha_no_output_bias"])
def mha_no_output_bias(query, key, value, params, num_heads, mask=None):
    without = {n: v for n, v in params.items() if n != "b_O"}
    return mha_with_flags(query, key, value, without, num_heads, mask)
