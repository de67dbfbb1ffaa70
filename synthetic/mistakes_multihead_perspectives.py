"""Plausible mistakes in multihead_perspectives, two heads worked by hand: the split, each
head's scale, the concatenation and the output projection."""

from __future__ import annotations

import numpy as np

from .mistakes_base import mistake, softmax

# --- multihead_perspectives --------------------------------------------------------------------

PERSP = "multihead_perspectives"


def _heads(g, scale=1 / np.sqrt(2), width=2):
    """Per head (columns 2h, 2h+1 of the one-hot projections): (weights, output)."""
    out = []
    for h in range(2):
        cols = slice(width * h, width * h + width)
        Q, K, V = g.W_Q[:, cols], g.W_K[:, cols], g.W_V[:, cols]
        A = softmax(Q @ K.T * scale)
        out.append((A, A @ V))
    return out


def _concat(g):
    return np.concatenate([Z for _, Z in _heads(g)], axis=1)


@mistake(PERSP, "attends", "the argmax taken down each column (over the queries) instead of along each row", accept=["mha_weights_read_by_column"])
def persp_attends_over_queries(g):
    return np.stack([A.argmax(axis=0) for A, _ in _heads(g)])


@mistake(PERSP, "attends", "the keys ranked on V's columns instead of the weights: argmax of each head's values")
def persp_attends_values(g):
    return np.stack([g.W_V[:, 2 * h:2 * h + 2].sum(axis=1).argmax() * np.ones(4, dtype=int) for h in range(2)])


@mistake(PERSP, "weights_0", "head 0's scores not divided by √d_head = √2", accept=["sdpa_no_scale"])
def persp_weights_no_scale(g):
    return _heads(g, scale=1.0)[0][0]


@mistake(PERSP, "weights_0", "head 0's scores divided by √4 (the model width) instead of √2",
         accept=["sdpa_scale_by_sqrt_seq_len", "sdpa_divide_by_d_k"])
def persp_weights_model_width(g):
    return _heads(g, scale=1 / 2)[0][0]


@mistake(PERSP, "weights_0", "one head over all four columns instead of head 0's two", accept=["split_heads_full_width"])
def persp_weights_whole_width(g):
    return softmax(g.W_Q @ g.W_K.T / 2)


@mistake(PERSP, "concat", "the heads averaged instead of concatenated, ½(Z_0 + Z_1)", accept=["merge_heads_averaged"])
def persp_concat_averaged(g):
    (_, Z0), (_, Z1) = _heads(g)
    return (Z0 + Z1) / 2


@mistake(PERSP, "concat", "the heads placed in the opposite order, [Z_1 | Z_0]", accept=["merge_heads_reversed"])
def persp_concat_swapped(g):
    (_, Z0), (_, Z1) = _heads(g)
    return np.concatenate([Z1, Z0], axis=1)


@mistake(PERSP, "output", "W_O left out: the concatenation taken as the output", accept=["linear_skipped"])
def persp_output_no_w_o(g):
    return _concat(g)


@mistake(PERSP, "output", "W_O applied first: W_O [Z_0 | Z_1]", accept=["linear_weight_first"])
def persp_output_w_o_first(g):
    return g.W_O @ _concat(g)


@mistake(PERSP, "from_head_1", "the whole output entry (0, 0), both heads together", accept=["head_projection_full_width"])
def persp_share_whole_entry(g):
    return float(_concat(g)[0] @ g.W_O[:, 0])


@mistake(PERSP, "from_head_1", "head 0's share instead of head 1's", accept=["head_projection_numbered_from_one"])
def persp_share_head_0(g):
    return float(_concat(g)[0, 0:2] @ g.W_O[0:2, 0])


@mistake(PERSP, "from_head_1", "head 1's columns times W_O's first two rows (the rows of head 0)")
def persp_share_wrong_rows(g):
    return float(_concat(g)[0, 2:4] @ g.W_O[0:2, 0])
