"""Generated twins of masks and scores, continued from ``attention``: the causal mask shifted
by one or all visible, one mask of two kept, the linear layer's weight on the wrong side,
padding masks, and Bahdanau/Luong scoring."""

from __future__ import annotations


import numpy as np

from .._shapes import as_float
from ..alignment import AlignmentStep, additive_score, attend, content_score
from ..attention import attention_shapes, scaled_dot_product_attention
from ..masks import apply_mask, padding_mask
from .registry import add_twin
from ..softmax import softmax
from .attention import causal_of, steps_or_output


# --- the causal mask shifted by one ---------------------------------------------------------

def _shifted_causal(L, S, k):
    return np.tril(np.ones((L, S), dtype=bool), k=k)


def _causal_mask_shifted_by_one(L, S=None):
    return _shifted_causal(L, L if S is None else S, 1)


add_twin("causal_mask_shifted_by_one", "causal_mask", _causal_mask_shifted_by_one,
         "np.tril(…, k=1): the causal mask shifted by one, so each token also sees the next one",
         "Token i may attend to tokens 0 … i: the diagonal is the last allowed entry. k=1 opens "
         "one future token, which is exactly what a decoder must not see during training.",
         "np.tril(np.ones((L, L)), k=1)          # should be np.tril(np.ones((L, L)))")


def _causal_attention_mask_shifted_by_one(Q, K, V, return_steps=False):
    mask = _shifted_causal(np.shape(Q)[-2], np.shape(K)[-2], 1)
    return scaled_dot_product_attention(Q, K, V, mask=mask, return_steps=return_steps)


add_twin("causal_mask_all_visible", "causal_mask", lambda L, S=None: np.ones((L, L if S is None else S), dtype=bool),
         "no causal mask at all: every entry True, each token sees the whole sequence",
         "A decoder predicting token i+1 must not see tokens after i: True on and below the "
         "diagonal (np.tril), False above it.",
         "mask = np.ones((L, L), dtype=bool)     # should be np.tril(np.ones((L, L), dtype=bool))")


def _only_one_mask(keep: int):
    def function(*masks):
        arrays = [np.asarray(m, dtype=bool) for m in masks]
        shape = np.broadcast_shapes(*(a.shape for a in arrays))
        return np.broadcast_to(arrays[keep], shape).copy()
    return function


add_twin("combine_masks_first_only", "combine_masks", _only_one_mask(0),
         "the masks not combined: only the first one (here: the causal mask) applied",
         "Every mask must hold at once: combine them with AND (np.logical_and). Using one mask "
         "forgets what the other blocks — the padding, or the future.",
         "mask = causal                          # should be causal & pad")
add_twin("combine_masks_last_only", "combine_masks", _only_one_mask(-1),
         "the masks not combined: only the last one (here: the padding mask) applied",
         "Every mask must hold at once: combine them with AND (np.logical_and). Using one mask "
         "forgets what the other blocks — the future, or the padding.",
         "mask = pad                             # should be causal & pad")


def _linear_weight_first(x, W, b=None):
    y = np.asarray(W, dtype=float) @ np.asarray(x, dtype=float)   # raises unless the shapes fit
    return y if b is None else y + np.asarray(b, dtype=float)


add_twin("linear_weight_first", "linear", _linear_weight_first,
         "W X instead of X W: the projection written with the weight matrix first",
         "The lecture's rows are tokens: Q = XW_Q multiplies each token's row by W_Q. W X "
         "(the column-vector habit) mixes the tokens instead, and fits only for square shapes.",
         "Q = W_Q @ X                            # should be X @ W_Q")


def _linear_skipped(x, W, b=None):
    x, W = np.asarray(x, dtype=float), np.asarray(W, dtype=float)
    if W.ndim != 2 or W.shape[0] != W.shape[1] or x.shape[-1] != W.shape[0]:
        raise ValueError("the projection can be left out only where it keeps the width")
    return x.copy()


add_twin("linear_skipped", "linear", _linear_skipped,
         "the projection left out: X itself used where X W was asked (W_O, or W_Q, W_K, W_V)",
         "Every projection is a learnt matrix product: Q = XW_Q, K = XW_K, V = XW_V, and after "
         "the heads output = [Z_0 | … | Z_h] W_O, which mixes the heads' features. Skipped, "
         "each head's features stay in their own columns, unmixed.",
         "out = concat                           # should be concat @ W_O")


def _merge_heads_reversed(x):
    from ..multihead import merge_heads
    return merge_heads(np.asarray(x, dtype=float)[..., ::-1, :, :])


add_twin("merge_heads_reversed", "merge_heads", _merge_heads_reversed,
         "the heads concatenated in reverse order, [Z_h | … | Z_1 | Z_0]",
         "Concat(head_1, …, head_h) keeps the heads in order: head 0's output in the first "
         "d_head columns, head 1's in the next ones. W_O's rows are matched to that order.",
         "np.concatenate(heads[::-1], axis=-1)   # should be np.concatenate(heads, axis=-1)")


def _causal_attention_mask_no_diagonal(Q, K, V, return_steps=False):
    Q, K, V, dims = attention_shapes(Q, K, V)
    scale = 1.0 / np.sqrt(dims["d_k"])
    raw = Q @ np.swapaxes(K, -1, -2)
    masked = apply_mask(raw * scale, _shifted_causal(dims["L"], dims["S"], -1))
    # The first query sees no key at all: a student's softmax gives NaN there (−∞ − (−∞)),
    # not the reference's zeros for a fully masked row; the twin does what the student's does.
    with np.errstate(invalid="ignore"):
        e = np.exp(masked - masked.max(axis=-1, keepdims=True))
        weights = e / e.sum(axis=-1, keepdims=True)
    return steps_or_output(raw, scale, raw * scale, masked, weights, V, return_steps)


def _causal_attention_bottom_right(Q, K, V, return_steps=False):
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    return scaled_dot_product_attention(Q, K, V, mask=_shifted_causal(L, S, S - L), return_steps=return_steps)


add_twin("causal_attention_bottom_right", "causal_attention", _causal_attention_bottom_right,
         "the causal triangle anchored at the bottom right (np.tril(…, k=S−L)) instead of the top left",
         "Here query i is the i-th token of the same sequence as key i: it may see keys 0 … i, a "
         "triangle from the top-left corner (PyTorch's is_causal). Anchored bottom-right (the "
         "convention for a query block at the end of a longer cache), each query sees S−L more keys.",
         "np.tril(np.ones((L, S)), k=S - L)      # should be np.tril(np.ones((L, S)))")


def _causal_attention_square_mask(Q, K, V, return_steps=False):
    L, S = np.shape(Q)[-2], np.shape(K)[-2]
    if L != S:     # an (L, L) mask does not broadcast against (L, S) scores
        raise ValueError(f"operands could not be broadcast together with shapes ({L},{S}) ({L},{L})")
    return scaled_dot_product_attention(Q, K, V, mask=causal_of(Q, K), return_steps=return_steps)


add_twin("causal_attention_square_mask", "causal_attention", _causal_attention_square_mask,
         "a square causal mask np.tril(np.ones((L, L))): right when L = S, an error otherwise",
         "The mask has one row per query and one column per key: shape (L, S), which is not "
         "square when the queries and keys have different lengths. Build it from both: "
         "np.tril(np.ones((L, S), dtype=bool)).",
         "mask = np.tril(np.ones((L, L)))       # should be np.tril(np.ones((L, S)))")


add_twin("causal_attention_mask_no_diagonal", "causal_attention", _causal_attention_mask_no_diagonal,
         "a causal mask without its diagonal (np.tril(…, k=-1)): no token attends to itself",
         "Token i may attend to tokens 0 … i, itself included: the diagonal belongs to the "
         "mask. Without it the first token sees nothing at all and every token ignores its own value.",
         "mask = np.tril(np.ones((L, S)), k=-1)  # should be np.tril(np.ones((L, S)))")


add_twin("causal_attention_mask_shifted_by_one", "causal_attention", _causal_attention_mask_shifted_by_one,
         "a causal mask shifted by one (np.tril(…, k=1)): each token also attends to the next one",
         "Token i may attend to tokens 0 … i. With k=1 every row sees one future token, so the "
         "model can copy the word it is meant to predict.",
         "mask = np.tril(np.ones((L, S)), k=1)   # should be np.tril(np.ones((L, S)))")


def _causal_mask_inverted(L, S=None):
    return ~np.tril(np.ones((L, L if S is None else S), dtype=bool))


add_twin(
    "causal_mask_inverted", "causal_mask", _causal_mask_inverted,
    "the causal mask with True = blocked (np.triu(…, k=1), PyTorch's attn_mask convention)",
    "torch.triu(ones, diagonal=1) marks the future as True because nn.MultiheadAttention reads "
    "True as blocked. This kit's masks mean True = may attend: the lower triangle is True.",
    "np.triu(np.ones((L, S), bool), k=1)   # should be np.tril(np.ones((L, S), bool))")


# --- padding masks --------------------------------------------------------------------------

def _lengths(lengths):
    return np.asarray(lengths).reshape(-1)


def padding_offset_twin(name: str, offset: int, summary: str, explanation: str):
    """Register a padding-mask twin that keeps the key positions j < length + offset."""
    def function(lengths, S):
        return (np.arange(S) < _lengths(lengths)[:, None] + offset)[:, None, :]
    code = f"np.arange(S) < lengths + {offset}   # should be np.arange(S) < lengths"
    return add_twin(name, "padding_mask", function, summary, explanation, code)


padding_offset_twin(
    "padding_mask_includes_first_pad", 1,
    "the padding mask off by one: the first <PAD> position is also allowed (j ≤ length)",
    "Positions are numbered from 0, so a sequence of length n occupies 0 … n−1: keep j < n.")
padding_offset_twin(
    "padding_mask_drops_last_token", -1,
    "the padding mask off by one: the last real token is blocked too (j < length − 1)",
    "A sequence of length n occupies positions 0 … n−1, all real tokens: keep j < n.")


def _padding_mask_inverted(lengths, S):
    return ~padding_mask(lengths, S)


add_twin(
    "padding_mask_inverted", "padding_mask", _padding_mask_inverted,
    "the padding mask with True at the <PAD> positions (key_padding_mask's True = ignore)",
    "nn.MultiheadAttention's key_padding_mask marks the pads as True (ignore). This kit's "
    "masks mean True = may attend: True on the real tokens, False on the pads.",
    "np.arange(S) >= lengths               # should be np.arange(S) < lengths")


def _padding_mask_on_query_rows(lengths, S):
    return (np.arange(S) < _lengths(lengths)[:, None])[:, :, None]


add_twin(
    "padding_mask_on_query_rows", "padding_mask", _padding_mask_on_query_rows,
    "the padding applied to the query rows (shape (B, S, 1)) instead of the key columns",
    "Padding hides the <PAD> *keys* from every query: the mask is (B, 1, S), one row "
    "broadcast over all queries. (B, S, 1) blocks the pads' own rows and leaves their keys open.",
    "mask[:, :, None]                       # should be mask[:, None, :]")


def _combine_masks_padding_on_query_rows(*masks):
    # a (B, 1, S) padding mask turned into (B, S, 1): it blocks the pads' query rows
    arrays = [np.asarray(m, dtype=bool) for m in masks]
    arrays = [np.swapaxes(m, -1, -2) if m.ndim == 3 and m.shape[-2] == 1 else m for m in arrays]
    return np.logical_and.reduce(np.broadcast_arrays(*arrays))


add_twin(
    "combine_masks_padding_on_query_rows", "combine_masks", _combine_masks_padding_on_query_rows,
    "the padding combined along the query rows (pad[:, :, None]) instead of the key columns",
    "Padding hides the <PAD> *keys* from every query: it blocks columns j ≥ length, in every "
    "row. Applied to the rows, it blanks the pads' own rows and leaves their keys visible.",
    "causal & pad[:, :, None]              # should be causal & pad[:, None, :]")


def _combine_masks_or(*masks):
    arrays = [np.asarray(m, dtype=bool) for m in masks]
    return np.logical_or.reduce(np.broadcast_arrays(*arrays))


add_twin(
    "combine_masks_or", "combine_masks", _combine_masks_or,
    "the masks combined with OR: a key is visible if either mask allows it",
    "A key may be attended to only if every mask allows it (causal AND padding): with OR the "
    "future shows wherever it is not padding, and the pads wherever they are in the past.",
    "causal | pad                           # should be causal & pad")


# --- softmax and log-softmax ----------------------------------------------------------------

def softmax_axis_variant(name: str, axis, summary: str, explanation: str, code: str):
    """Register a softmax twin normalising over ``axis`` (None: every entry) instead of the
    axis it is given (the key or class axis, -1 by default)."""
    def function(x, axis=-1):
        return softmax(x, axis=wrong_axis)
    wrong_axis = axis
    return add_twin(name, "softmax", function, summary, explanation, code)


softmax_axis_variant(
    "softmax_axis_0", 0,
    "softmax over axis 0: each column (one class or key across all the rows) sums to 1",
    "Every row is one distribution (one example's classes, one query's keys): normalise "
    "along the last axis, axis=-1, so that each row sums to 1.",
    "np.exp(z) / np.exp(z).sum(axis=0)      # should be .sum(axis=-1, keepdims=True)")
softmax_axis_variant(
    "softmax_over_all_entries", None,
    "softmax over every entry at once: the whole array sums to 1, not each row",
    "Each row is its own distribution: divide by the row's sum, not by the grand total.",
    "np.exp(z) / np.exp(z).sum()            # should be .sum(axis=-1, keepdims=True)")


def _softmax_unnormalised(x, axis=-1):
    with np.errstate(over="ignore"):
        return np.exp(as_float(x, "x"))


add_twin(
    "softmax_unnormalised", "softmax", _softmax_unnormalised,
    "exp(x) alone: the exponentials not divided by their sum",
    "softmax(x)_i = exp(x_i) / Σ_j exp(x_j): without the division the numbers are not "
    "probabilities and do not sum to 1.",
    "p = np.exp(z)                          # should be np.exp(z) / np.exp(z).sum(-1, keepdims=True)")


def _log_softmax_base_10(x, axis=-1):
    return np.log10(softmax(x, axis=axis))


def _log_softmax_without_normaliser(x, axis=-1):
    return as_float(x, "x").copy()


add_twin(
    "log_softmax_base_10", "log_softmax", _log_softmax_base_10,
    "the logarithm taken to base 10 (a calculator's log key) instead of the natural log",
    "Cross-entropy uses the natural logarithm, ln p (np.log). log₁₀ p is ln p / 2.303, so "
    "every loss comes out 2.3 times too small.",
    "-np.log10(p[y])                        # should be -np.log(p[y])")
add_twin(
    "log_softmax_without_normaliser", "log_softmax", _log_softmax_without_normaliser,
    "log p taken as the logit itself, z_y, without subtracting log Σ exp(z)",
    "log softmax(z)_y = z_y − log Σ_j exp(z_j): the log-sum-exp term is what makes it a "
    "log-probability. Without it the 'loss' −z_y can even be negative.",
    "loss = -z[y]                           # should be -(z[y] - np.log(np.exp(z).sum()))")


# --- the softmax's backward pass ------------------------------------------------------------

def _softmax_backward_no_sum_term(dp, cache):
    return cache * as_float(dp, "dp")


add_twin(
    "softmax_backward_no_sum_term", "softmax_backward", _softmax_backward_no_sum_term,
    "dz = p ⊙ dp: the −p (p·dp) term of the Jacobian left out",
    "∂p_i/∂z_j = p_i(δ_ij − p_j), so dz = p ⊙ (dp − Σ_j p_j dp_j). Dropping the sum treats "
    "each probability as if it did not depend on the other inputs.",
    "dz = p * dp                            # should be p * (dp - (dp * p).sum(-1, keepdims=True))")


def softmax_backward_axis_twin(name: str, axis, summary: str):
    """Register a softmax-backward twin that sums Σ p·dp over ``axis`` instead of the last."""
    def function(dp, cache):
        dp = as_float(dp, "dp")
        return cache * (dp - np.sum(dp * cache, axis=axis, keepdims=True))
    code = (f"p * (dp - (dp * p).sum(axis={axis}, keepdims=True))  # should be axis=-1")
    explanation = ("The sum Σ_j p_j dp_j runs over the entries of one softmax, the last axis; "
                   "summed over another axis it mixes different rows' distributions.")
    return add_twin(name, "softmax_backward", function, summary, explanation, code)


softmax_backward_axis_twin("softmax_backward_sum_over_axis_0", 0,
                           "the softmax gradient with Σ p·dp summed over axis 0 instead of each row")
softmax_backward_axis_twin("softmax_backward_sum_over_all_entries", None,
                           "the softmax gradient with Σ p·dp summed over every entry instead of each row")


# --- Bahdanau and content scores ------------------------------------------------------------

def _additive_score_W_transposed(s, H, W, U, v):
    W = as_float(W, "W")
    return additive_score(s, H, W.T, U, v)    # raises unless W is square, as W @ s would


add_twin(
    "additive_score_W_transposed", "additive_score", _additive_score_W_transposed,
    "additive scores with W s computed as W @ s (column vector) on data laid out for s @ W",
    "The data is in the row layout, s W: W has one row per entry of s. Reading the paper's "
    "W s literally as W @ s uses Wᵀ instead; square W hides the slip from the shapes.",
    "np.tanh(W @ s + H @ U) @ v             # should be np.tanh(s @ W + H @ U) @ v")


def _bahdanau_step_W_transposed(s_prev, H, W, U, v, mask=None):
    scores = _additive_score_W_transposed(s_prev, H, W, U, v)
    weights, context = attend(scores, H, mask)
    return AlignmentStep(scores, weights, context)


add_twin(
    "bahdanau_step_W_transposed", "bahdanau_step", _bahdanau_step_W_transposed,
    "the Bahdanau step with W s_{i−1} computed as W @ s_prev on data laid out for s_prev @ W",
    "The data is in the row layout, s_{i−1} W: W has one row per entry of the state. W @ s "
    "uses Wᵀ instead, so every score, weight and the context change.",
    "e = np.tanh(W @ s_prev + H @ U) @ v    # should be np.tanh(s_prev @ W + H @ U) @ v")


def _content_score_without_s_norm(s, H):
    s = as_float(s, "s")
    return content_score(s, H) * np.linalg.norm(s, axis=-1, keepdims=True)


add_twin(
    "content_score_without_s_norm", "content_score", _content_score_without_s_norm,
    "cosine scores divided only by ‖h_j‖, not by ‖s‖ (sᵀh_j / ‖h_j‖)",
    "cos(s, h_j) = sᵀh_j / (‖s‖ ‖h_j‖): both vectors are normalised, so every score lies in "
    "[−1, 1]. Leaving out ‖s‖ scales all scores by ‖s‖ (the ranking survives, the values not).",
    "H @ s / np.linalg.norm(H, axis=-1)      # should also divide by np.linalg.norm(s)")
