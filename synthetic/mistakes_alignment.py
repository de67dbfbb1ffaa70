"""Plausible mistakes in the alignment-score families (Bahdanau, the five score functions),
the multi-head shape family and the backward pass through attention."""

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


# --- multihead_shapes --------------------------------------------------------------------------

SHAPES = "multihead_shapes"


def _width(g):
    return g.number(r"d_\{\\text\{model\}\} = (\d+)")


def _heads(g):
    return g.number(r"\$h = (\d+)\$ heads")


def _batch(g, part):
    return g.number(r"\$B = (\d+)\$", part), g.number(r"\$L = (\d+)\$", part)


@mistake(SHAPES, "head_dim", "d_model itself: the split forgotten", accept=["split_heads_full_width"])
def shapes_head_dim_no_split(g):
    return _width(g)


@mistake(SHAPES, "head_dim", "d_model · h: multiplied instead of divided", accept=["split_heads_width_times_heads"])
def shapes_head_dim_times(g):
    return _width(g) * _heads(g)


@mistake(SHAPES, "q_shape", "(B, L, h, d_k): reshaped but not transposed",
         accept=["split_heads_no_swap"])
def shapes_q_not_transposed(g):
    B, L = _batch(g, "q_shape")
    return [B, L, _heads(g), _width(g) // _heads(g)]


@mistake(SHAPES, "q_shape", "(B, h, L, d_model): every head keeps the full width", accept=["split_heads_full_width"])
def shapes_q_full_width(g):
    B, L = _batch(g, "q_shape")
    return [B, _heads(g), L, _width(g)]


@mistake(SHAPES, "weights_shape", "(B, h, L, d_k): the weights given the queries' shape")
def shapes_weights_like_q(g):
    B, L = _batch(g, "q_shape")
    return [B, _heads(g), L, _width(g) // _heads(g)]


@mistake(SHAPES, "weights_shape", "(B, L, h, L): the head axis in the wrong place", accept=["split_heads_no_swap"])
def shapes_weights_head_axis(g):
    B, L = _batch(g, "q_shape")
    return [B, L, _heads(g), L]


@mistake(SHAPES, "params_bias", "4 d² only: the biases forgotten",
         accept=["mha_param_count_no_bias"])
def shapes_params_no_bias(g):
    return 4 * _width(g) ** 2


@mistake(SHAPES, "params_bias", "3 d² + 3 d: W_O and its bias forgotten",
         accept=["mha_param_count_no_output_projection"])
def shapes_params_no_output(g):
    d = _width(g)
    return 3 * d * d + 3 * d


@mistake(SHAPES, "params_bias", "every head with its own d×d W_Q, W_K, W_V",
         accept=["mha_param_count_per_head", "mha_param_count_full_width_heads"])
def shapes_params_full_heads(g):
    d, h = _width(g), _heads(g)
    return 3 * h * (d * d + d) + d * d + d


@mistake(SHAPES, "params_no_bias", "3 d²: W_O forgotten",
         accept=["mha_param_count_no_output_projection"])
def shapes_params_no_bias_no_output(g):
    return 3 * _width(g) ** 2


@mistake(SHAPES, "params_other_h", "the count scaled with the number of heads")
def shapes_params_scale_with_h(g):
    d, h = _width(g), _heads(g)
    other = g.number(r"\$h = (\d+)\$ head", "params_other_h")
    return (4 * d * d + 4 * d) * other // h


@mistake(SHAPES, "head_block", "reshaped straight to (h, 3, 2) without the transpose",
         accept=["mha_split_without_transpose", "split_heads_without_transpose"])
def shapes_block_no_transpose(g):
    h = g.x.shape[1] // 2
    return g.x.reshape(h, 3, 2)[g.number(r"head (\d+) works on", "head_block")]


@mistake(SHAPES, "head_block", "strided columns i, i + h instead of the block 2i:2i+2",
         accept=["split_heads_interleaved_columns"])
def shapes_block_strided(g):
    h = g.x.shape[1] // 2
    return g.x[:, g.number(r"head (\d+) works on", "head_block")::h]


@mistake(SHAPES, "merged", "reshaped straight to (3, 2h) without transposing back",
         accept=["mha_merge_without_transpose", "merge_heads_without_transpose"])
def shapes_merged_no_transpose(g):
    return g.heads.reshape(3, -1)


@mistake(SHAPES, "merged", "features interleaved: feature-major instead of head-major", accept=["merge_heads_interleaved"])
def shapes_merged_interleaved(g):
    return g.heads.transpose(1, 2, 0).reshape(3, -1)


# --- attention_gradient ------------------------------------------------------------------------

GRAD = "attention_gradient"


def _forward(g, Q=None, K=None):
    Q = g.Q if Q is None else Q
    K = g.K if K is None else K
    scale = 1 / np.sqrt(Q.shape[1])
    A = softmax(Q @ K.T * scale)
    return A, A @ g.V, scale


def _dS(g):
    A, _, _ = _forward(g)
    dA = g.dZ @ g.V.T
    return A * (dA - (A * dA).sum(axis=1, keepdims=True))


@mistake(GRAD, "dV", "dZᵀ A: the transpose on the wrong side", accept=["attention_backward_dv_transposed"])
def grad_dv_transposed(g):
    return g.dZ.T @ _forward(g)[0]


@mistake(GRAD, "dV", "the scores S instead of the weights A: Sᵀ dZ", accept=["attention_backward_dv_from_scores"])
def grad_dv_scores(g):
    return (g.Q @ g.K.T / np.sqrt(g.Q.shape[1])).T @ g.dZ


@mistake(GRAD, "dA", "V dZᵀ: the transpose of dA", accept=["attention_weights_backward_transposed"])
def grad_da_transposed(g):
    return g.V @ g.dZ.T


@mistake(GRAD, "dA", "dZ Vᵀ multiplied by A (the softmax's chain started too early)", accept=["attention_weights_backward_times_weights"])
def grad_da_times_a(g):
    return (g.dZ @ g.V.T) * _forward(g)[0]


@mistake(GRAD, "dS", "the Jacobian's diagonal only: dA·A(1 − A)", accept=["softmax_backward_diagonal_only"])
def grad_ds_diagonal(g):
    A = _forward(g)[0]
    return (g.dZ @ g.V.T) * A * (1 - A)


@mistake(GRAD, "dS", "the softmax skipped: dS = dA", accept=["softmax_backward_skipped"])
def grad_ds_skipped(g):
    return g.dZ @ g.V.T


@mistake(GRAD, "dS", "A ⊙ dA: the row-sum term forgotten",
         accept=["softmax_backward_no_sum_term"])
def grad_ds_no_row_term(g):
    return (g.dZ @ g.V.T) * _forward(g)[0]


@mistake(GRAD, "dS", "the 1/√d_k already multiplied in", accept=["attention_weights_backward_scaled"])
def grad_ds_scaled(g):
    return _dS(g) / np.sqrt(g.Q.shape[1])


@mistake(GRAD, "dQ", "dS K without the 1/√d_k", accept=["attention_backward_no_scale"])
def grad_dq_no_scale(g):
    return _dS(g) @ g.K


@mistake(GRAD, "dQ", "dS K / d_k instead of / √d_k", accept=["attention_backward_divide_by_d_k"])
def grad_dq_by_dk(g):
    return _dS(g) @ g.K / g.Q.shape[1]


@mistake(GRAD, "dQ", "dA K/√d_k: the softmax's backward skipped", accept=["attention_backward_softmax_skipped"])
def grad_dq_softmax_skipped(g):
    return (g.dZ @ g.V.T) @ g.K / np.sqrt(g.Q.shape[1])


@mistake(GRAD, "dK", "dSᵀ Q without the 1/√d_k", accept=["attention_backward_no_scale"])
def grad_dk_no_scale(g):
    return _dS(g).T @ g.Q


@mistake(GRAD, "dK", "dSᵀ Q / d_k instead of / √d_k", accept=["attention_backward_divide_by_d_k"])
def grad_dk_by_dk(g):
    return _dS(g).T @ g.Q / g.Q.shape[1]


@mistake(GRAD, "dK", "dAᵀ Q/√d_k: the softmax's backward skipped", accept=["attention_backward_softmax_skipped"])
def grad_dk_softmax_skipped(g):
    return (g.dZ @ g.V.T).T @ g.Q / np.sqrt(g.Q.shape[1])


def _loss_shifted(g, sign, on_keys=False):
    r, c = (g.number(r"E\[(\d+), \d+\] = 1", "grad_check"), g.number(r"E\[\d+, (\d+)\] = 1", "grad_check"))
    E = np.zeros_like(g.K if on_keys else g.Q)
    E[r, c] = 1.0
    if on_keys:
        return float(np.sum(_forward(g, K=g.K + sign * 1e-4 * E)[1] * g.dZ))
    return float(np.sum(_forward(g, Q=g.Q + sign * 1e-4 * E)[1] * g.dZ))


@mistake(GRAD, "grad_check", "a one-sided difference (ℓ(Q + εE) − ℓ(Q))/ε")
def grad_check_one_sided(g):
    return (_loss_shifted(g, +1) - float(np.sum(_forward(g)[1] * g.dZ))) / 1e-4


@mistake(GRAD, "grad_check", "the centred difference divided by ε instead of 2ε")
def grad_check_no_half(g):
    return (_loss_shifted(g, +1) - _loss_shifted(g, -1)) / 1e-4


@mistake(GRAD, "grad_check", "K perturbed instead of Q (with a tiny step)", accept=["gradient_check_on_keys"])
def grad_check_on_keys(g):
    return (_loss_shifted(g, +1, True) - _loss_shifted(g, -1, True)) / 2e-4
