"""Plausible mistakes in the cross-attention family (cross_attention_by_hand): the roles of
decoder and encoder, the padding mask, and a causal mask where none belongs."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake, softmax

CROSS = "cross_attention_by_hand"


def _scores(g, queries=None, keys=None):
    Q = (g.Y if queries is None else queries) @ g.W_Q
    K = (g.M if keys is None else keys) @ g.W_K
    return Q @ K.T / np.sqrt(2.0)


def _real(g):
    return np.arange(5) < g.src_len


def _weights(g, allowed=None):
    s = _scores(g)
    allowed = np.broadcast_to(_real(g), s.shape) if allowed is None else allowed
    return softmax(np.where(allowed, s, -np.inf))


def _causal(g):
    return (np.arange(5)[None, :] <= np.arange(3)[:, None]) & _real(g)[None, :]


def _swapped(g):
    Q, K, V = g.M @ g.W_Q, g.Y @ g.W_K, g.Y @ g.W_V
    return softmax(Q @ K.T / np.sqrt(2.0)) @ V


@mistake(CROSS, "shape", "S × T: the encoder's tokens taken as the rows", accept=["cross_attention_query_from_encoder"])
def shape_transposed(g):
    return np.array([5.0, 3.0])


@mistake(CROSS, "shape", "T × T: the decoder's own positions as the keys")
def shape_square(g):
    return np.array([3.0, 3.0])


@mistake(CROSS, "scores", "QKᵀ without the 1/√2 scale")
def scores_unscaled(g):
    return _scores(g) * np.sqrt(2.0)


@mistake(CROSS, "scores", "the keys taken from the decoder: Q (YW_K)ᵀ/√2")
def scores_decoder_keys(g):
    return _scores(g, keys=g.Y)


@mistake(CROSS, "weights", "a causal mask added: target position i sees source positions ≤ i only",
         accept=["cross_attention_causal_mask"])
def weights_causal(g):
    return _weights(g, _causal(g))


@mistake(CROSS, "weights", "the padding mask left out: the <pad> tokens get weight too")
def weights_unmasked(g):
    return softmax(_scores(g))


@mistake(CROSS, "weights", "the softmax taken over the target positions (columns sum to 1)")
def weights_over_queries(g):
    s = np.where(_real(g)[None, :], _scores(g), -np.inf)
    with np.errstate(invalid="ignore"):
        w = softmax(s, axis=0)
    return np.nan_to_num(w)


@mistake(CROSS, "output", "a causal mask in the cross-attention", accept=["cross_attention_causal_mask"])
def output_causal(g):
    return _weights(g, _causal(g)) @ (g.M @ g.W_V)


@mistake(CROSS, "output", "queries from the encoder, keys and values from the decoder (S × d)",
         accept=["cross_attention_query_from_encoder"])
def output_swapped(g):
    return _swapped(g)


@mistake(CROSS, "output", "the values not projected: weights × M instead of weights × MW_V")
def output_unprojected_values(g):
    return _weights(g) @ g.M


@mistake(CROSS, "seen", "1: a causal mask, as in the decoder's self-attention", accept=["cross_attention_causal_mask"])
def seen_causal(g):
    return 1.0


@mistake(CROSS, "seen", "all five source positions, the <pad> tokens counted")
def seen_all(g):
    return 5.0
