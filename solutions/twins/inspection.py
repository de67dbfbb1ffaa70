"""Twins of looking inside a trained model: reading its heads' maps, ablating a head and
measuring what changed — each registered with ``twin`` so that TWINS stays the one registry.

Imports NumPy and the rest of ``solutions`` only.
"""

from __future__ import annotations

import numpy as np

from .registry import twin


# --- reading a map --------------------------------------------------------------------------

@twin("strongest_keys",
      "the map read by columns: for each key, the query that attends to it most",
      "Rows are queries and each row sums to 1: row i says where query i looks. The largest entry "
      "of a column says which query looks hardest at that key — another question.",
      "np.argmax(W, axis=0)        # should be axis=1 (or -1): along each row")
def strongest_queries(weights):
    return np.argmax(np.asarray(weights, dtype=float), axis=-2)


@twin("strongest_keys",
      "positions numbered from 1",
      "Positions, like NumPy's indices, are numbered from 0 here: the first key is position 0.",
      "np.argmax(W, axis=1) + 1      # should be np.argmax(W, axis=1)")
def strongest_keys_from_one(weights):
    return np.argmax(np.asarray(weights, dtype=float), axis=-1) + 1


@twin("mirrored_position",
      "the same position t instead of the mirrored one",
      "To write output position t of the *reversed* string the model needs input digit S − 1 − t; "
      "position t itself is what a copying model reads.",
      "t                             # should be S - 1 - t")
def same_position(t, length):
    return int(t)


@twin("mirrored_position",
      "the mirrored position counted from 1: S − t",
      "Positions are numbered from 0, so the last of S is S − 1, and output position t reads "
      "input position S − 1 − t.",
      "S - t                         # should be S - 1 - t")
def mirrored_position_from_one(t, length):
    return int(length) - int(t)


# --- ablating a head --------------------------------------------------------------------------
# The reference zeroes the head's d_k entries of the concatenation, i.e. W_O's rows that read it.

@twin("head_ablated_output",
      "the head's block of W_O's columns zeroed (output features) instead of its rows",
      "concat(heads) W_O: row block h of W_O reads head h (its d_k entries of the concatenation), "
      "while a column block is a slice of the output features, written by every head. Zeroing "
      "the columns silences some features of all heads and leaves head h speaking.",
      "W_O[:, h*d_k:(h+1)*d_k] = 0      # should be W_O[h*d_k:(h+1)*d_k, :] = 0")
def head_ablated_output_columns_zeroed(o, W_O, head, d_k):
    W_O = np.array(W_O, dtype=float)
    W_O[:, head * d_k:(head + 1) * d_k] = 0.0
    return np.asarray(o, dtype=float) @ W_O


@twin("head_ablated_output",
      "every head but the ablated one zeroed: the head kept alone",
      "Ablating head h removes *its* contribution and keeps the others; keeping head h alone "
      "measures what it does by itself — another experiment, with other numbers.",
      "o[..., keep] = 0            # should zero head h's entries only")
def head_ablated_output_kept_only(o, W_O, head, d_k):
    o = np.asarray(o, dtype=float)
    kept = np.zeros_like(o)
    kept[..., head * d_k:(head + 1) * d_k] = o[..., head * d_k:(head + 1) * d_k]
    return kept @ np.asarray(W_O, dtype=float)


@twin("head_ablated_output",
      "nothing ablated: the layer's output with every head",
      "Ablating head h means running the layer with that head's output set to 0: its d_k "
      "entries of the concatenation zeroed before W_O. o W_O with o unchanged is the full layer.",
      "o @ W_O                      # should zero o[..., h*d_k:(h+1)*d_k] first")
def head_ablated_output_nothing_zeroed(o, W_O, head, d_k):
    return np.asarray(o, dtype=float) @ np.asarray(W_O, dtype=float)


# --- measuring the change ---------------------------------------------------------------------

@twin("kl_divergence",
      "KL in the reverse direction: KL(q ‖ p), the ablated model's distribution first",
      "The change an ablation makes is measured from the model as it is: KL(p ‖ q) = "
      "Σ p_i log(p_i / q_i), weighted by the full model's probabilities p. KL is not symmetric; "
      "KL(q ‖ p) weights by the ablated model's guesses instead.",
      "np.sum(q * np.log(q / p))    # should be np.sum(p * np.log(p / q))")
def kl_divergence_reversed(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    kept = q > 0
    return float(np.sum(q[kept] * (np.log(q[kept]) - np.log(p[kept]))))


@twin("kl_divergence",
      "KL in bits (log base 2) where nats (natural log) are asked for",
      "The cross-entropy and KL of a softmax model are measured in nats, with the natural log; "
      "log₂ gives bits, every value 1/ln 2 ≈ 1.443 times larger.",
      "np.sum(p * np.log2(p / q))    # should be np.log")
def kl_divergence_in_bits(p, q):
    p, q = np.asarray(p, dtype=float), np.asarray(q, dtype=float)
    kept = p > 0
    return float(np.sum(p[kept] * (np.log2(p[kept]) - np.log2(q[kept]))))

