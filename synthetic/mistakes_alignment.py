"""Plausible mistakes in the alignment-score families: Bahdanau's additive step, the five
score functions side by side, and which of them learn."""

from __future__ import annotations

import numpy as np

from .mistakes_base import choice_mistake, mistake, softmax

# --- bahdanau_step_by_hand ---------------------------------------------------------------------

BAH = "bahdanau_step_by_hand"


def _bah_scores(g, pre=None, act=np.tanh):
    pre = g.s_prev @ g.W + g.H @ g.U if pre is None else pre
    return act(pre) @ g.v


@mistake(BAH, "pre", "the decoder state forgotten: U h_j alone")
def bah_pre_without_state(g):
    return g.H @ g.U


@mistake(BAH, "scores", "the tanh taken after v: tanh(v · (s W + h U))", accept=["bahdanau_step_tanh_after_v"])
def bah_scores_tanh_outside(g):
    return np.tanh((g.s_prev @ g.W + g.H @ g.U) @ g.v)


@mistake(BAH, "scores", "no tanh: vᵀ(W s + U h)", accept=["bahdanau_step_no_tanh", "additive_score_no_tanh"])
def bah_scores_no_tanh(g):
    return _bah_scores(g, act=lambda x: x)


@mistake(BAH, "scores", "the decoder state left out: v · tanh(h_j U)",
         accept=["bahdanau_step_without_state"])
def bah_scores_without_state(g):
    return np.tanh(g.H @ g.U) @ g.v


@mistake(BAH, "scores", "the hidden units summed, v forgotten", accept=["bahdanau_step_no_v"])
def bah_scores_no_v(g):
    return np.tanh(g.s_prev @ g.W + g.H @ g.U).sum(axis=1)


@mistake(BAH, "scores", "a sigmoid in place of the tanh", accept=["bahdanau_step_sigmoid"])
def bah_scores_sigmoid(g):
    return _bah_scores(g, act=lambda x: 1 / (1 + np.exp(-x)))


@mistake(BAH, "weights", "the scores divided by √n_a first, as in dot-product attention", accept=["bahdanau_step_scaled_by_sqrt_n_a"])
def bah_weights_scaled(g):
    return softmax(_bah_scores(g) / np.sqrt(len(g.v)))


@mistake(BAH, "weights", "exp(e) not normalised",
         accept=["softmax_unnormalised", "bahdanau_step_exp_not_normalised"])
def bah_weights_not_normalised(g):
    return np.exp(_bah_scores(g))


@mistake(BAH, "weights", "softmax of the scores without the tanh", accept=["bahdanau_step_no_tanh"])
def bah_weights_no_tanh(g):
    return softmax(_bah_scores(g, act=lambda x: x))


@mistake(BAH, "weights", "the scores divided by their sum, no exp: e / Σ e",
         accept=["bahdanau_step_normalised_without_exp"])
def bah_weights_linear(g):
    e = _bah_scores(g)
    return e / e.sum()


@mistake(BAH, "weights", "softmax of the scores with the tanh taken after v",
         accept=["bahdanau_step_tanh_after_v"])
def bah_weights_tanh_outside(g):
    return softmax(np.tanh((g.s_prev @ g.W + g.H @ g.U) @ g.v))


@mistake(BAH, "weights", "softmax of scores that ignore the decoder state",
         accept=["bahdanau_step_without_state"])
def bah_weights_without_state(g):
    return softmax(np.tanh(g.H @ g.U) @ g.v)


@mistake(BAH, "context", "the raw scores e used as weights", accept=["bahdanau_step_unnormalised"])
def bah_context_raw_scores(g):
    return _bah_scores(g) @ g.H


@mistake(BAH, "context", "the projected states h_j U blended instead of the h_j", accept=["bahdanau_step_context_from_projected"])
def bah_context_projected(g):
    return softmax(_bah_scores(g)) @ (g.H @ g.U)


@mistake(BAH, "context", "the exponentials not normalised before the blend", accept=["bahdanau_step_exp_not_normalised"])
def bah_context_not_normalised(g):
    return np.exp(_bah_scores(g)) @ g.H


@mistake(BAH, "context", "the mean of the encoder states (uniform weights)", accept=["bahdanau_step_uniform_weights"])
def bah_context_uniform(g):
    return g.H.mean(axis=0)


@mistake(BAH, "context", "blended with e / Σ e: the scores normalised without exp",
         accept=["bahdanau_step_normalised_without_exp"])
def bah_context_linear(g):
    e = _bah_scores(g)
    return (e / e.sum()) @ g.H


@mistake(BAH, "context", "the context of sigmoid scores", accept=["bahdanau_step_sigmoid"])
def bah_context_sigmoid(g):
    return softmax(_bah_scores(g, act=lambda x: 1 / (1 + np.exp(-x)))) @ g.H


@mistake(BAH, "context", "the context of the scores without the tanh", accept=["bahdanau_step_no_tanh"])
def bah_context_no_tanh(g):
    return softmax((g.s_prev @ g.W + g.H @ g.U) @ g.v) @ g.H


# --- alignment_scores_side_by_side --------------------------------------------------------------

ALIGN = "alignment_scores_side_by_side"


def _dots(g):
    return g.H @ g.s


def _alpha(g):
    return softmax(_dots(g) / np.sqrt(len(g.s)))


@mistake(ALIGN, "scaled_dot", "divided by n instead of √n", accept=["sdpa_divide_by_d_k"])
def align_scaled_by_n(g):
    return _dots(g) / len(g.s)


@mistake(ALIGN, "scaled_dot", "divided by √3 (the number of encoder states)",
         accept=["sdpa_scale_by_sqrt_seq_len"])
def align_scaled_sqrt_states(g):
    return _dots(g) / np.sqrt(len(g.H))


@mistake(ALIGN, "scaled_dot", "multiplied by √n instead of divided",
         accept=["sdpa_multiply_by_sqrt_d_k"])
def align_scaled_times(g):
    return _dots(g) * np.sqrt(len(g.s))


@mistake(ALIGN, "general", "W_a transposed: h_j W_a s", accept=["general_score_W_transposed"])
def align_general_transposed(g):
    return g.H @ g.W_a @ g.s


@mistake(ALIGN, "general", "the W_a forgotten: the plain dot product", accept=["general_score_without_W"])
def align_general_no_matrix(g):
    return _dots(g)


@mistake(ALIGN, "additive", "no tanh", accept=["additive_score_no_tanh"])
def align_additive_no_tanh(g):
    return (g.s @ g.W + g.H @ g.U) @ g.v


@mistake(ALIGN, "additive", "W and U swapped: tanh(U s + W h)", accept=["additive_score_W_U_swapped"])
def align_additive_swapped(g):
    return np.tanh(g.s @ g.U + g.H @ g.W) @ g.v


@mistake(ALIGN, "additive", "the hidden units summed, v forgotten", accept=["additive_score_no_v"])
def align_additive_no_v(g):
    return np.tanh(g.s @ g.W + g.H @ g.U).sum(axis=1)


@mistake(ALIGN, "additive", "the tanh taken after v: tanh(v · (s W + h_j U))",
         accept=["additive_score_tanh_after_v"])
def align_additive_tanh_outside(g):
    return np.tanh((g.s @ g.W + g.H @ g.U) @ g.v)


@mistake(ALIGN, "additive", "a sigmoid in place of the tanh", accept=["additive_score_sigmoid"])
def align_additive_sigmoid(g):
    return (1 / (1 + np.exp(-(g.s @ g.W + g.H @ g.U)))) @ g.v


@mistake(ALIGN, "additive", "the decoder state left out: v · tanh(h_j U)",
         accept=["additive_score_without_state"])
def align_additive_without_state(g):
    return np.tanh(g.H @ g.U) @ g.v


@mistake(ALIGN, "content", "cosine without ‖s‖: s·h_j / ‖h_j‖",
         accept=["content_score_without_s_norm"])
def align_cosine_without_s_norm(g):
    return _dots(g) / np.linalg.norm(g.H, axis=1)


@mistake(ALIGN, "content", "cosine without ‖h_j‖: s·h_j / ‖s‖", accept=["content_score_without_h_norm"])
def align_cosine_without_h_norm(g):
    return _dots(g) / np.linalg.norm(g.s)


@mistake(ALIGN, "content", "divided by ‖s‖² instead of ‖s‖‖h_j‖", accept=["content_score_by_s_norm_squared"])
def align_cosine_by_s_squared(g):
    return _dots(g) / np.linalg.norm(g.s) ** 2


@mistake(ALIGN, "weights", "softmax of the unscaled dot products", accept=["sdpa_no_scale"])
def align_weights_no_scale(g):
    return softmax(_dots(g))


@mistake(ALIGN, "weights", "the exponentials not normalised",
         accept=["softmax_unnormalised", "sdpa_unnormalised"])
def align_weights_not_normalised(g):
    return np.exp(_dots(g) / np.sqrt(len(g.s)))


@mistake(ALIGN, "weights", "softmax of the dot products divided by n instead of √n",
         accept=["sdpa_divide_by_d_k"])
def align_weights_by_n(g):
    return softmax(_dots(g) / len(g.s))


@mistake(ALIGN, "weights", "softmax of the additive scores instead of the scaled dot products")
def align_weights_additive(g):
    return softmax(np.tanh(g.s @ g.W + g.H @ g.U) @ g.v)


@mistake(ALIGN, "context", "the weights applied to the columns of H (Hᵀ; n = 3 only)")
def align_context_transposed(g):
    return _alpha(g) @ g.H.T if g.H.shape[0] == g.H.shape[1] else None


@mistake(ALIGN, "context", "the scaled scores used as weights (no softmax)", accept=["sdpa_scaled_scores_as_weights"])
def align_context_raw(g):
    return (_dots(g) / np.sqrt(len(g.s))) @ g.H


@mistake(ALIGN, "context", "the context of the unscaled softmax", accept=["sdpa_no_scale"])
def align_context_no_scale(g):
    return softmax(_dots(g)) @ g.H


@mistake(ALIGN, "context", "the unscaled dot products used as weights", accept=["sdpa_raw_scores_as_weights"])
def align_context_raw_dots(g):
    return _dots(g) @ g.H


@mistake(ALIGN, "context", "the plain mean of the encoder states", accept=["sdpa_uniform_weights"])
def align_context_mean(g):
    return g.H.mean(axis=0)


@mistake(ALIGN, "context", "blended with exp of the scaled scores, not normalised",
         accept=["sdpa_unnormalised", "softmax_unnormalised"])
def align_context_not_normalised(g):
    return np.exp(_dots(g) / np.sqrt(len(g.s))) @ g.H


@mistake(ALIGN, "win_dot", "the winner counted from 0", accept=["winner_counted_from_zero"])
def align_win_dot_from_zero(g):
    return int(np.argmax(_dots(g)))


@mistake(ALIGN, "win_additive", "the winner of the additive score counted from 0", accept=["winner_counted_from_zero"])
def align_win_additive_from_zero(g):
    return int(np.argmax(np.tanh(g.s @ g.W + g.H @ g.U) @ g.v))


@mistake(ALIGN, "win_scaled", "the scaled dot product's winner counted from 0", accept=["winner_counted_from_zero"])
def align_win_scaled_from_zero(g):
    return int(np.argmax(_dots(g)))


# --- alignment_learnable (choice) ----------------------------------------------------------------

LEARN = "alignment_learnable"


@choice_mistake(LEARN, "which", "the scaled dot product's √n taken for a learned parameter, "
                "or location-based thought parameter-free")
def learnable_which_confused(g):
    return g.letter("which", "scaled dot product") or g.letter("which", "location-based")


@choice_mistake(LEARN, "needs_equal", "the general score thought to need equal sizes")
def learnable_general_needs_equal(g):
    return g.letter("needs_equal", "general")


@choice_mistake(LEARN, "needs_equal", "the additive score thought to need equal sizes")
def learnable_additive_needs_equal(g):
    return g.letter("needs_equal", "additive")


@choice_mistake(LEARN, "transformer", "the Transformer's score taken for Bahdanau's additive one")
def learnable_transformer_additive(g):
    return g.letter("transformer", "additive")


@choice_mistake(LEARN, "transformer", "the Transformer's score taken for the plain dot product")
def learnable_transformer_plain_dot(g):
    return g.letter("transformer", "dot product", exact=True)
