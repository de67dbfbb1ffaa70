"""Twins of BERT's pre-training objectives: the NSP head and loss, the MLM
selection and loss. Every twin registers in ``solutions.twins.registry.TWINS``."""

from __future__ import annotations

import numpy as np

from ..bert import (MASK, MLMSelection, mlm_head_output_shape, mlm_loss, mlm_num_selected, mlm_select,
                   nsp_loss)
from ..linear import linear
from ..losses import IGNORE_INDEX
from .registry import add_twin, twin
from ..softmax import log_softmax, softmax
from ..tokenization import CONTINUATION, token_ids, tokenize_words, wordpiece_tokenize

# --- the NSP head ----------------------------------------------------------------------------


def _nsp_head_no_pooler(C, W_pool, b_pool, W_cls, b_cls):
    return linear(C, W_cls, b_cls)


def _nsp_head_pooler_no_tanh(C, W_pool, b_pool, W_cls, b_cls):
    return linear(linear(C, W_pool, b_pool), W_cls, b_cls)


add_twin("nsp_head_no_pooler", "nsp_head", _nsp_head_no_pooler,
         "NSP logits C W_cls + b_cls straight from [CLS], without the pooler layer",
         "BERT's classifier reads the *pooled* [CLS] vector, tanh(C W_pool + b_pool); the "
         "pooler is trained with NSP and comes before W_cls.",
         "z = C @ W_cls + b_cls                  # should be np.tanh(C @ W_pool + b_pool) @ W_cls + b_cls")
add_twin("nsp_head_pooler_no_tanh", "nsp_head", _nsp_head_pooler_no_tanh,
         "NSP logits through the pooler's dense layer but without its tanh",
         "The pooler is a dense layer *with* tanh: h = tanh(C W_pool + b_pool). Without the "
         "tanh the two linear layers collapse into one.",
         "h = C @ W_pool + b_pool                # should be np.tanh(C @ W_pool + b_pool)")


# --- the NSP loss ----------------------------------------------------------------------------

def _per_pair(logits, labels):
    """−log p_n(y_n) of every pair (natural log), the terms the NSP mistakes rearrange."""
    logits, labels = np.asarray(logits, dtype=float), np.asarray(labels)
    nsp_loss(logits, labels)                              # the reference's own checks
    return -np.take_along_axis(log_softmax(logits), labels[..., None].astype(int), -1)[..., 0]


def _nsp_loss_labels_swapped(logits, labels):
    return float(_per_pair(logits, 1 - np.asarray(labels)).mean())


def _nsp_loss_summed(logits, labels):
    return float(_per_pair(logits, labels).sum())


def _nsp_loss_base_10(logits, labels):
    return float(_per_pair(logits, labels).mean() / np.log(10.0))


def _nsp_loss_sigmoid_of_one_logit(logits, labels):
    logits, labels = np.asarray(logits, dtype=float), np.asarray(labels)
    nsp_loss(logits, labels)
    p_not_next = 1.0 / (1.0 + np.exp(-logits[..., 1]))
    p_true = np.where(labels == 1, p_not_next, 1.0 - p_not_next)
    return float(-np.log(p_true).mean())


add_twin("nsp_loss_labels_swapped", "nsp_loss", _nsp_loss_labels_swapped,
         "the mean of −log p(the other class): IsNext and NotNext swapped (label 0 read as NotNext)",
         "Google's convention is 0 = IsNext (column 0), 1 = NotNext (column 1). Each pair pays "
         "−log of the probability of its *true* class.",
         "-np.log(p[n, 1 - y[n]])                # should be -np.log(p[n, y[n]])")
add_twin("nsp_loss_summed", "nsp_loss", _nsp_loss_summed,
         "the per-pair losses summed instead of averaged",
         "The batch loss is the mean, Σ_n L_n / B, so that it does not grow with the batch size.",
         "loss = ce.sum()                        # should be ce.mean()")
add_twin("nsp_loss_base_10", "nsp_loss", _nsp_loss_base_10,
         "the mean cross-entropy with log base 10 (a calculator's log key) instead of ln",
         "Cross-entropy uses the natural logarithm: −ln p. log₁₀ gives 2.303 times less.",
         "-np.log10(p[n, y[n]])                  # should be -np.log(p[n, y[n]])")
add_twin("nsp_loss_sigmoid_of_one_logit", "nsp_loss", _nsp_loss_sigmoid_of_one_logit,
         "a binary cross-entropy on σ(z_NotNext) alone, ignoring the IsNext logit",
         "With two logits the probability of NotNext is softmax(z)₁ = σ(z_NotNext − z_IsNext): "
         "it depends on the difference of both logits, not on z_NotNext by itself.",
         "p1 = sigmoid(z[:, 1])                  # should be sigmoid(z[:, 1] - z[:, 0])")


# --- MLM ---------------------------------------------------------------------------------------

def _mlm_loss_summed(logits, tokens, selected):
    return mlm_loss(logits, tokens, selected) * np.count_nonzero(np.asarray(selected))


add_twin("mlm_loss_summed", "mlm_loss", _mlm_loss_summed,
         "the selected positions' cross-entropies summed instead of averaged",
         "L_MLM is a mean over the selected positions, Σ_{i∈M} CE_i / |M|.",
         "loss = ce[selected].sum()              # should be ce[selected].mean()")


def _mlm_select_only_masked(tokens, rng, vocab_size, mask_id, special_ids=(), select_prob=0.15):
    chosen = mlm_select(tokens, rng, vocab_size, mask_id, special_ids, select_prob)
    selected = chosen.actions == MASK
    return MLMSelection(chosen.inputs, selected,
                        np.where(selected, np.asarray(tokens), IGNORE_INDEX), chosen.actions)


add_twin("mlm_select_only_masked", "mlm_select", _mlm_select_only_masked,
         "only the positions replaced by [MASK] counted as selected (the 10% random and 10% "
         "unchanged left out of the loss)",
         "All 15% selected positions are predicted, whatever happened to them: the model must "
         "also fix the random tokens and confirm the unchanged ones, or it learns that a "
         "visible token is always right.",
         "selected = inputs == mask_id           # should be every position chosen for the 80/10/10")


# --- the NSP head and loss, continued --------------------------------------------------------

def _nsp_head_no_biases(C, W_pool, b_pool, W_cls, b_cls):
    return linear(np.tanh(linear(C, W_pool)), W_cls)


add_twin("nsp_head_no_biases", "nsp_head", _nsp_head_no_biases,
         "NSP logits tanh(C W_pool) W_cls: the pooler's and the classifier's biases left out",
         "Both layers of the NSP head are affine, x W + b: the pooler computes "
         "tanh(C W_pool + b_pool) and the classifier adds b_cls to its two logits.",
         "z = np.tanh(C @ W_pool) @ W_cls         # should be np.tanh(C @ W_pool + b_pool) @ W_cls + b_cls")


def _nsp_loss_always_isnext(logits, labels):
    return float(_per_pair(logits, np.zeros_like(np.asarray(labels))).mean())


def _nsp_loss_sign_dropped(logits, labels):
    return float(-_per_pair(logits, labels).mean())


def _nsp_loss_without_normaliser(logits, labels):
    logits, labels = np.asarray(logits, dtype=float), np.asarray(labels)
    nsp_loss(logits, labels)
    return float(-np.take_along_axis(logits, labels[..., None].astype(int), -1).mean())


add_twin("nsp_loss_always_isnext", "nsp_loss", _nsp_loss_always_isnext,
         "−log p(IsNext) for every pair, whatever its label",
         "The loss of pair n is −log p_n(y_n), the probability of its *own* true class: "
         "−log p(NotNext) for the NotNext pairs, −log p(IsNext) for the IsNext ones.",
         "-np.log(p[n, 0])                       # should be -np.log(p[n, y[n]])")
add_twin("nsp_loss_sign_dropped", "nsp_loss", _nsp_loss_sign_dropped,
         "log p(y) without the minus sign (a negative loss)",
         "Cross-entropy is −log p(y): a probability's logarithm is ≤ 0, so the minus makes the "
         "loss positive, 0 only for a certain, correct prediction.",
         "np.log(p[n, y[n]])                     # should be -np.log(p[n, y[n]])")
add_twin("nsp_loss_without_normaliser", "nsp_loss", _nsp_loss_without_normaliser,
         "−z_y, the true class's logit, taken as the loss without subtracting log Σ exp(z)",
         "log p(y) = z_y − log(e^{z_IsNext} + e^{z_NotNext}): the log-sum-exp term turns the logit "
         "into a log-probability. Without it the 'loss' −z_y can be negative.",
         "-z[n, y[n]]                            # should be -(z[n, y[n]] - np.log(np.exp(z[n]).sum()))")


@twin("softmax",
      "with two classes, a sigmoid of each logit, 1/(1 + e^(−z)), instead of the softmax of the pair",
      "A softmax couples the two logits: p(NotNext) = e^{z_1} / (e^{z_0} + e^{z_1}) = "
      "σ(z_1 − z_0), a sigmoid of their *difference*, so each row sums to 1. Squashing each logit "
      "by itself with σ gives two numbers that do not add up to 1.",
      "p = 1 / (1 + np.exp(-z))               # should be np.exp(z) / np.exp(z).sum(-1, keepdims=True)")
def softmax_two_classes_as_sigmoids(x, axis=-1):
    p = softmax(x, axis=axis)
    x = np.asarray(x, dtype=float)
    if x.shape[axis] != 2:
        return p                # the binary-classification habit has nothing to act on
    return 1.0 / (1.0 + np.exp(-x))


# --- MLM: the label and the log ----------------------------------------------------------------

def _mlm_select_labels_from_inputs(tokens, rng, vocab_size, mask_id, special_ids=(), select_prob=0.15):
    chosen = mlm_select(tokens, rng, vocab_size, mask_id, special_ids, select_prob)
    return MLMSelection(chosen.inputs, chosen.selected,
                        np.where(chosen.selected, chosen.inputs, IGNORE_INDEX), chosen.actions)


add_twin("mlm_select_labels_from_inputs", "mlm_select", _mlm_select_labels_from_inputs,
         "the corrupted input ([MASK], the random id) taken as the label of a selected position",
         "MLM predicts the *original* token x_i at each selected position; the input there is "
         "[MASK], a random id or x_i itself. The label must come from the original sequence, "
         "or the model is trained to predict [MASK].",
         "labels = np.where(selected, inputs, -100)  # should be np.where(selected, tokens, -100)")


@twin("log_softmax",
      "the logarithm taken to base 2 (bits) instead of the natural log",
      "The cross-entropy loss uses the natural logarithm, −ln p (np.log). log₂ p = ln p / ln 2, "
      "so every loss comes out 1.44 times too large (bits instead of nats).",
      "-np.log2(p[y])                         # should be -np.log(p[y])")
def log_softmax_base_2(x, axis=-1):
    return np.log2(softmax(x, axis=axis))


# --- WordPiece ids ---------------------------------------------------------------------------

def _token_ids_from_one(tokens, vocab):
    return [i + 1 for i in token_ids(tokens, vocab)]


add_twin("token_ids_from_one", "token_ids", _token_ids_from_one,
         "ids counted from 1: every id one too large",
         "A piece's id is its position in the vocabulary list counted from 0, as Python (and the "
         "embedding table's rows) count: vocab[0] has id 0.",
         "ids = [vocab.index(t) + 1 for t in tokens]  # should be [vocab.index(t) for t in tokens]")


# --- the BERT input, the MLM count and the MLM logits' shape --------------------------------

def _bert_input_tokens_no_specials(tokens_a, tokens_b=None):
    return list(tokens_a) + ([] if tokens_b is None else list(tokens_b))


add_twin("bert_input_tokens_no_specials", "bert_input_tokens", _bert_input_tokens_no_specials,
         "the input built without [CLS] and [SEP]: only the word pieces",
         "BERT's input is [CLS] A [SEP]: the two special tokens are real positions, with their "
         "own ids, embeddings and output rows, so T counts them.",
         "tokens = pieces                        # should be ['[CLS]'] + pieces + ['[SEP]']")


def _mlm_num_selected_unrounded(tokens, special_ids=(), select_prob=0.15):
    mlm_num_selected(tokens, special_ids, select_prob)   # the reference's own checks
    return select_prob * len(np.asarray(tokens))


add_twin("mlm_num_selected_unrounded", "mlm_num_selected", _mlm_num_selected_unrounded,
         "0.15 · T left unrounded: a fraction of a position",
         "A count of positions is a whole number: exactly round(0.15 · T) positions are selected "
         "(at least 1).",
         "n = 0.15 * T                           # should be max(1, round(0.15 * T))")


def _mlm_head_output_shape_hidden(seq_len, d_model, vocab_size):
    mlm_head_output_shape(seq_len, d_model, vocab_size)
    return [int(seq_len), int(d_model)]


def _mlm_head_output_shape_transposed(seq_len, d_model, vocab_size):
    return mlm_head_output_shape(seq_len, d_model, vocab_size)[::-1]


add_twin("mlm_head_output_shape_hidden", "mlm_head_output_shape", _mlm_head_output_shape_hidden,
         "[T, d_model]: the encoder's hidden size instead of the vocabulary size",
         "The MLM head's output layer maps d_model to V: one logit per vocabulary entry, so the "
         "softmax can score every possible original token.",
         "logits.shape == (T, d_model)           # should be (T, V)")
add_twin("mlm_head_output_shape_transposed", "mlm_head_output_shape", _mlm_head_output_shape_transposed,
         "[V, T]: rows and columns swapped",
         "The logits have one row per position (T rows) and one column per vocabulary entry "
         "(V columns), as the softmax over the vocabulary runs along each row.",
         "logits.shape == (V, T)                 # should be (T, V)")


# --- the MLM count and WordPiece: wrong answers no other twin names --------------------------

def _count_parts(tokens, special_ids):
    """(T, the non-special tokens) after the reference's own checks."""
    tokens = np.asarray(tokens)
    mlm_num_selected(tokens, special_ids)
    candidates = int(np.count_nonzero(~np.isin(tokens, list(special_ids))))
    return len(tokens), candidates


def _mlm_num_selected_masked_only(tokens, special_ids=(), select_prob=0.15):
    T, candidates = _count_parts(tokens, special_ids)
    return min(candidates, max(1, int(round(0.8 * select_prob * T))))


def _mlm_num_selected_without_specials(tokens, special_ids=(), select_prob=0.15):
    T, candidates = _count_parts(tokens, special_ids)
    if candidates == T:
        raise ValueError("no special tokens: nothing to leave out of T")
    return min(candidates, max(1, int(round(select_prob * candidates))))


def _mlm_num_selected_truncated(tokens, special_ids=(), select_prob=0.15):
    T, candidates = _count_parts(tokens, special_ids)
    return min(candidates, max(1, int(np.floor(select_prob * T))))


def _mlm_num_selected_every_token(tokens, special_ids=(), select_prob=0.15):
    return _count_parts(tokens, special_ids)[1]


add_twin("mlm_num_selected_masked_only", "mlm_num_selected", _mlm_num_selected_masked_only,
         "round(0.8 · 0.15 · T) = round(0.12 T): only the selected positions that become [MASK] counted",
         "The rule first selects round(0.15 · T) positions; the 80/10/10 draw comes after and only "
         "decides what each selected position shows. All of them are selected (and predicted), "
         "the 10 % random and 10 % unchanged ones too.",
         "n = round(0.8 * 0.15 * T)              # should be max(1, round(0.15 * T))")
add_twin("mlm_num_selected_without_specials", "mlm_num_selected", _mlm_num_selected_without_specials,
         "15 % of the word pieces only: [CLS] and [SEP] left out of T",
         "T counts every token of the input, [CLS] and [SEP] included (Google's rule); the "
         "special tokens are only never chosen themselves.",
         "n = round(0.15 * (T - n_special))      # should be max(1, round(0.15 * T)), T with the specials")
add_twin("mlm_num_selected_truncated", "mlm_num_selected", _mlm_num_selected_truncated,
         "0.15 · T cut down to a whole number (int() or floor) instead of rounded",
         "The count is round(0.15 · T): 0.15 · T = 3.6 gives 4 positions, not 3. int() and "
         "np.floor drop the fraction instead of rounding it.",
         "n = int(0.15 * T)                      # should be max(1, round(0.15 * T))")
add_twin("mlm_num_selected_every_token", "mlm_num_selected", _mlm_num_selected_every_token,
         "every word piece counted: the 15 % selection step skipped",
         "MLM first selects 15 % of the positions; only those are corrupted (80/10/10) and "
         "predicted. The other 85 % are left alone and are not in the loss.",
         "n = T - n_special                      # should be max(1, round(0.15 * T))")


def _wordpiece_tokenize_no_split(text, vocab, unk="[UNK]"):
    wordpiece_tokenize(text, vocab, unk)                  # the reference's own checks
    vocab = set(vocab)
    return [word if word in vocab else unk for word in text.split()]


def _wordpiece_tokenize_prefix_on_first(text, vocab, unk="[UNK]"):
    def split_word(word, vocab, unk):
        pieces, start = [], 0
        while start < len(word):
            end = len(word)
            while end > start and CONTINUATION + word[start:end] not in vocab:
                end -= 1
            if end == start:
                return [unk]
            pieces.append(CONTINUATION + word[start:end])
            start = end
        return pieces
    return tokenize_words(text, vocab, unk, split_word)


add_twin("wordpiece_tokenize_no_split", "wordpiece_tokenize", _wordpiece_tokenize_no_split,
         "every word looked up whole, and [UNK] where the whole word is not in the vocabulary",
         "WordPiece splits a word it does not know into pieces it does know: the longest "
         "vocabulary piece at the start, then the longest \"##\" piece after it, and so on. "
         "Only a word that cannot be covered by pieces at all becomes [UNK].",
         "tokens = [w if w in vocab else '[UNK]' for w in words]  # should split each word into pieces")
add_twin("wordpiece_tokenize_prefix_on_first", "wordpiece_tokenize", _wordpiece_tokenize_prefix_on_first,
         "\"##\" put on the first piece of a word too",
         "\"##\" marks a piece that continues a word. The first piece of a word starts it, so it "
         "is looked up without \"##\" (\"play\", then \"##ing\").",
         "piece = '##' + word[start:end]         # should be '##' + … only when start > 0")
