"""BERT's pre-training objectives (Devlin et al. 2019): masked LM and next-sentence prediction.

Both are ordinary cross-entropy. MLM corrupts 15% of the positions — 80% become [MASK], 10% a
random token, 10% stay unchanged — and the loss is taken **on those selected positions only**.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .linear import linear
from .losses import IGNORE_INDEX, cross_entropy

KEEP, MASK, RANDOM, UNCHANGED = 0, 1, 2, 3  # what mlm_select did at each position


@dataclass(frozen=True)
class MLMSelection:
    """inputs (T,) the corrupted ids fed to BERT; selected (T,) bool; labels (T,) the original
    id at selected positions and −100 elsewhere; actions (T,) KEEP/MASK/RANDOM/UNCHANGED."""

    inputs: np.ndarray
    selected: np.ndarray
    labels: np.ndarray
    actions: np.ndarray


def mlm_select(tokens, rng, vocab_size: int, mask_id: int, special_ids=(),
               select_prob: float = 0.15) -> MLMSelection:
    """Choose MLM positions the way Google's ``create_pretraining_data.py`` does.

    Exactly max(1, round(select_prob · T)) positions (at most the number of non-special ones)
    are drawn without replacement, never a special token ([CLS], [SEP], [PAD]). Each selected
    position independently becomes [MASK] with p = 0.8, a uniformly random vocabulary id with
    p = 0.1, or stays unchanged with p = 0.1.

    Shapes: tokens (T,) ids → an ``MLMSelection``. ``rng``: a ``np.random.Generator`` or a seed;
    the same seed gives the same selection.
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 1 or not np.issubdtype(tokens.dtype, np.integer):
        raise ValueError(f"tokens: expected a (T,) integer array, got shape {tokens.shape}, "
                         f"dtype {tokens.dtype}")
    rng = np.random.default_rng(rng)
    candidates = np.flatnonzero(~np.isin(tokens, list(special_ids)))
    count = min(len(candidates), max(1, int(round(select_prob * len(tokens)))))
    positions = np.sort(rng.choice(candidates, size=count, replace=False))
    u = rng.random(count)
    random_ids = rng.integers(0, vocab_size, size=count)

    inputs, actions = tokens.copy(), np.full(len(tokens), KEEP)
    actions[positions] = np.where(u < 0.8, MASK, np.where(u < 0.9, RANDOM, UNCHANGED))
    inputs[positions] = np.where(u < 0.8, mask_id, np.where(u < 0.9, random_ids, tokens[positions]))
    selected = actions != KEEP
    labels = np.where(selected, tokens, IGNORE_INDEX)
    return MLMSelection(inputs, selected, labels, actions)


def mlm_loss(logits, tokens, selected) -> float:
    """L_MLM = −(1/|M|) Σ_{i∈M} log p(x_i | corrupted input), M = the selected positions.

    Shapes: logits (..., T, V), tokens (..., T) the *original* ids, selected (..., T) bool.
    Positions outside M contribute nothing, not even to the denominator.
    """
    tokens, selected = np.asarray(tokens), np.asarray(selected)
    if selected.dtype != bool or selected.shape != tokens.shape:
        raise ValueError(f"selected: expected a bool array of shape {tokens.shape} like tokens, "
                         f"got dtype {selected.dtype} and shape {selected.shape}")
    return cross_entropy(logits, np.where(selected, tokens, IGNORE_INDEX))


def nsp_loss(logits, labels) -> float:
    """L_NSP = mean cross-entropy of the binary IsNext/NotNext classifier on [CLS].
    Shapes: logits (..., 2), labels (...) with 0 = IsNext, 1 = NotNext (Google's convention)."""
    logits, labels = np.asarray(logits), np.asarray(labels)
    if logits.ndim < 1 or logits.shape[-1] != 2:
        raise ValueError(f"logits: expected shape (..., 2) (IsNext, NotNext), got {logits.shape}")
    if not np.isin(labels, (0, 1)).all():
        raise ValueError(f"labels: expected 0 (IsNext) or 1 (NotNext), got {np.unique(labels).tolist()}")
    return cross_entropy(logits, labels)


def nsp_head(C, W_pool, b_pool, W_cls, b_cls) -> np.ndarray:
    """NSP logits from the final [CLS] vector C: tanh(C W_pool + b_pool) W_cls + b_cls.

    Shapes: C (..., d), W_pool (d, d), b_pool (d,), W_cls (d, 2), b_cls (2,) → (..., 2).
    The tanh layer is BERT's pooler; index 0 of the output is IsNext.
    """
    return linear(np.tanh(linear(C, W_pool, b_pool)), W_cls, b_cls)


def bert_pretraining_loss(mlm_logits, tokens, selected, nsp_logits, nsp_labels) -> float:
    """L = L_MLM + L_NSP, the sum of the two mean losses (shapes as in ``mlm_loss`` and
    ``nsp_loss``)."""
    return mlm_loss(mlm_logits, tokens, selected) + nsp_loss(nsp_logits, nsp_labels)


def bert_input_tokens(tokens_a, tokens_b=None) -> list:
    """BERT's input sequence: ``[CLS] A [SEP]``, or ``[CLS] A [SEP] B [SEP]`` for a pair.
    The special tokens are positions like any other: they are embedded, attended to and get
    an output row (the MLM head's logits have a row for them, NSP reads the one of [CLS])."""
    tokens_a = list(tokens_a)
    tokens_b = [] if tokens_b is None else list(tokens_b) + ["[SEP]"]
    return ["[CLS]"] + tokens_a + ["[SEP]"] + tokens_b


def mlm_num_selected(tokens, special_ids=(), select_prob: float = 0.15) -> int:
    """How many positions ``mlm_select`` chooses: max(1, round(select_prob · T)) with T = the
    length of ``tokens``, special tokens included, but at most the number of non-special ones.
    Shapes: tokens (T,) ids."""
    tokens = np.asarray(tokens)
    if tokens.ndim != 1:
        raise ValueError(f"tokens: expected a (T,) array of ids, got shape {tokens.shape}")
    candidates = int(np.count_nonzero(~np.isin(tokens, list(special_ids))))
    return min(candidates, max(1, int(round(select_prob * len(tokens)))))


def mlm_head_output_shape(seq_len: int, d_model: int, vocab_size: int) -> list:
    """The shape of the MLM logits of one sequence, [seq_len, vocab_size]: the head maps each
    position's d_model-dimensional output to one logit per vocabulary entry."""
    for name, value in (("seq_len", seq_len), ("d_model", d_model), ("vocab_size", vocab_size)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name}: expected a positive whole number, got {value!r}")
    return [int(seq_len), int(vocab_size)]
