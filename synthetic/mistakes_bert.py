"""Plausible mistakes in the BERT families (MLM selection and loss, NSP, WordPiece, the 80/10/10
questions) and in the mini encoder-decoder step: each computed with a small Transformer
written here from the prompt's equations, with one step changed."""

from __future__ import annotations

import math

import numpy as np

from .mistakes_base import (attention, choice_mistake, layer_norm, log_softmax, lower, mistake,
                            sinusoid, softmax)

# --- encoder_decoder_step ----------------------------------------------------------------------

ENCDEC = "encoder_decoder_step"
CORRECT = {"embed_scale": True, "pe": True, "pe_swapped": False, "enc_residual": True,
           "dec_residual": True, "causal": True, "pre_ln": False, "ln_axis": -1,
           "ln_unbiased": False, "relu": True, "heads": 2, "out_proj": True, "scale": None,
           "pe_from": 0, "pe_halves": False, "pe_exponent_j": False, "strided": False,
           "dec_heads": None}


def _norm(x, flags):
    if flags["ln_unbiased"]:       # the Annotated Transformer's (x − μ)/(std + ε), std with ddof=1
        mu = x.mean(axis=-1, keepdims=True)
        return (x - mu) / (x.std(axis=-1, ddof=1, keepdims=True) + 1e-5)
    return layer_norm(x, axis=flags["ln_axis"])


def _mha(xq, xkv, W, flags, allowed=None):
    """(output, weights per head) of Concat(head_1, head_2) W_O on column blocks."""
    q, k, v = xq @ W[0], xkv @ W[1], xkv @ W[2]
    h = flags["heads"]
    d = q.shape[1] // h
    scale = flags["scale"] if flags["scale"] is not None else 1 / np.sqrt(d)
    cols = [slice(i, None, h) if flags["strided"] else slice(i * d, (i + 1) * d) for i in range(h)]
    heads = [attention(q[:, c], k[:, c], v[:, c], scale, allowed) for c in cols]
    concat = np.concatenate([out for _, out in heads], axis=1)
    return (concat @ W[3] if flags["out_proj"] else concat), np.stack([w for w, _ in heads])


def _ffn(x, W1, W2, flags):
    hidden = x @ W1
    return (np.maximum(hidden, 0) if flags["relu"] else hidden) @ W2


def _sublayer(x, f, flags, residual):
    """Post-LN LayerNorm(x + f(x)), pre-LN x + f(LayerNorm(x)); without the residual LN(f(x))."""
    if flags["pre_ln"]:
        return x + f(_norm(x, flags))
    return _norm(x + f(x) if residual else f(x), flags)


def _positions(L, flags):
    """The sinusoidal encoding as the student writes it (counted from ``pe_from``; sin and
    cos in two halves; the column index j as the exponent)."""
    if not (flags["pe_from"] or flags["pe_halves"] or flags["pe_exponent_j"]):
        return sinusoid(L, 4, flags["pe_swapped"])
    pos = np.arange(flags["pe_from"], flags["pe_from"] + L)[:, None]
    if flags["pe_exponent_j"]:
        angle = pos / 10000.0 ** (np.arange(4)[None, :] / 4)
        pe = np.sin(angle)
        pe[:, 1::2] = np.cos(angle[:, 1::2])
        return pe
    angle = pos / 10000.0 ** (np.arange(0, 4, 2)[None, :] / 4)
    if flags["pe_halves"]:
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    pe = np.zeros((L, 4))
    pe[:, 0::2], pe[:, 1::2] = np.sin(angle), np.cos(angle)
    return pe


def _inputs(g, tokens, table, flags):
    x = table[np.asarray(tokens, dtype=int)] * (2.0 if flags["embed_scale"] else 1.0)
    return x + _positions(len(tokens), flags) if flags["pe"] else x


def _encode(g, flags):
    x = _inputs(g, g.src, g.E_src, flags)
    W = (g.enc_W_Q, g.enc_W_K, g.enc_W_V, g.enc_W_O)
    h = _sublayer(x, lambda z: _mha(z, z, W, flags)[0], flags, flags["enc_residual"])
    return _sublayer(h, lambda z: _ffn(z, g.enc_W1, g.enc_W2, flags), flags, flags["enc_residual"])


def _encdec(g, **changes):
    """(memory, cross weights (2, T, S), log-probabilities of the next token) with ``changes``."""
    flags = {**CORRECT, **changes}
    memory = _encode(g, flags)
    y = _inputs(g, g.tgt, g.E_tgt, flags)
    T = len(y)
    allowed = lower(T) if flags["causal"] else None
    W_self = (g.self_W_Q, g.self_W_K, g.self_W_V, g.self_W_O)
    W_cross = (g.cross_W_Q, g.cross_W_K, g.cross_W_V, g.cross_W_O)
    res = flags["dec_residual"]
    if flags["dec_heads"] is not None:            # the encoder right, the decoder's heads not
        flags = {**flags, "heads": flags["dec_heads"]}
    h1 = _sublayer(y, lambda z: _mha(z, z, W_self, flags, allowed)[0], flags, res)
    q_in = _norm(h1, flags) if flags["pre_ln"] else h1
    cross_weights = _mha(q_in, memory, W_cross, flags)[1]
    h2 = _sublayer(h1, lambda z: _mha(z, memory, W_cross, flags)[0], flags, res)
    out = _sublayer(h2, lambda z: _ffn(z, g.dec_W1, g.dec_W2, flags), flags, res)
    logits = out @ g.E_tgt.T
    return memory, cross_weights, log_softmax(logits[-1]), logits


def _memory(**changes):
    def wrong(g):
        return _encdec(g, **changes)[0]
    return wrong


def _cross(**changes):
    def wrong(g):
        return _encdec(g, **changes)[1]
    return wrong


def _next(**changes):
    def wrong(g):
        return _encdec(g, **changes)[2]
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
    return _encdec(g)[3][-1]


@mistake(ENCDEC, "next_log_probs", "the probabilities given instead of their logarithms", accept=["log_softmax_gives_probabilities"])
def encdec_next_probabilities(g):
    return np.exp(_encdec(g)[2])


@mistake(ENCDEC, "next_log_probs", "the first position's log-probabilities instead of the last's")
def encdec_next_first_position(g):
    return log_softmax(_encdec(g)[3][0])


@mistake(ENCDEC, "next_token", "the next token read at position 0")
def encdec_token_first_position(g):
    return int(np.argmax(_encdec(g)[3][0]))


@mistake(ENCDEC, "next_token", "the next token of a decoder without residuals",
         accept=["decoder_layer_no_residual"])
def encdec_token_no_residual(g):
    return int(np.argmax(_encdec(g, dec_residual=False)[2]))


# --- mlm_selection_loss ------------------------------------------------------------------------

MLM = "mlm_selection_loss"


def _ce(g, labels=None):
    labels = np.asarray(g.tokens if labels is None else labels, dtype=int)
    return -log_softmax(g.logits)[np.arange(len(labels)), labels]


def _sel(g):
    return np.asarray(g.selected).astype(bool)


def _long(g):
    return g.number(r"\$T = (\d+)\$ tokens", "n_selected")


@mistake(MLM, "n_selected", "15 % of the word pieces only (the specials left out of T)",
         accept=["mlm_num_selected_without_specials", "mlm_num_selected_truncated"])
def mlm_count_without_specials(g):
    return max(1, round(0.15 * (_long(g) - 3)))


@mistake(MLM, "n_selected", "15 % of T truncated instead of rounded",
         accept=["mlm_num_selected_truncated", "mlm_num_selected_without_specials"])
def mlm_count_truncated(g):
    return max(1, math.floor(0.15 * _long(g)))


@mistake(MLM, "n_selected", "every word piece selected", accept=["mlm_num_selected_every_token", "mlm_select_every_token"])
def mlm_count_every_piece(g):
    return _long(g) - 3


@mistake(MLM, "n_selected", "only the [MASK]ed 80 % of the 15 % counted",
         accept=["mlm_num_selected_masked_only", "mlm_select_only_masked"])
def mlm_count_masked_only(g):
    return round(0.8 * 0.15 * _long(g))


@mistake(MLM, "selected_ce", "the cross-entropy against the corrupted input as the label", accept=["mlm_select_labels_from_inputs"])
def mlm_ce_against_input(g):
    return _ce(g, g.inputs)[_sel(g)]


@mistake(MLM, "selected_ce", "−z_i(x_i): the logit, not the log-probability",
         accept=["log_softmax_without_normaliser"])
def mlm_ce_logit_only(g):
    return -np.asarray(g.logits)[np.arange(len(g.tokens)), np.asarray(g.tokens, dtype=int)][_sel(g)]


@mistake(MLM, "selected_ce", "log base 2 instead of the natural log", accept=["log_softmax_base_2"])
def mlm_ce_bits(g):
    return _ce(g)[_sel(g)] / np.log(2)


@mistake(MLM, "mlm_loss", "the mean over every position", accept=["mlm_loss_every_position"])
def mlm_loss_all_positions(g):
    return float(_ce(g).mean())


@mistake(MLM, "mlm_loss", "only the positions that show [MASK] (not the random or unchanged ones)",
         accept=["mlm_select_only_masked"])
def mlm_loss_masked_only(g):
    shown = _sel(g) & (np.asarray(g.inputs) == 3)
    return float(_ce(g)[shown].mean()) if shown.any() else None


@mistake(MLM, "mlm_loss", "the loss against the corrupted input as the label", accept=["mlm_select_labels_from_inputs"])
def mlm_loss_against_input(g):
    return float(_ce(g, g.inputs)[_sel(g)].mean())


@mistake(MLM, "mlm_loss", "the sum over the selected positions instead of the mean",
         accept=["mlm_loss_summed"])
def mlm_loss_sum(g):
    return float(_ce(g)[_sel(g)].sum())


@mistake(MLM, "mlm_loss", "the selected positions' sum divided by T", accept=["mlm_loss_divided_by_all_tokens"])
def mlm_loss_over_T(g):
    return float(_ce(g)[_sel(g)].sum() / len(g.tokens))


def _extra(g):
    return g.number(r"position (\d+) \(", "unchanged_in_loss")


@mistake(MLM, "unchanged_in_loss", "the loss unchanged: an unchanged token thought not to count")
def mlm_extra_ignored(g):
    return float(_ce(g)[_sel(g)].mean())


@mistake(MLM, "unchanged_in_loss", "the extra position's CE added but the old count kept")
def mlm_extra_old_count(g):
    return float((_ce(g)[_sel(g)].sum() + _ce(g)[_extra(g)]) / _sel(g).sum())


# --- nsp_loss ----------------------------------------------------------------------------------

NSP = "nsp_loss"


def _nsp_logits(g, pooler=True, tanh=True, biases=True):
    x = g.C
    if pooler:
        x = x @ g.W_pool + (g.b_pool if biases else 0)
        x = np.tanh(x) if tanh else x
    return x @ g.W_cls + (g.b_cls if biases else 0)


def _nsp_ce(g, labels=None, z=None):
    z = _nsp_logits(g) if z is None else z
    labels = np.asarray(g.labels if labels is None else labels, dtype=int)
    return -log_softmax(z)[np.arange(len(labels)), labels]


@mistake(NSP, "logits", "the pooler skipped: C W_cls + b_cls",
         accept=["nsp_head_no_pooler"])
def nsp_logits_no_pooler(g):
    return _nsp_logits(g, pooler=False)


@mistake(NSP, "logits", "the pooler without its tanh",
         accept=["nsp_head_pooler_no_tanh"])
def nsp_logits_no_tanh(g):
    return _nsp_logits(g, tanh=False)


@mistake(NSP, "logits", "the biases forgotten", accept=["nsp_head_no_biases"])
def nsp_logits_no_biases(g):
    return _nsp_logits(g, biases=False)


@mistake(NSP, "probabilities", "a sigmoid of each logit instead of the softmax of the pair", accept=["softmax_two_classes_as_sigmoids"])
def nsp_probabilities_sigmoid(g):
    return 1 / (1 + np.exp(-_nsp_logits(g)))


@mistake(NSP, "probabilities", "the softmax over the batch (each column sums to 1)",
         accept=["softmax_axis_0"])
def nsp_probabilities_over_batch(g):
    return softmax(_nsp_logits(g), axis=0)


@mistake(NSP, "per_example_loss", "the labels swapped: −log p(1 − y)",
         accept=["nsp_loss_labels_swapped"])
def nsp_ce_labels_swapped(g):
    return _nsp_ce(g, 1 - np.asarray(g.labels, dtype=int))


@mistake(NSP, "per_example_loss", "−log p(IsNext) for every pair, the labels ignored", accept=["nsp_loss_always_isnext"])
def nsp_ce_always_isnext(g):
    return _nsp_ce(g, np.zeros(len(g.labels), dtype=int))


@mistake(NSP, "per_example_loss", "log p(y) without the minus sign", accept=["nsp_loss_sign_dropped"])
def nsp_ce_sign(g):
    return -_nsp_ce(g)


@mistake(NSP, "nsp_loss", "the sum instead of the mean",
         accept=["nsp_loss_summed"])
def nsp_loss_sum(g):
    return float(_nsp_ce(g).sum())


@mistake(NSP, "nsp_loss", "the mean with the labels swapped",
         accept=["nsp_loss_labels_swapped"])
def nsp_loss_labels_swapped(g):
    return float(_nsp_ce(g, 1 - np.asarray(g.labels, dtype=int)).mean())


@mistake(NSP, "nsp_loss", "the mean loss of a classifier without the pooler",
         accept=["nsp_head_no_pooler"])
def nsp_loss_no_pooler(g):
    return float(_nsp_ce(g, z=_nsp_logits(g, pooler=False)).mean())


# --- wordpiece_to_mlm ---------------------------------------------------------------------------

WP = "wordpiece_to_mlm"


def _pieces(word, vocab, prefix=True, longest=True, prefix_first=False):
    """Greedy WordPiece of one word; ``longest``: longest match first, else shortest."""
    out, start = [], 0
    while start < len(word):
        ends = range(len(word), start, -1) if longest else range(start + 1, len(word) + 1)
        for end in ends:
            piece = word[start:end]
            if (start > 0 and prefix) or prefix_first:
                piece = "##" + piece
            if piece in vocab:
                break
        else:
            return ["[UNK]"]
        out.append(piece)
        start = end
    return out


def _tokens(g, **how):
    return [p for w in g.words for p in _pieces(w, set(g.vocab), **how)]


@mistake(WP, "tokens", "the continuation pieces looked up without \"##\"", accept=["wordpiece_tokenize_no_prefix"])
def wp_tokens_no_prefix(g):
    return _tokens(g, prefix=False)


@mistake(WP, "tokens", "the shortest match taken first", accept=["wordpiece_tokenize_shortest_first"])
def wp_tokens_shortest(g):
    return _tokens(g, longest=False)


@mistake(WP, "tokens", "every word kept whole (or [UNK] when it is not in the vocabulary)",
         accept=["wordpiece_tokenize_no_split"])
def wp_tokens_whole_words(g):
    return [w if w in g.vocab else "[UNK]" for w in g.words]


@mistake(WP, "tokens", "\"##\" written on the first piece of a word too",
         accept=["wordpiece_tokenize_prefix_on_first"])
def wp_tokens_prefix_everywhere(g):
    return _tokens(g, prefix_first=True)


def _ids(g, specials=True):
    ids = [list(g.vocab).index(p) for p in _tokens(g)]
    return [2] + ids + [3] if specials else ids


@mistake(WP, "ids", "the ids without [CLS] and [SEP]", accept=["bert_input_tokens_no_specials"])
def wp_ids_no_specials(g):
    return _ids(g, specials=False)


@mistake(WP, "ids", "ids counted from 1", accept=["token_ids_from_one"])
def wp_ids_from_one(g):
    return [i + 1 for i in _ids(g)]


@mistake(WP, "n_selected", "15 % of the word pieces only, [CLS] and [SEP] left out of T")
def wp_selected_pieces_only(g):
    return max(1, round(0.15 * len(_tokens(g))))


@mistake(WP, "n_selected", "0.15 · T not rounded", accept=["mlm_num_selected_unrounded"])
def wp_selected_unrounded(g):
    return 0.15 * (len(_tokens(g)) + 2)


@mistake(WP, "n_selected", "15 % of the words instead of the pieces, rounded up")
def wp_selected_words(g):
    return max(1, math.ceil(0.15 * len(g.words)))


@mistake(WP, "logits_shape", "[n, V]: the specials' rows left out", accept=["bert_input_tokens_no_specials"])
def wp_shape_no_specials(g):
    return [len(_tokens(g)), len(g.vocab)]


@mistake(WP, "logits_shape", "[T, d_model]: the hidden size instead of the vocabulary", accept=["mlm_head_output_shape_hidden"])
def wp_shape_hidden(g):
    return [len(_tokens(g)) + 2, int(g.d_model)]


@mistake(WP, "logits_shape", "[V, T]: transposed", accept=["mlm_head_output_shape_transposed"])
def wp_shape_transposed(g):
    return [len(g.vocab), len(_tokens(g)) + 2]


# --- mlm_8010_choice ---------------------------------------------------------------------------

M8010 = "mlm_8010_choice"


@choice_mistake(M8010, "counts", "no selection step: the 80/10/10 draw on every token",
                accept=["mlm_select_every_token"])
def mlm8010_every_token(g):
    return g.letter("counts", "no selection step")


@choice_mistake(M8010, "why_selected_only", "the selected-only loss thought to be for speed")
def mlm8010_for_speed(g):
    return g.letter("why_selected_only", "Only for speed")


@choice_mistake(M8010, "why_no_causal_mask", "BERT thought to use a causal mask")
def mlm8010_causal(g):
    return g.letter("why_no_causal_mask", "does use a causal mask")


# --- mlm_selection_loss: the gradient into the logits ---------------------------------------

def _mlm_grad_parts(g):
    selected = np.asarray(g.selected, dtype=bool)
    first = int(np.flatnonzero(selected)[0])
    z = np.asarray(g.logits, dtype=float)[first]
    p = np.exp(z - z.max())
    p /= p.sum()
    onehot = np.eye(len(z))[int(np.asarray(g.tokens)[first])]
    return p, onehot, int(selected.sum()), len(selected)


@mistake(MLM, "dlogits_first", "softmax − onehot not divided by the n selected positions (the sum's gradient)",
         accept=["softmax_cross_entropy_backward_not_averaged"])
def mlm_grad_not_averaged(g):
    p, onehot, n, _ = _mlm_grad_parts(g)
    return p - onehot


@mistake(MLM, "dlogits_first", "onehot − softmax: the sign of the gradient flipped", accept=["softmax_cross_entropy_backward_sign_flipped"])
def mlm_grad_sign(g):
    p, onehot, n, _ = _mlm_grad_parts(g)
    return (onehot - p) / n


@mistake(MLM, "dlogits_first", "the softmax alone, the target's −1 forgotten", accept=["softmax_cross_entropy_backward_no_onehot"])
def mlm_grad_no_onehot(g):
    p, onehot, n, _ = _mlm_grad_parts(g)
    return p / n


@mistake(MLM, "dlogits_first", "divided by all T positions instead of the n selected", accept=["softmax_cross_entropy_backward_over_all_rows"])
def mlm_grad_over_all_positions(g):
    p, onehot, n, T = _mlm_grad_parts(g)
    return (p - onehot) / T
