"""Misconception twins of BERT's pre-training objectives: the NSP head and loss, the MLM
selection and loss. Every twin registers in ``solutions.misconceptions.MISCONCEPTIONS``."""

from __future__ import annotations

import numpy as np

from .bert import MASK, MLMSelection, mlm_loss, mlm_select, nsp_loss
from .linear import linear
from .losses import IGNORE_INDEX
from .misconceptions import add_twin
from .softmax import log_softmax

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
