"""Plausible mistakes in the families on a trained model: reading its heads' maps
(trained_heads) and ablating a head (ablate_head). Each is computed from what the student is
shown — the maps, the distributions — in plain NumPy, as the student would."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake

HEADS = "trained_heads"
ABLATE = "ablate_head"


# --- trained_heads ---------------------------------------------------------------------------

@mistake(HEADS, "aligned", "the map read by columns: for each source position, the target that attends most",
         accept=["strongest_queries"])
def aligned_by_columns(g):
    return np.argmax(np.asarray(g.cross_map)[:-1], axis=0)


@mistake(HEADS, "aligned", "positions numbered from 1", accept=["strongest_keys_from_one"])
def aligned_from_one(g):
    return np.argmax(np.asarray(g.cross_map)[:-1], axis=1) + 1


@mistake(HEADS, "aligned", "every row, the one predicting <eos> too")
def aligned_every_row(g):
    return np.argmax(np.asarray(g.cross_map), axis=1)


@mistake(HEADS, "cross_pattern", "target position t read as source position t: 'same token'")
def cross_pattern_same(g):
    return 1


@mistake(HEADS, "cross_pattern", "named 'first token' (pattern 2)")
def cross_pattern_first(g):
    return 2


@mistake(HEADS, "self_pattern", "the bright cell of row 0 (it can only read <bos>) taken for the pattern: first token")
def self_pattern_bos_cell(g):
    return 2


@mistake(HEADS, "self_pattern", "the weight beside the diagonal taken for the query's own: previous token")
def self_pattern_previous(g):
    return 0


@mistake(HEADS, "predict", "the mirrored position of the old input's length: n − 1 − t")
def predict_old_length(g):
    return len(np.asarray(g.digits)) - 1 - int(g.t)


@mistake(HEADS, "predict", "the same position t (the diagonal)", accept=["same_position"])
def predict_diagonal(g):
    return int(g.t)


@mistake(HEADS, "predict", "positions numbered from 1: m − t", accept=["mirrored_position_from_one"])
def predict_from_one(g):
    return len(np.asarray(g.new_digits)) - int(g.t)


@mistake(HEADS, "predict", "read off the old map's row t instead of predicted for the new input")
def predict_old_map(g):
    return int(np.argmax(np.asarray(g.cross_map)[int(g.t)]))


# --- ablate_head -----------------------------------------------------------------------------

@mistake(ABLATE, "mechanics", "W_O's columns of the head zeroed instead of its rows",
         accept=["head_ablated_output_columns_zeroed"])
def mechanics_columns(g):
    W = np.array(g.W_O, dtype=float)
    h = int(g.h)
    W[:, 2 * h:2 * h + 2] = 0
    return np.asarray(g.o, dtype=float) @ W


@mistake(ABLATE, "mechanics", "the head kept and the other one zeroed", accept=["head_ablated_output_kept_only"])
def mechanics_kept(g):
    o = np.array(g.o, dtype=float)
    h = int(g.h)
    keep = o.copy()
    keep[:, :] = 0
    keep[:, 2 * h:2 * h + 2] = o[:, 2 * h:2 * h + 2]
    return keep @ np.asarray(g.W_O, dtype=float)


@mistake(ABLATE, "mechanics", "nothing ablated: o W_O", accept=["head_ablated_output_nothing_zeroed"])
def mechanics_nothing(g):
    return np.asarray(g.o, dtype=float) @ np.asarray(g.W_O, dtype=float)


def _kl(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    keep = p > 0
    return float(np.sum(p[keep] * np.log(p[keep] / q[keep])))


def _kls(g, measure=_kl):
    return np.array([measure(g.p, q) for q in np.asarray(g.ablated)])


@mistake(ABLATE, "kl", "KL(q ‖ p): the ablated distribution first", accept=["kl_divergence_reversed"])
def kl_reversed(g):
    return _kls(g, lambda p, q: _kl(q, p))


@mistake(ABLATE, "kl", "log base 2: bits instead of nats", accept=["kl_divergence_in_bits"])
def kl_bits(g):
    return _kls(g) / np.log(2)


@mistake(ABLATE, "kl", "the total variation ½ Σ|p − q| instead of KL")
def kl_total_variation(g):
    return _kls(g, lambda p, q: 0.5 * float(np.sum(np.abs(np.asarray(p) - np.asarray(q)))))


@mistake(ABLATE, "kl", "the fall of the largest probability instead of KL")
def kl_top_probability(g):
    p = np.asarray(g.p)
    top = int(np.argmax(p))
    return np.array([p[top] - q[top] for q in np.asarray(g.ablated)])


@mistake(ABLATE, "depends", "the head that matters least (the smallest KL)")
def depends_least(g):
    return int(np.argmin(_kls(g)))


@mistake(ABLATE, "depends", "rows numbered from 1")
def depends_from_one(g):
    return int(np.argmax(_kls(g))) + 1


def _right(g):
    return int(np.asarray(g.digits)[int(g.t)]) + 3


@mistake(ABLATE, "drop", "the fall in probability instead of log-probability")
def drop_probability(g):
    q = np.asarray(g.ablated)[int(np.argmax(_kls(g)))]
    return float(np.asarray(g.p)[_right(g)] - q[_right(g)])


@mistake(ABLATE, "drop", "log base 10")
def drop_log10(g):
    q = np.asarray(g.ablated)[int(np.argmax(_kls(g)))]
    return float(np.log10(np.asarray(g.p)[_right(g)]) - np.log10(q[_right(g)]))
