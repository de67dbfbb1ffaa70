"""Plausible mistakes in encoder_decoder_step: each the small Transformer of
``mistakes_transformer`` with one step changed (the embedding scale, the positions, a
residual, the layer norm, the heads, the causal mask), or the wrong row or form read out."""

from __future__ import annotations

import numpy as np

from .mistakes_base import log_softmax, mistake
from .mistakes_transformer import encdec_forward

# --- encoder_decoder_step ----------------------------------------------------------------------

ENCDEC = "encoder_decoder_step"


def _memory(**changes):
    def wrong(g):
        return encdec_forward(g, **changes)[0]
    return wrong


def _cross(**changes):
    def wrong(g):
        return encdec_forward(g, **changes)[1]
    return wrong


def _next(**changes):
    def wrong(g):
        return encdec_forward(g, **changes)[2]
    return wrong


def _register_encdec(part, name, description, accept, wrong):
    wrong.__name__ = name
    wrong.__doc__ = description
    mistake(ENCDEC, part, description, accept)(wrong)


for _part, _name, _description, _accept, _changes in [
    ("memory", "encdec_memory_no_embed_scale", "embeddings not multiplied by √d_model",
     ["embed_no_sqrt_d_model"], {"embed_scale": False}),
    ("memory", "encdec_memory_no_positions", "the positional encoding not added",
     ["positional_encoding_omitted"], {"pe": False}),
    ("memory", "encdec_memory_pe_swapped", "cos on the even columns, sin on the odd ones",
     ["positional_encoding_sin_cos_swapped"], {"pe_swapped": True}),
    ("memory", "encdec_memory_no_residual", "no residual: LayerNorm(Sublayer(x))",
     ["encoder_layer_no_residual"], {"enc_residual": False}),
    ("memory", "encdec_memory_pre_ln", "pre-LN: x + Sublayer(LayerNorm(x))", ["encoder_layer_pre_ln"], {"pre_ln": True}),
    ("memory", "encdec_memory_one_head", "one head of width 4 instead of two of width 2",
     ["encoder_layer_one_head"], {"heads": 1}),
    ("memory", "encdec_memory_ln_over_tokens", "layer norm over the tokens (axis 0)",
     ["layer_norm_over_tokens", "encoder_layer_norm_over_tokens"], {"ln_axis": 0}),
    ("memory", "encdec_memory_ln_unbiased", "layer norm by the unbiased std plus ε",
     ["layer_norm_unbiased_std", "encoder_layer_norm_unbiased_std"], {"ln_unbiased": True}),
    ("memory", "encdec_memory_no_relu", "the FFN without its ReLU", ["encoder_layer_ffn_no_relu"],
     {"relu": False}),
    ("memory", "encdec_memory_no_w_o", "the heads concatenated without W_O",
     ["mha_no_output_projection", "encoder_layer_no_output_projection"], {"out_proj": False}),
    ("memory", "encdec_memory_scale_d_model", "scores scaled by 1/√d_model instead of 1/√d_k",
     ["mha_scale_by_d_model", "encoder_layer_scale_by_d_model"], {"scale": 0.5}),
]:
    _register_encdec(_part, _name, _description, _accept, _memory(**_changes))

for _part, _name, _description, _accept, _changes in [
    ("cross_weights", "encdec_cross_no_causal_mask", "the decoder's self-attention without the causal mask",
     ["causal_attention_unmasked", "decoder_layer_no_causal_mask"], {"causal": False}),
    ("cross_weights", "encdec_cross_no_residual", "no residuals in the decoder",
     ["decoder_layer_no_residual"], {"dec_residual": False}),
    ("cross_weights", "encdec_cross_no_embed_scale", "embeddings not multiplied by √d_model",
     ["embed_no_sqrt_d_model"], {"embed_scale": False}),
    ("cross_weights", "encdec_cross_no_positions", "no positional encoding",
     ["positional_encoding_omitted"], {"pe": False}),
]:
    _register_encdec(_part, _name, _description, _accept, _cross(**_changes))

for _part, _name, _description, _accept, _changes in [
    ("next_log_probs", "encdec_next_no_residual", "no residuals in the decoder",
     ["decoder_layer_no_residual"], {"dec_residual": False}),
    ("next_log_probs", "encdec_next_no_embed_scale", "embeddings not multiplied by √d_model",
     ["embed_no_sqrt_d_model"], {"embed_scale": False}),
    ("next_log_probs", "encdec_next_one_head", "one head of width 4", [], {"heads": 1}),
]:
    _register_encdec(_part, _name, _description, _accept, _next(**_changes))


@mistake(ENCDEC, "next_log_probs", "the raw logits given, the log-softmax forgotten",
         accept=["log_softmax_without_normaliser"])
def encdec_next_raw_logits(g):
    return encdec_forward(g)[3][-1]


@mistake(ENCDEC, "next_log_probs", "the probabilities given instead of their logarithms", accept=["log_softmax_gives_probabilities"])
def encdec_next_probabilities(g):
    return np.exp(encdec_forward(g)[2])


@mistake(ENCDEC, "next_log_probs", "the first position's log-probabilities instead of the last's")
def encdec_next_first_position(g):
    return log_softmax(encdec_forward(g)[3][0])


@mistake(ENCDEC, "next_token", "the next token read at position 0")
def encdec_token_first_position(g):
    return int(np.argmax(encdec_forward(g)[3][0]))


@mistake(ENCDEC, "next_token", "the next token of a decoder without residuals",
         accept=["decoder_layer_no_residual"])
def encdec_token_no_residual(g):
    return int(np.argmax(encdec_forward(g, dec_residual=False)[2]))
