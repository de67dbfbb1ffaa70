"""Plausible mistakes in the BERT families: MLM selection, its loss and its gradient, NSP,
WordPiece, the 80/10/10 questions."""

from __future__ import annotations

import math

import numpy as np

from .mistakes_base import choice_mistake, log_softmax, mistake, softmax

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
